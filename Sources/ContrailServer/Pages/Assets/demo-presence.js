// The canvas demo's presence layer (Protocol §8.20): this window publishes its name, colour, pointer
// and selected shape; every other participant's pointer and selection are drawn over the canvas with
// their name. ?name=NAME sets this window's name (default "Guest N"). demo.js calls `showPresence`
// once and `layer.draw(context)` at the end of each frame.
import { presence } from "./contrail-presence.js";

const COLOURS = ["#e67e22", "#8e44ad", "#16a085", "#c0392b", "#2980b9", "#d35400"];

/** Starts publishing and returns {presence, draw}: `draw(context)` paints the others over a frame. */
export function showPresence({ client, scope, canvas, point, selected, redraw }) {
  const here = presence(client, scope);
  const query = new URLSearchParams(location.search);
  const name = query.get("name") || `Guest ${Math.floor(100 + Math.random() * 900)}`;
  const colour = COLOURS[Math.floor(Math.random() * COLOURS.length)];
  let pointer = null;
  let lastSelected;

  const publish = () => {
    lastSelected = selected()?.uuid ?? null;
    here.publish({ name, color: colour, pointer, selected: lastSelected });
  };
  canvas.addEventListener("pointermove", (event) => {
    const { x, y } = point(event);
    pointer = [Math.round(x), Math.round(y)];
    publish();
  });
  canvas.addEventListener("pointerleave", () => { pointer = null; publish(); });
  for (const type of ["join", "change", "leave"]) here.on(type, redraw);
  publish();

  function draw(context) {
    if ((selected()?.uuid ?? null) !== lastSelected) publish();   // a selection made by a click, an add or a delete
    for (const { user, id, value } of here.peers.values()) {
      if (!value || typeof value !== "object") continue;
      const label = String(value.name ?? user ?? id.slice(0, 8)).slice(0, 40);
      const colour = /^#[0-9a-f]{6}$/i.test(value.color) ? value.color : "#555555";
      const shape = typeof value.selected === "string" ? scope.objects.get(value.selected) : null;
      if (shape) {
        const p = shape.properties;
        context.save();
        context.setLineDash([6, 4]);
        context.strokeStyle = colour;
        context.lineWidth = 2;
        context.strokeRect((p.x ?? 0) - 5, (p.y ?? 0) - 5, (p.width ?? 100) + 10, (p.height ?? 100) + 10);
        context.restore();
        tag(context, label, colour, (p.x ?? 0) - 5, (p.y ?? 0) - 9);
      }
      if (Array.isArray(value.pointer) && value.pointer.length === 2 && value.pointer.every(Number.isFinite)) {
        const [x, y] = value.pointer;
        context.fillStyle = colour;
        context.beginPath();
        context.moveTo(x, y);
        context.lineTo(x + 4, y + 16);
        context.lineTo(x + 8, y + 10);
        context.lineTo(x + 15, y + 9);
        context.closePath();
        context.fill();
        tag(context, label, colour, x + 12, y + 28);
      }
    }
  }
  return { presence: here, name, draw };
}

/** A name tag: `text` in white on `colour`, its bottom-left corner at (x, y). */
function tag(context, text, colour, x, y) {
  context.font = "12px system-ui, sans-serif";
  const width = context.measureText(text).width + 8;
  context.fillStyle = colour;
  context.fillRect(x, y - 15, width, 17);
  context.fillStyle = "#ffffff";
  context.fillText(text, x + 4, y - 3);
}
