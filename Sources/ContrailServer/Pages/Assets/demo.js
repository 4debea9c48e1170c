// The canvas demo: scope "Canvas" (or ?scope=NAME) holding a Canvas root with a `shapes` collection
// of Shape {x, y, width, height, color}, the model of the README and the Playground. Apps whose model
// classes are named otherwise pass ?canvasClass=NAME&shapeClass=NAME.
//
// Other modules extend the page through `demo` (import { demo } from "/demo.js"): its client, scope,
// canvas and selection, `demo.onDraw(fn)` to paint over the shapes (fn gets the 2D context, after
// every redraw) and `demo.onSelect(fn)` to follow the selection.
import { Client, Scope, pageToken } from "/contrail.js";
import { showPresence } from "/demo-presence.js";
import { ScopeStore } from "/contrail-store.js";
import { attachCaption } from "/demo-caption.js";

const PALETTE = [0xe74c3cff, 0x3498dbff, 0x2ecc71ff, 0xf1c40fff, 0x9b59b6ff, 0x1f2430ff];
const query = new URLSearchParams(location.search);
const scopeName = query.get("scope") || "Canvas";
const shapeClass = query.get("shapeClass") || "Shape";
const wsURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`;
const token = pageToken();
const client = new Client(wsURL, { params: token ? { token } : {} });
const scope = new Scope(scopeName, { rootClass: query.get("canvasClass") || "Canvas", changeInterval: 16 });
const canvas = document.getElementById("canvas");
const context = canvas.getContext("2d");
const drawHooks = [];
const selectHooks = [];
let selected = null;
let drag = null;

document.getElementById("scope-name").textContent = scopeName;

/** `#rrggbb` and alpha of a 0xRRGGBBAA wire colour. */
function css(rgba) {
  const n = Number(rgba ?? 0xff0000ff) >>> 0;
  return `rgba(${n >>> 24}, ${(n >>> 16) & 255}, ${(n >>> 8) & 255}, ${((n & 255) / 255).toFixed(3)})`;
}

function shapes() { return scope.root.items("shapes"); }

let frame = 0;
function draw() {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    context.fillStyle = "#ffffff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    const all = shapes();
    for (const shape of all) {
      const p = shape.properties;
      context.fillStyle = css(p.color);
      context.fillRect(p.x ?? 0, p.y ?? 0, p.width ?? 100, p.height ?? 100);
      if (shape === selected) {
        context.strokeStyle = "#1f2430";
        context.lineWidth = 3;
        context.strokeRect((p.x ?? 0) - 2, (p.y ?? 0) - 2, (p.width ?? 100) + 4, (p.height ?? 100) + 4);
      }
    }
    document.getElementById("empty-hint").hidden = !fetched || all.length > 0;
    for (const hook of drawHooks) hook(context);
    others.draw(context);
  });
}

function shapeAt(x, y) {
  return shapes().reverse().find((s) => {
    const p = s.properties;
    return x >= p.x && x <= p.x + (p.width ?? 100) && y >= p.y && y <= p.y + (p.height ?? 100);
  }) ?? null;
}

/** `x`, `y` moved so that a shape of `width` × `height` there stays on the canvas. */
function clamp(x, y, width = 100, height = 100) {
  return {
    x: Math.round(Math.min(Math.max(0, x), Math.max(0, canvas.width - width))),
    y: Math.round(Math.min(Math.max(0, y), Math.max(0, canvas.height - height))),
  };
}

/** Makes `shape` (or nothing) the selection: the Delete button and the current colour follow it. */
function select(shape) {
  selected = shape ?? null;
  document.getElementById("delete").disabled = !selected;
  showCurrentColour();
  for (const hook of selectHooks) hook(selected);
  draw();
}

function showCurrentColour() {
  const color = selected?.properties.color;
  const current = document.getElementById("current-colour");
  current.classList.toggle("none", color === undefined);
  current.style.background = color === undefined ? "" : css(color);
  current.title = color === undefined ? "colour of the selected shape (none selected)" : "colour of the selected shape";
  for (const swatch of palette.children) swatch.classList.toggle("current", Number(swatch.dataset.color) === color);
}

/** Adds a shape (as one change set) and returns it; used by the toolbar and by tests. */
function addShape({ x, y, width = 100, height = 100, color } = {}) {
  let shape;
  scope.modify(() => {
    shape = scope.create(shapeClass, {
      x: x ?? Math.round(20 + Math.random() * Math.max(0, canvas.width - 140)),
      y: y ?? Math.round(20 + Math.random() * Math.max(0, canvas.height - 140)),
      width, height, color: color ?? PALETTE[Math.floor(Math.random() * PALETTE.length)],
    });
    scope.root.insert("shapes", shape);
  });
  select(shape);
  return shape;
}

