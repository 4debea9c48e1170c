// contrail-query.js without a server (`node --test Tests/JS/`): a live query over a Scope, checked
// against re-filtering, re-sorting and diffing after every delivery, through local edits, remote
// batches and full states, with and without a window.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { LiveQuery, movedCandidates } from "../../Sources/ContrailServer/Pages/Assets/contrail-query.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A scope that received a full state: a Canvas root holding `shapes` made from `props`. */
function scopeWith(props) {
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const root = uuid();
  const shapes = props.map((p) => ({ type: "add", uuid: uuid(), clsName: "Shape", properties: p }));
  scope._applyRemote([{ type: "add", uuid: root, clsName: "Canvas", properties: { shapes: shapes.map((s) => s.uuid) } }, ...shapes], root);
  return scope;
}

/** `old` with a batch update applied, as a table view applies it (null when the batch is invalid). */
function applying(changes, old, next) {
  if (changes.oldCount !== old.length || changes.newCount !== next.length) return null;
  const result = new Array(next.length).fill(null);
  for (const i of changes.inserted) result[i] = next[i];
  for (const m of changes.moved) result[m.to] = old[m.from];
  const gone = new Set([...changes.removed, ...changes.moved.map((m) => m.from)]);
  const rest = old.filter((_, i) => !gone.has(i));
  for (let i = 0; i < result.length; i++) if (result[i] === null) result[i] = rest.shift();
  return rest.length ? null : result;
}

test("a query filters, sorts and reports one batch per task", async () => {
  const scope = scopeWith([{ x: 1, color: 3 }, { x: 2, color: 1 }, { x: 3, color: 2 }]);
  const query = scope.query("Shape", (s) => s.get("x") < 10, ["color", "-x"]);
  assert.deepEqual(query.items.map((s) => s.get("x")), [2, 3, 1]);
  const events = [];
  query.on("change", (c) => events.push(c));
  const shapes = [...scope.objects.values()].filter((m) => m.clsName === "Shape");
  const [a, b] = [1, 2].map((x) => shapes.find((s) => s.get("x") === x));
  const before = query.items.map((s) => s.uuid);
  a.set("color", 0);       // to the front
  b.set("x", 20);          // filtered out
  assert.deepEqual(query.items.map((s) => s.uuid), before, "nothing changes before the delivery");
  await tick();
  assert.equal(events.length, 1);
  assert.deepEqual(query.items.map((s) => s.get("x")), [1, 3]);
  assert.deepEqual(events[0].removed, [0]);
  assert.deepEqual(events[0].moved, [{ from: 2, to: 0 }]);
  query.close();
  a.set("color", 9);
  await tick();
  assert.equal(events.length, 1, "a closed query hears nothing");
});

test("moves are only reported for objects whose place among the others changed", () => {
  assert.deepEqual(movedCandidates([{ old: 3, new: 3 }], [3], [3]), [false]);
  assert.deepEqual(movedCandidates([{ old: 3, new: 5 }], [3], [5]), [true]);
  assert.deepEqual(movedCandidates([{ old: 3, new: 2 }], [0, 3], [2]), [false]);
});

test("random edits, remote batches and full states: every delivery matches the oracle", async () => {
  let seed = 7;
  const random = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const scope = scopeWith(Array.from({ length: 25 }, (_, i) => ({ x: i % 6, y: i, color: i % 4, width: 50 + i })));
  const specs = [
    { filter: (s) => s.get("width") > 55, sort: ["color", "-x"], window: null },
    { filter: () => true, sort: ["x"], window: [2, 8] },
    { filter: (s) => (s.get("y") ?? 0) % 2 === 0, sort: [{ key: "y", descending: true }], window: [0, 4] },
  ];
  const probes = specs.map((spec) => {
    const query = new LiveQuery(scope, "Shape", spec.filter, spec.sort, { window: spec.window });
    const probe = { spec, query, shown: query.items.slice(), events: [] };
    query.on("change", (c) => probe.events.push(c));
    return probe;
  });
  const oracle = (spec, window) => {
    const cmp = (a, b) => {
      for (const s of spec.sort) {
        const key = typeof s === "string" ? s.replace(/^-/, "") : s.key, desc = typeof s === "string" ? s.startsWith("-") : s.descending;
        const av = a.get(key) ?? null, bv = b.get(key) ?? null;
        const c = av === bv ? 0 : av === null ? -1 : bv === null ? 1 : av < bv ? -1 : 1;
        if (c) return desc ? -c : c;
      }
      return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
    };
    const all = [...scope.objects.values()].filter((m) => m.clsName === "Shape" && spec.filter(m)).sort(cmp);
    return window ? all.slice(window[0], window[1]) : all;
  };
  for (let step = 0; step < 200; step++) {
    const shapes = [...scope.objects.values()].filter((m) => m.clsName === "Shape");
    for (let n = random(4) + 1; n > 0; n--) {
      const shape = shapes[random(shapes.length)];
      switch (random(8)) {
        case 0: shape?.set("x", random(8)); break;
        case 1: shape?.set("color", random(5)); break;
        case 2: shape?.set("width", 40 + random(30)); break;
        case 3: scope.modify(() => { const s = scope.create("Shape", { x: random(8), y: random(40), color: random(5), width: 60 }); scope.root.insert("shapes", s); }); break;
        case 4: if (shape) scope.modify(() => scope.root.remove("shapes", shape)); break;
        case 5: // a remote batch changing several shapes at once
          scope._applyRemote(shapes.slice(0, 3).map((s) => ({ type: "change", uuid: s.uuid, clsName: "Shape", properties: { x: random(8), y: random(40) } })));
          break;
        case 6: { // a full state (a refetch): every object as the server has it, some values changed
          const state = scope.stateJSON();
          const fragments = Object.entries(state.objects).map(([id, o]) => ({ type: "add", uuid: id, clsName: o.clsName,
            properties: o.clsName === "Shape" && random(2) ? { ...o.properties, color: random(5) } : o.properties }));
          scope._applyRemote(fragments, state.root);
          break;
        }
        default: { const probe = probes[1 + random(2)]; const start = random(10); probe.query.setWindow([start, start + random(7)]); }
      }
    }
    await tick();
    for (const probe of probes) {
      const expected = oracle(probe.spec, probe.query.window);
      assert.deepEqual(probe.query.items.map((m) => m.uuid), expected.map((m) => m.uuid), `step ${step}: contents`);
      assert.ok(probe.events.length <= 1, `step ${step}: one event per task`);
      if (probe.events.length) {
        const applied = applying(probe.events[0], probe.shown, probe.query.items);
        assert.deepEqual(applied?.map((m) => m.uuid), probe.query.items.map((m) => m.uuid), `step ${step}: the batch turns the old rows into the new`);
      } else {
        assert.deepEqual(probe.shown.map((m) => m.uuid), probe.query.items.map((m) => m.uuid), `step ${step}: no event, no change`);
      }
      probe.events.length = 0;
      probe.shown = probe.query.items.slice();
    }
  }
});
