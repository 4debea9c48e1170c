// The inspector: scopes with object counts and the session count (polled from /api/overview), and a
// live tree of one scope with the change sets flowing through it, through its own read-only session.
import { Client, Scope, pageToken, askForPageToken } from "/contrail.js";

const query = new URLSearchParams(location.search);
const token = pageToken();
const params = token ? { token } : {};
let asked = false;
const wsURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`;
const chosenName = query.get("scope");
const $ = (id) => document.getElementById(id);
const element = (tag, className, text) => {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
};
const arrivals = [];   // [time, fragment count] of the last few seconds
const changes = [];    // the last change sets, newest first
let scope = null;
let client = null;
let flashes = new Set();

async function poll() {
  try {
    const response = await fetch("/api/overview", { cache: "no-store", headers: token ? { Authorization: `Bearer ${token}` } : {} });
    if (response.status === 401 || response.status === 403) {
      // Authentication is on: the overview needs an admin's token (asked once per page load).
      $("status").textContent = response.status === 401 ? "the overview needs a token" : "this token is not an admin's";
      clearInterval(polling);  // no point asking again every second
      if (!asked && !token) {  // a token that is not an admin's: say so, do not ask for another
        asked = true;
        if (askForPageToken("Contrail admin token (kept for this tab only):")) location.reload();
      }
      return;
    }
    const overview = await response.json();
    $("sessions").textContent = overview.sessions;
    const table = $("scopes");
    while (table.rows.length > 1) table.deleteRow(1);
    for (const s of overview.scopes) {
      const row = table.insertRow();
      row.className = "scope" + (scope?.name === s.name ? " chosen" : "");
      row.dataset.name = s.name;
      for (const value of [s.name, s.objects, s.subscribers]) row.insertCell().textContent = value;
      row.addEventListener("click", () => { location.search = `?scope=${encodeURIComponent(s.name)}`; });
    }
    if (!scope && !chosenName && overview.scopes.length) choose(overview.scopes[0].name);
  } catch (error) {
    $("status").textContent = `overview failed: ${error.message}`;
  }
}

function choose(name) {
  scope = new Scope(name);
  $("scope-title").textContent = `· ${name}`;
  client = new Client(wsURL, { params });
  client.on("status", (s) => { $("status").textContent = s; $("status").className = s; });
  scope.on("change", ({ model, key }) => { flashes.add(`${model.uuid}/${key}`); render(); });
  for (const type of ["attach", "detach", "state"]) scope.on(type, render);
  scope.on("changeset", ({ fragments, remote, state }) => {
    if (!remote) return;
    if (!state) arrivals.push([performance.now(), fragments.length]);
    changes.unshift({ at: new Date(), fragments, state });
    changes.length = Math.min(changes.length, 50);
    renderChanges();
  });
  client.fetch(scope).then(() => { render(); poll(); }, (error) => { $("tree").textContent = `fetch failed: ${error.message}`; });
}

function describe(value) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string" && scope.object(value)) return `→ ${value.slice(0, 8)}`;
  return JSON.stringify(value);
}

function node(model, depth, seen) {
  const details = element("details");
  details.open = openState.get(model.uuid) ?? depth < 2;
  details.dataset.uuid = model.uuid;
  const summary = element("summary");
  summary.append(element("span", "cls", model.clsName), ` ${model.uuid.slice(0, 8)}`);
  details.append(summary);
  seen.add(model.uuid);
  for (const key of Object.keys(model.properties).sort()) {
    const value = model.properties[key];
    const line = element("div", "prop");
    line.dataset.key = `${model.uuid}/${key}`;
    if (flashes.has(line.dataset.key)) line.classList.add("flash");
    line.append(element("span", "key", key), `: ${Array.isArray(value) ? `[${value.length}]` : describe(value)}`);
    details.append(line);
    const children = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
    for (const id of children) {
      const child = scope.object(id);
      if (child && !seen.has(id)) details.append(node(child, depth + 1, seen));
    }
  }
  details.addEventListener("toggle", () => openState.set(model.uuid, details.open));
  return details;
}

const openState = new Map();
let frame = 0;
function render() {
  if (frame || !scope) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const tree = $("tree");
    tree.className = "";
    tree.replaceChildren(node(scope.root, 0, new Set()));
    flashes = new Set();
  });
}

function renderChanges() {
  const list = $("changes");
  list.className = "";
  list.replaceChildren(...changes.map(({ at, fragments, state }) => {
    const entry = element("div", "changeset");
    const count = `${fragments.length} fragment${fragments.length === 1 ? "" : "s"}`;
    entry.append(element("time", "", at.toLocaleTimeString()), state ? `full state, ${count}` : count);
    for (const f of fragments) {
      entry.append(element("div", "fragment", `${f.type} ${f.clsName} ${f.uuid.slice(0, 8)} ${JSON.stringify(f.properties)}`));
    }
    return entry;
  }));
}

setInterval(() => {
  const now = performance.now();
  while (arrivals.length && now - arrivals[0][0] > 1000) arrivals.shift();
  $("rate").textContent = arrivals.reduce((sum, [, n]) => sum + n, 0);
}, 250);
const polling = setInterval(poll, 1000);
poll();
if (chosenName) choose(chosenName);
// For tests and the console.
window.contrailInspector = { get scope() { return scope; }, get client() { return client; } };