/** Deletes the selected shape, if any. */
function deleteSelected() {
  if (selected) scope.modify(() => scope.root.remove("shapes", selected));
  select(null);
}

function point(event) {
  const r = canvas.getBoundingClientRect();
  return { x: (event.clientX - r.left) * (canvas.width / r.width), y: (event.clientY - r.top) * (canvas.height / r.height) };
}

canvas.addEventListener("pointerdown", (event) => {
  const { x, y } = point(event);
  select(shapeAt(x, y));
  if (selected) {
    drag = { dx: x - selected.properties.x, dy: y - selected.properties.y };
    canvas.setPointerCapture(event.pointerId);
  }
});
canvas.addEventListener("pointermove", (event) => {
  if (!drag || !selected) return;
  const { x, y } = point(event);
  const p = selected.properties;
  const moved = clamp(x - drag.dx, y - drag.dy, p.width ?? 100, p.height ?? 100);
  selected.set("x", moved.x);
  selected.set("y", moved.y);
});
canvas.addEventListener("pointerup", () => { drag = null; });

document.getElementById("add").addEventListener("click", () => addShape());
document.getElementById("delete").addEventListener("click", deleteSelected);
document.addEventListener("keydown", (event) => {
  if ((event.key === "Delete" || event.key === "Backspace") && !event.target.closest?.("input, textarea, [contenteditable]")) {
    event.preventDefault();
    deleteSelected();
  }
});
const palette = document.getElementById("palette");
for (const color of PALETTE) {
  const swatch = document.createElement("button");
  swatch.className = "swatch";
  swatch.dataset.color = color;
  swatch.style.background = css(color);
  swatch.title = "colour the selected shape";
  swatch.addEventListener("click", () => { selected?.set("color", color); showCurrentColour(); });
  palette.append(swatch);
}

// The canvas fills its stage and follows the window; shapes stay where they are.
const stage = document.getElementById("stage");
new ResizeObserver(() => {
  const width = Math.max(320, Math.floor(stage.clientWidth)), height = Math.max(240, Math.floor(stage.clientHeight));
  if (canvas.width === width && canvas.height === height) return;
  canvas.width = width;
  canvas.height = height;
  frame = 0;
  draw();
}).observe(stage);
// Every other window's pointer and selected shape, with its name (demo-presence.js).
const others = showPresence({ client, scope, canvas, point, selected: () => selected, redraw: draw });

const status = document.getElementById("status");
client.on("status", (s) => { status.textContent = s; status.className = s; });
for (const type of ["change", "attach", "detach", "state"]) scope.on(type, draw);
scope.on("detach", ({ model }) => { if (model === selected) select(null); });
scope.on("change", ({ model, key }) => { if (model === selected && key === "color") showCurrentColour(); });

/** Shows what went wrong beside the canvas (never in the connection pill). */
function showError(message) {
  const error = document.getElementById("error");
  error.textContent = message;
  error.hidden = false;
}

// The canvas is kept in this browser (IndexedDB, contrail-store.js): shapes drawn offline are shown and
// sent after a reload. ?persist=0 keeps them in memory only. A store that cannot be used is said below
// the canvas; the demo then goes on without it.
const storeNote = Object.assign(document.createElement("p"), { className: "hint", id: "store-status" });
document.querySelector("main").append(storeNote);
let store = null, storeError = null;
const reportStore = (error) => { storeError = error; storeNote.textContent = `not kept in this browser: ${error.message}`; };
const stored = query.get("persist") === "0" ? Promise.resolve()
  : ScopeStore.open(scope, { onError: reportStore }).then((opened) => { store = opened; draw(); }, reportStore);

attachCaption(scope);  // the shared caption under the canvas (demo-caption.js)
let fetched = false;
const ready = stored.then(() => client.fetch(scope)).then(() => { fetched = true; draw(); return true; });
ready.catch((error) => { showError(`Scope '${scopeName.length > 80 ? scopeName.slice(0, 80) + "…" : scopeName}' could not be opened: ${error.message}`); });

/** What other modules extend the page through. */
export const demo = {
  client, scope, canvas, context, addShape, deleteSelected, select, redraw: draw,
  get selected() { return selected; },
  onDraw(hook) { drawHooks.push(hook); draw(); },
  onSelect(hook) { selectHooks.push(hook); },
};
// For tests and the console: drive the demo and read its state.
window.contrailDemo = { client, scope, ready, stored, presence: others.presence, get fetched() { return fetched; },
                        get store() { return store; }, get storeError() { return storeError; },
                        addShape, state: () => JSON.stringify(scope.stateJSON()), demo };
