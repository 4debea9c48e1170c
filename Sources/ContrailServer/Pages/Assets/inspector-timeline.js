// The inspector's timeline (Protocol §8.26): a scope's history from the server, a slider to scrub to
// any point it keeps, and the tree as it was there with the change sets that led to it. It reads
// /api/overview/scopes/NAME/history and /api/overview/scopes/NAME/at/SEQ with the page's admin token
// as a bearer credential (the token stays in the tab: never in a URL, the page or a log). Importable
// by Node too: nothing here touches the DOM until mountTimeline is called.

/** The history route of scope `name`. */
export const historyPath = (name) => `/api/overview/scopes/${encodeURIComponent(name)}/history`;
/** The route of scope `name`'s state after change set `seq`. */
export const statePath = (name, seq) => `/api/overview/scopes/${encodeURIComponent(name)}/at/${Number(seq)}`;

/** GETs JSON from `base` + `path` with `token` (if any) as a bearer credential; throws with the server's error. */
export async function getJSON(base, path, token) {
  const response = await fetch(base + path, { cache: "no-store", headers: token ? { Authorization: `Bearer ${token}` } : {} });
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) {
    const error = new Error(body?.error ?? `the server answered ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

/** `{scope, oldest, latest, entries: [{seq, time, user, fragments}], revisions: [{label, seq, time, user}]}`. */
export const loadHistory = (base, name, token) => getJSON(base, historyPath(name), token);

/** `{seq, state: {root, objects}}`: the scope after change set `seq`. */
export const stateAt = (base, name, seq, token) => getJSON(base, statePath(name, seq), token);

/** The change sets that led to `seq` (at most `limit`), newest first. */
export function leadingTo(history, seq, limit = 50) {
  return history.entries.filter((entry) => entry.seq <= seq).slice(-limit).reverse();
}

/** The revisions marked at `seq`. */
export const revisionsAt = (history, seq) => history.revisions.filter((revision) => revision.seq === seq);

/** A state `{root, objects}` as lines, pre-order from the root: `Class uuid8 {key: value, …}`, indented by depth. */
export function treeLines(state) {
  const lines = [];
  const seen = new Set();
  const visit = (uuid, depth) => {
    const object = state.objects[uuid];
    if (!object || seen.has(uuid)) return;
    seen.add(uuid);
    const keys = Object.keys(object.properties).sort();
    const values = keys.map((key) => `${key}: ${JSON.stringify(object.properties[key])}`).join(", ");
    lines.push(`${"  ".repeat(depth)}${object.clsName} ${uuid.slice(0, 8)} {${values}}`);
    for (const key of keys) {
      const value = object.properties[key];
      for (const child of Array.isArray(value) ? value : [value]) if (typeof child === "string" && state.objects[child]) visit(child, depth + 1);
    }
  };
  visit(state.root, 0);
  return lines;
}

const element = (tag, className, text) => {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
};

/** The tree of a past state, in the live tree's markup (read-only, every node open). */
function pastTree(state) {
  const seen = new Set();
  const visit = (uuid) => {
    const object = state.objects[uuid];
    const details = element("details");
    details.open = true;
    const summary = element("summary");
    summary.append(element("span", "cls", object.clsName), ` ${uuid.slice(0, 8)}`);
    details.append(summary);
    seen.add(uuid);
    for (const key of Object.keys(object.properties).sort()) {
      const value = object.properties[key];
      const line = element("div", "prop");
      line.append(element("span", "key", key), ": ", Array.isArray(value) ? `[${value.length}]` : JSON.stringify(value));
      details.append(line);
      for (const child of Array.isArray(value) ? value : [value]) {
        if (typeof child === "string" && state.objects[child] && !seen.has(child)) details.append(visit(child));
      }
    }
    return details;
  };
  return state.objects[state.root] ? visit(state.root) : element("div", "empty", "empty scope");
}

/**
 * Mounts the timeline of scope `name` into `container`: a slider from the oldest point kept to the
 * latest, and under it the change sets that led to the chosen point. Scrubbed back, `tree` shows
 * the state there (the returned object's `viewing` is true, so the live tree leaves it alone);
 * at the end of the slider the live tree comes back through `onLive`. The history is read when the
 * timeline mounts and again each time the slider is taken or "live" is clicked (reading it costs the
 * server the whole history kept, so it is not polled).
 */
export function mountTimeline({ container, tree, changes, name, token, onLive }) {
  const base = "";
  const slider = element("input");
  slider.type = "range";
  slider.min = "0";
  slider.max = "0";
  slider.disabled = true;
  const label = element("span", "point", "history…");
  const live = element("button", "more", "live");
  live.title = "back to the live tree (and read the history again)";
  container.replaceChildren(slider, label, live);
  const timeline = { viewing: false, history: null, shown: null };
  let request = 0;

  const showLive = () => {
    timeline.viewing = false;
    timeline.shown = null;
    slider.value = slider.max;
    label.textContent = timeline.history ? `live · change set ${timeline.history.latest}` : "live";
    onLive?.();
  };
  const showPoint = async (seq) => {
    const mine = ++request;
    let answer;
    try { answer = await stateAt(base, name, seq, token); } catch (error) { label.textContent = error.message; return; }
    if (mine !== request) return;   // a later scrub won
    timeline.viewing = true;
    timeline.shown = answer.seq;
    const marks = revisionsAt(timeline.history, answer.seq).map((revision) => ` · revision ${revision.label}`).join("");
    label.textContent = `after change set ${answer.seq} of ${timeline.history.latest}${marks}`;
    tree.className = "";
    tree.replaceChildren(pastTree(answer.state));
    changes.className = "";
    changes.replaceChildren(...leadingTo(timeline.history, answer.seq).map((entry) => {
      const row = element("div", "changeset");
      row.append(element("time", "", entry.time ? new Date(entry.time).toLocaleString() : "–"));
      if (entry.user) row.append(element("span", "who", entry.user));
      row.append(`#${entry.seq} · ${entry.fragments.length} fragment${entry.fragments.length === 1 ? "" : "s"}`);
      for (const f of entry.fragments.slice(0, 20)) {
        row.append(element("div", "fragment", `${f.type} ${f.clsName} ${f.uuid.slice(0, 8)} ${JSON.stringify(f.properties ?? {})}`));
      }
      return row;
    }));
  };
  const refresh = async () => {
    try {
      timeline.history = await loadHistory(base, name, token);
    } catch (error) {
      label.textContent = error.status === 409 ? "no history: the server keeps none (in memory)" : `history: ${error.message}`;
      return;
    }
    slider.min = String(timeline.history.oldest);
    slider.max = String(timeline.history.latest);
    slider.disabled = false;
    if (!timeline.viewing) showLive();
  };
  slider.addEventListener("input", () => {
    const seq = Number(slider.value);
    if (seq >= Number(slider.max)) showLive(); else showPoint(seq);
  });
  slider.addEventListener("pointerdown", () => { if (!timeline.viewing) refresh(); });
  slider.addEventListener("focus", () => { if (!timeline.viewing) refresh(); });
  live.addEventListener("click", () => { refresh(); showLive(); });
  refresh();
  timeline.showPoint = showPoint;
  timeline.refresh = refresh;
  return timeline;
}
