// The canvas demo: scope "Canvas" (or ?scope=NAME) holding a Canvas root with a `shapes` collection
// of Shape {x, y, width, height, color}, the model of the README and the Playground. Apps whose model
// classes are named otherwise pass ?canvasClass=NAME&shapeClass=NAME.
import { Client, Scope, pageToken } from "/contrail.js";
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
    for (const shape of shapes()) {
      const p = shape.properties;
      context.fillStyle = css(p.color);
      context.fillRect(p.x ?? 0, p.y ?? 0, p.width ?? 100, p.height ?? 100);
      if (shape === selected) {
        context.strokeStyle = "#1f2430";
        context.lineWidth = 3;
        context.strokeRect((p.x ?? 0) - 2, (p.y ?? 0) - 2, (p.width ?? 100) + 4, (p.height ?? 100) + 4);
      }
    }
  });
}

function shapeAt(x, y) {
  return shapes().reverse().find((s) => {
    const p = s.properties;
    return x >= p.x && x <= p.x + (p.width ?? 100) && y >= p.y && y <= p.y + (p.height ?? 100);
  }) ?? null;
}

/** Adds a shape (as one change set) and returns it; used by the toolbar and by tests. */
function addShape({ x, y, width = 100, height = 100, color } = {}) {
  let shape;
  scope.modify(() => {
    shape = scope.create(shapeClass, {
      x: x ?? Math.round(20 + Math.random() * (canvas.width - 140)),
      y: y ?? Math.round(20 + Math.random() * (canvas.height - 140)),
      width, height, color: color ?? PALETTE[Math.floor(Math.random() * PALETTE.length)],
    });
    scope.root.insert("shapes", shape);
  });
  selected = shape;
  draw();
  return shape;
}

function point(event) {
  const r = canvas.getBoundingClientRect();
  return { x: (event.clientX - r.left) * (canvas.width / r.width), y: (event.clientY - r.top) * (canvas.height / r.height) };
}

canvas.addEventListener("pointerdown", (event) => {
  const { x, y } = point(event);
  selected = shapeAt(x, y);
  if (selected) {
    drag = { dx: x - selected.properties.x, dy: y - selected.properties.y };
    canvas.setPointerCapture(event.pointerId);
  }
  draw();
});
canvas.addEventListener("pointermove", (event) => {
  if (!drag || !selected) return;
  const { x, y } = point(event);
  selected.set("x", Math.round(x - drag.dx));
  selected.set("y", Math.round(y - drag.dy));
});
canvas.addEventListener("pointerup", () => { drag = null; });

document.getElementById("add").addEventListener("click", () => addShape());
document.getElementById("delete").addEventListener("click", () => {
  if (selected) scope.modify(() => scope.root.remove("shapes", selected));
  selected = null;
});
const palette = document.getElementById("palette");
for (const color of PALETTE) {
  const swatch = document.createElement("button");
  swatch.className = "swatch";
  swatch.style.background = css(color);
  swatch.title = "colour the selected shape";
  swatch.addEventListener("click", () => selected?.set("color", color));
  palette.append(swatch);
}

const status = document.getElementById("status");
client.on("status", (s) => { status.textContent = s; status.className = s; });
for (const type of ["change", "attach", "detach", "state"]) scope.on(type, draw);
scope.on("detach", ({ model }) => { if (model === selected) selected = null; });

attachCaption(scope);  // the shared caption under the canvas (demo-caption.js)
const ready = client.fetch(scope).then(() => { draw(); return true; });
let fetched = false;
ready.then(() => { fetched = true; });
ready.catch((error) => { status.textContent = `error: ${error.message}`; });
// For tests and the console: drive the demo and read its state.
window.contrailDemo = { client, scope, ready, get fetched() { return fetched; }, addShape, state: () => JSON.stringify(scope.stateJSON()) };