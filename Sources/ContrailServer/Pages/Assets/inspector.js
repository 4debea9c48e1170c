// The inspector: scopes with object counts and the session count (polled from /api/overview), and a
// live tree of one scope with the change sets flowing through it, through its own read-only session.
// An admin's session asks who made each change set (params {contrailOrigins: true}); a drag arrives
// as one row per object with a count; collections show a page of PAGE items at a time, so a scope of
// 10,000 objects renders as fast as a small one.
import { Client, Scope, pageToken, askForPageToken } from "/contrail.js";
import { mountTimeline } from "/inspector-timeline.js";

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
const PAGE = 100;      // items of a collection shown at first, and added by each "show more"
const shownItems = new Map();   // "uuid/key" → how many of its items are shown
let overviewDown = false;       // the last overview poll failed (the server is unreachable)
let clientStatus = null;
let lastRenderMs = 0;
const arrivals = [];   // [time, fragment count] of the last few seconds
const changes = [];    // the last change sets, newest first
let scope = null;
let client = null;
let flashes = new Set();
let timeline = null;   // the scope's history (inspector-timeline.js): while it shows a past point, the live tree waits

async function poll() {
  try {
    const response = await fetch("/api/overview", { cache: "no-store", headers: token ? { Authorization: `Bearer ${token}` } : {} });
    overviewDown = false;
    if (response.status === 401 || response.status === 403) {
      // Authentication is on: the overview needs an admin's token (asked once per page load).
      $("status").textContent = response.status === 401 ? "the overview needs a token" : "this token is not an admin's";
      $("status").className = "";
      clearInterval(polling);  // no point asking again every second
      if (!asked && !token) {  // a token that is not an admin's: say so, do not ask for another
        asked = true;
        if (askForPageToken("Contrail admin token (kept for this tab only):")) location.reload();
      }
      return;
    }
    if (!response.ok) throw new Error(`the server answered ${response.status}`);
    const overview = await response.json();
    $("sessions").textContent = overview.sessions;
    showStatus();
    const table = $("scopes");
    while (table.rows.length > 1) table.deleteRow(1);
    for (const s of overview.scopes) {
      const row = table.insertRow();
      row.className = "scope" + (scope?.name === s.name ? " chosen" : "");
      row.dataset.name = s.name;
      for (const value of [s.name, s.objects, s.subscribers]) row.insertCell().textContent = value;
      row.cells[0].title = s.name;
      row.addEventListener("click", () => { location.search = `?scope=${encodeURIComponent(s.name)}`; });
    }
    if (!scope && !chosenName && overview.scopes.length) choose(overview.scopes[0].name);
  } catch (error) {
    overviewDown = true;
    showStatus();
  }
}

/** The pill: the connection's state in words; an unreachable server says so, and that it retries. */
function showStatus() {
  const pill = $("status");
  if (overviewDown || clientStatus === "offline") {
    pill.textContent = "server unreachable · retrying";
    pill.className = "offline";
  } else if (clientStatus === "connecting") {
    pill.textContent = "connecting…";
    pill.className = "connecting";
  } else {
    pill.textContent = clientStatus ?? "online";
    pill.className = clientStatus ?? "online";
  }
}

function choose(name) {
  scope = new Scope(name);
  $("scope-title").textContent = `· ${name}`;
  $("scope-title").parentElement.title = name;
  client = new Client(wsURL, { params: { ...params, contrailOrigins: true } });
  client.on("status", (s) => { clientStatus = s; showStatus(); });
  scope.on("change", ({ model, key }) => { flashes.add(`${model.uuid}/${key}`); render(); });
  for (const type of ["attach", "detach", "state"]) scope.on(type, render);
  scope.on("changeset", ({ fragments, remote, state, origin }) => {
    if (!remote) return;
    if (!state) arrivals.push([performance.now(), fragments.length]);
    record({ at: new Date(), fragments, state, origin, count: 1 });
    renderChanges();
  });
  timeline = mountTimeline({ container: $("timeline"), tree: $("tree"), changes: $("changes"), name, token,
                             onLive: () => { render(); renderChanges(); } });
  client.fetch(scope).then(() => { render(); poll(); }, (error) => { $("tree").textContent = `fetch failed: ${error.message}`; });
}

/** Who made a change set: the user and session the server names, for an admin's inspector. */
function author(origin) {
  if (!origin) return "";
  if (origin.admin) return "admin import";
  const session = origin.session !== undefined ? `session ${origin.session}` : "";
  return origin.user ? `${origin.user} (${session})` : session;
}

