// The canvas demo's list of shapes by colour: a live query (contrail-query.js) over the demo's scope,
// drawn beside the canvas and kept in step by the query's change events (rows are removed, inserted,
// moved and updated as a list view's batch update would, not rebuilt).
import "/contrail-query.js";

const demo = window.contrailDemo;
const shapeClass = new URLSearchParams(location.search).get("shapeClass") || "Shape";
const query = demo.scope.query(shapeClass, () => true, ["color", "x", "y"]);

const aside = document.createElement("aside");
aside.id = "shape-list";
aside.style.cssText = "display: inline-block; vertical-align: top; margin-left: 12px; width: 190px; max-height: 480px;"
  + " overflow: auto; background: #fff; border: 1px solid #ccd; border-radius: 6px; padding: 6px 10px; font-size: 12px;";
const heading = document.createElement("b");
const list = document.createElement("ol");
list.style.cssText = "margin: 6px 0 0; padding-left: 20px;";
aside.append(heading, list);
document.getElementById("canvas").after(aside);   // beside the canvas, or below it in a narrow window

/** `rgba(…)` of a 0xRRGGBBAA wire colour. */
function css(rgba) {
  const n = Number(rgba ?? 0xff0000ff) >>> 0;
  return `rgba(${n >>> 24}, ${(n >>> 16) & 255}, ${(n >>> 8) & 255}, ${((n & 255) / 255).toFixed(3)})`;
}

function render(row, shape) {
  const p = shape.properties;
  row.innerHTML = "";
  const swatch = document.createElement("span");
  swatch.style.cssText = `display: inline-block; width: 10px; height: 10px; margin-right: 6px; background: ${css(p.color)}`;
  row.append(swatch, `${Math.round(p.x ?? 0)}, ${Math.round(p.y ?? 0)}`);
  row.dataset.uuid = shape.uuid;
}

let rows = query.items.map((shape) => { const row = document.createElement("li"); render(row, shape); return row; });
list.replaceChildren(...rows);
heading.textContent = `Shapes by colour (${query.totalCount})`;

query.on("change", (changes) => {
  const items = query.items;
  const removed = new Set(changes.removed), sources = new Set(changes.moved.map((m) => m.from));
  const next = new Array(changes.newCount).fill(null);
  for (const index of changes.inserted) next[index] = document.createElement("li");
  for (const move of changes.moved) next[move.to] = rows[move.from];
  const staying = rows.filter((_, index) => !removed.has(index) && !sources.has(index));
  for (let index = 0; index < next.length; index++) if (!next[index]) next[index] = staying.shift();
  const touched = new Set([...changes.inserted, ...changes.moved.map((m) => m.to)]);
  const updatedOld = new Set(changes.updated);
  rows.forEach((row, index) => { if (updatedOld.has(index)) row.dataset.updated = "1"; });
  next.forEach((row, index) => {
    if (touched.has(index) || row.dataset.updated) { delete row.dataset.updated; render(row, items[index]); }
  });
  rows = next;
  list.replaceChildren(...rows);
  heading.textContent = `Shapes by colour (${query.totalCount})`;
});

// For tests and the console: the rows' uuids in order, and the query.
window.contrailDemoList = { query, uuids: () => rows.map((row) => row.dataset.uuid) };