/** The key under which consecutive change sets merge: the same author changing the same objects, values only. */
function coalesceKey(entry) {
  if (entry.state || !entry.fragments.every((f) => f.type === "change")) return null;
  return `${author(entry.origin)}|${entry.fragments.map((f) => f.uuid).sort().join(",")}`;
}

/** Adds a change set to the list, merged into the newest row when it continues it (a drag: one row per object, with a count). */
function record(entry) {
  const key = coalesceKey(entry);
  const newest = changes[0];
  if (key && newest && newest.key === key && entry.at - newest.at < 3000) {
    newest.count += 1;
    newest.at = entry.at;
    newest.fragments = newest.fragments.map((f) => {
      const later = entry.fragments.find((g) => g.uuid === f.uuid);
      return later ? { ...f, properties: { ...f.properties, ...later.properties } } : f;
    });
    return;
  }
  changes.unshift({ ...entry, key });
  changes.length = Math.min(changes.length, 50);
}

/** A 0xRRGGBBAA colour as `#rrggbb` (and alpha when not opaque). */
function hex(rgba) {
  const n = Number(rgba) >>> 0;
  const rgb = `#${(n >>> 8).toString(16).padStart(6, "0")}`;
  return (n & 255) === 255 ? rgb : `${rgb} α${((n & 255) / 255).toFixed(2)}`;
}

/** Whether `key` holds a colour (an integer in a property named like one). */
function isColour(key, value) { return /colou?r/i.test(key) && Number.isInteger(value); }

/** A property's value as nodes: colours as a swatch and hex, references as an arrow, others as JSON. */
function describe(key, value) {
  if (isColour(key, value)) {
    const chip = element("span", "swatch-chip");
    chip.style.background = `rgba(${value >>> 24}, ${(value >>> 16) & 255}, ${(value >>> 8) & 255}, ${((value & 255) / 255).toFixed(3)})`;
    return [chip, hex(value)];
  }
  if (value === null || value === undefined) return ["null"];
  if (typeof value === "string" && scope.object(value)) return [`→ ${value.slice(0, 8)}`];
  return [JSON.stringify(value)];
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
    line.append(element("span", "key", key), ": ", ...(Array.isArray(value) ? [`[${value.length}]`] : describe(key, value)));
    line.title = line.textContent;
    details.append(line);
    const children = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
    // A long collection shows a page at a time: the tree stays small whatever the scope holds.
    const shown = shownItems.get(line.dataset.key) ?? PAGE;
    for (const id of children.slice(0, shown)) {
      const child = scope.object(id);
      if (child && !seen.has(id)) details.append(node(child, depth + 1, seen));
    }
    if (children.length > shown) {
      const more = element("button", "more", `show ${Math.min(PAGE, children.length - shown)} more (${children.length - shown} not shown)`);
      more.dataset.key = line.dataset.key;
      more.addEventListener("click", () => { shownItems.set(more.dataset.key, shown + PAGE); render(); });
      details.append(more);
    }
  }
  details.addEventListener("toggle", () => openState.set(model.uuid, details.open));
  return details;
}

const openState = new Map();
let frame = 0;
function render() {
  if (frame || !scope || timeline?.viewing) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const started = performance.now();
    const tree = $("tree");
    tree.className = "";
    tree.replaceChildren(node(scope.root, 0, new Set()));
    flashes = new Set();
    lastRenderMs = performance.now() - started;
  });
}

function renderChanges() {
  if (timeline?.viewing) return;
  const list = $("changes");
  list.className = "";
  list.replaceChildren(...changes.map(({ at, fragments, state, origin, count }) => {
    const entry = element("div", "changeset");
    const size = `${fragments.length} fragment${fragments.length === 1 ? "" : "s"}`;
    entry.append(element("time", "", at.toLocaleTimeString()));
    const who = author(origin);
    if (who) entry.append(element("span", "who", who));
    entry.append(state ? `full state, ${size}` : size);
    if (count > 1) entry.append(element("span", "count", `×${count}`));
    for (const f of fragments.slice(0, 20)) {
      const line = element("div", "fragment", `${f.type} ${f.clsName} ${f.uuid.slice(0, 8)}`);
      for (const [key, value] of Object.entries(f.properties ?? {})) {
        line.append(" ", element("span", "key", key), ": ", ...(Array.isArray(value) ? [`[${value.length}]`] : describe(key, value)));
      }
      entry.append(line);
    }
    if (fragments.length > 20) entry.append(element("div", "fragment", `… ${fragments.length - 20} more`));
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
window.contrailInspector = { get scope() { return scope; }, get client() { return client; }, get lastRenderMs() { return lastRenderMs; } };