// contrail.js's scope bookkeeping without a server (`node --test Tests/JS/`): the collection merge,
// change sets built from local edits, server values against pending keys, rejection, removal by
// orphaning. Server messages are applied the way the client applies them on receipt.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Scope, mergeCollection, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";

/** A scope that received the server's full state: an empty root of class Canvas with a fresh UUID. */
function attachedScope() {
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const root = uuid();
  scope._applyRemote([{ type: "add", uuid: root, clsName: "Canvas", properties: {} }], root);
  scope.flush();  // nothing was edited: no change set
  return scope;
}

test("the collection merge is Swift's CollectionMerge", () => {
  // [a] → [a, b] applied to [a, c] gives [a, c, b]; a removal applies to the current order.
  assert.deepEqual(mergeCollection(["a"], ["a", "b"], ["a", "c"]), ["a", "c", "b"]);
  assert.deepEqual(mergeCollection(["a", "b"], ["b"], ["a", "b", "c"]), ["b", "c"]);
  // Either side unchanged: the other side's list.
  assert.deepEqual(mergeCollection(["a"], ["a", "b"], ["a"]), ["a", "b"]);
  assert.deepEqual(mergeCollection(["a"], ["a"], ["c", "a"]), ["c", "a"]);
});

test("uuid() makes distinct lowercase version-4 UUIDs", () => {
  const ids = new Set(Array.from({ length: 100 }, uuid));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test("edits before the full state wait for it and then go out on the server's root", () => {
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const states = [];
  scope.on("state", (e) => states.push(e));
  scope.root.set("name", "early");
  scope.flush();
  assert.equal(scope.queue.length, 0, "no change set before the full state");
  const root = uuid();
  scope._applyRemote([{ type: "add", uuid: root, clsName: "Canvas", properties: {} }], root);
  assert.equal(scope.root.uuid, root, "the root takes the server's UUID");
  assert.equal(states.length, 1);
  scope.flush();
  assert.deepEqual(scope.queue.map((e) => e.fragments), [[{ type: "change", uuid: root, clsName: "Canvas", properties: { name: "early" } }]]);
});

test("modify makes one change set: the add, then the collection change with its base", () => {
  const scope = attachedScope();
  const attached = [];
  scope.on("attach", (e) => attached.push(e.model.uuid));
  let first, second;
  scope.modify(() => { first = scope.create("Shape", { x: 1, createdAt: new Date(1_500) }); scope.root.insert("shapes", first); });
  assert.deepEqual(attached, [first.uuid]);
  assert.deepEqual(scope.queue[0].fragments, [
    { type: "add", uuid: first.uuid, clsName: "Shape", properties: { x: 1, createdAt: 1.5 } },  // a Date goes out as epoch seconds
    // A collection never set is the empty base, so concurrent first inserts merge on the server.
    { type: "change", uuid: scope.root.uuid, clsName: "Canvas", properties: { shapes: [first.uuid] }, bases: { shapes: [] } },
  ]);
  let third;
  scope.modify(() => {
    second = scope.create("Shape"); scope.root.insert("shapes", second, 0);
    third = scope.create("Shape"); scope.root.insert("shapes", third);
  });
  assert.deepEqual(scope.queue[1].fragments.map((f) => f.type), ["add", "add", "change"]);
  assert.deepEqual(scope.queue[1].fragments[2].properties, { shapes: [second.uuid, first.uuid, third.uuid] });
  assert.deepEqual(scope.queue[1].fragments[2].bases, { shapes: [first.uuid] }, "a collection change carries the list before the change set's first edit");
});

test("a server value never overwrites a pending key; a pending collection merges the server's", () => {
  const scope = attachedScope();
  const root = scope.root.uuid;
  const [a, c] = [uuid(), uuid()];
  scope._applyRemote([{ type: "add", uuid: a, clsName: "Shape", properties: {} },
                      { type: "change", uuid: root, clsName: "Canvas", properties: { name: "server", shapes: [a] } }]);
  assert.equal(scope.root.get("name"), "server", "a key with no local edit takes the server's value");
  scope.root.set("name", "local");
  let mine;
  scope.modify(() => { mine = scope.create("Shape"); scope.root.insert("shapes", mine); });
  scope._applyRemote([{ type: "add", uuid: c, clsName: "Shape", properties: {} },
                      { type: "change", uuid: root, clsName: "Canvas", properties: { name: "other", shapes: [a, c] } }]);
  assert.equal(scope.root.get("name"), "local", "the pending key keeps the local value");
  assert.deepEqual(scope.root.get("shapes"), [a, c, mine.uuid], "the local insert applied to the server's list");
  // Positive control: once the edits settle, a server value applies.
  for (const entry of [...scope.queue]) scope._settle(entry, entry.fragments.map(() => ({})));
  scope._applyRemote([{ type: "change", uuid: root, clsName: "Canvas", properties: { name: "later" } }]);
  assert.equal(scope.root.get("name"), "later");
});

test("a rejected change set reverts its edits and reports them", () => {
  const scope = attachedScope();
  scope.root.set("name", "before");
  scope.flush();
  scope._settle(scope.queue[0], [{}]);
  scope.modify(() => { scope.root.set("name", "after"); scope.root.set("count", 3); }, { atomic: true });
  const entry = scope.queue[0];
  assert.equal(entry.atomic, true);
  const settled = [];
  scope.on("settled", (e) => settled.push(e));
  scope._settle(entry, [{ error: { code: 2, message: "rejected" } }]);
  assert.equal(settled.length, 1);
  assert.equal(settled[0].rejected.length, 1);
  assert.equal(scope.root.get("name"), "before", "the edit is reverted");
  assert.equal(scope.root.get("count"), null, "a new key goes back to null");
  assert.equal(scope.queue.length, 0);
  assert.equal(scope._pending.size, 0, "a revert is not a new edit");
});

test("a refused change set after a completed one goes back to the server's value, not the one it was made on", () => {
  // Fuzz seed 4762: A appends y; a remote adds x; B moves x out of `shapes` into `pinned`; a remote
  // removes x (the server deletes it); A completes as sent; B is refused. `shapes` must end as the
  // server's [y]. Control (no remote removal, the server answers A with [x, y]): x comes back.
  for (const removedRemotely of [true, false]) {
    const scope = attachedScope();
    const root = scope.root.uuid;
    let y;
    scope.modify(() => { y = scope.create("Shape"); scope.root.insert("shapes", y); });
    const x = uuid();
    scope._applyRemote([{ type: "add", uuid: x, clsName: "Shape", properties: {} },
                        { type: "change", uuid: root, clsName: "Canvas", properties: { shapes: [x] } }]);
    assert.deepEqual(scope.root.get("shapes"), [x, y.uuid]);
    scope.modify(() => { scope.root.remove("shapes", scope.object(x)); scope.root.set("pinned", x); });
    if (removedRemotely) {
      scope._applyRemote([{ type: "change", uuid: root, clsName: "Canvas", properties: { shapes: [] } }]);
      assert.deepEqual(scope.root.get("shapes"), [y.uuid]);
    }
    const [first, second] = scope.queue;
    scope._settle(first, first.fragments.map((f) => (f.type === "change" && !removedRemotely ? { modifications: { shapes: [x, y.uuid] } } : {})));
    scope._settle(second, second.fragments.map(() => ({ error: { message: "No such ModelObjects" } })));
    assert.equal(scope.root.get("pinned"), null, `removedRemotely ${removedRemotely}`);
    assert.deepEqual(scope.root.get("shapes"), removedRemotely ? [y.uuid] : [x, y.uuid], `removedRemotely ${removedRemotely}`);
  }
});

test("an object no longer reachable from the root detaches, and the state JSON drops it", () => {
  const scope = attachedScope();
  let shape;
  scope.modify(() => { shape = scope.create("Shape", { x: 1, label: null }); scope.root.insert("shapes", shape); });
  assert.deepEqual(Object.keys(scope.stateJSON().objects).sort(), [scope.root.uuid, shape.uuid].sort());
  assert.deepEqual(scope.stateJSON().objects[shape.uuid], { clsName: "Shape", properties: { x: 1 } }, "null properties are left out");
  const detached = [];
  scope.on("detach", (e) => detached.push(e.model.uuid));
  scope.modify(() => scope.root.remove("shapes", shape));
  assert.deepEqual(detached, [shape.uuid]);
  assert.equal(scope.objects.has(shape.uuid), false, "out of the tree");
  assert.deepEqual(Object.keys(scope.stateJSON().objects), [scope.root.uuid]);
  // Held while the removal is pending (a revert would bring it back), forgotten once it settles.
  assert.equal(scope.object(shape.uuid), shape);
  for (const entry of [...scope.queue]) scope._settle(entry, entry.fragments.map(() => ({})));
  assert.equal(scope.object(shape.uuid), undefined);
});

test("a flush that only adds references walks what they reach, not the tree; one that drops a reference walks the tree", () => {
  const scope = attachedScope();
  let walks = 0;
  const walk = scope._reachable.bind(scope);
  scope._reachable = () => { walks++; return walk(); };
  const attached = [], detached = [];
  scope.on("attach", (e) => attached.push(e.model.uuid));
  scope.on("detach", (e) => detached.push(e.model.uuid));
  const shapes = [];
  scope.modify(() => {
    for (let i = 0; i < 50; i++) { const shape = scope.create("Shape", { x: i }); shapes.push(shape); scope.root.insert("shapes", shape); }
  });
  // A new object that references another new one: both join, with one add each.
  let group, member;
  scope.modify(() => {
    member = scope.create("Shape", { x: -1 });
    group = scope.create("Group", { members: [member.uuid] });
    scope.root.insert("shapes", group, 10);
    shapes[3].set("x", 33);  // a plain value beside it
  });
  assert.equal(walks, 0, "inserts and plain values: no walk of the tree");
  assert.deepEqual(new Set(attached), new Set([...shapes.map((s) => s.uuid), group.uuid, member.uuid]));
  assert.ok(scope.objects.has(member.uuid) && scope.objects.has(group.uuid));
  const last = scope.queue.at(-1);
  assert.deepEqual(last.fragments.filter((f) => f.type === "add").map((f) => f.uuid).sort(), [group.uuid, member.uuid].sort());
  // Control: a removal may orphan objects, so the tree is walked, and the group's member leaves with it.
  scope.modify(() => scope.root.remove("shapes", group));
  assert.equal(walks, 1);
  assert.deepEqual(detached.sort(), [group.uuid, member.uuid].sort());
  // A move within one flush (out of one list, into another) walks too, and nothing leaves.
  scope.modify(() => { scope.root.remove("shapes", shapes[0]); scope.root.insert("featured", shapes[0]); });
  assert.equal(walks, 2);
  assert.equal(detached.length, 2);
  assert.ok(scope.objects.has(shapes[0].uuid));
  assert.deepEqual(walk(), new Set(scope.objects.keys()), "the tree is what a walk finds");
});

test("insert and remove events name the elements that came and went, wherever in the list, each once", () => {
  const scope = attachedScope();
  const ids = Array.from({ length: 6 }, () => uuid());
  const events = [];
  scope.on("insert", (e) => events.push(["insert", e.item]));
  scope.on("remove", (e) => events.push(["remove", e.item]));
  const cases = [
    [[], ids.slice(0, 3), [["insert", ids[0]], ["insert", ids[1]], ["insert", ids[2]]]],
    [ids.slice(0, 3), [ids[0], ids[3], ids[1], ids[2]], [["insert", ids[3]]]],         // in the middle
    [[ids[0], ids[3], ids[1], ids[2]], [ids[0], ids[1], ids[2]], [["remove", ids[3]]]],  // out of the middle
    [ids.slice(0, 3), [ids[2], ids[0], ids[1]], []],                                     // a move: neither
    [[ids[2], ids[0], ids[1]], [ids[2], ids[0], ids[1], ids[4], ids[4]], [["insert", ids[4]]]],  // twice: once
    [[ids[0], ids[1], ids[0]], [ids[0], ids[1]], []],                                    // a duplicate dropped: still there
    [[ids[0], ids[1]], [ids[5], ids[1], ids[0]], [["insert", ids[5]]]],
    [[ids[5], ids[1], ids[0]], null, [["remove", ids[5]], ["remove", ids[1]], ["remove", ids[0]]]],
  ];
  for (const [before, after, expected] of cases) {
    scope._remote = true;
    scope.root.set("list", before);
    scope._remote = false;
    events.length = 0;
    scope.root.set("list", after);
    assert.deepEqual(events, expected, `${JSON.stringify(before)} → ${JSON.stringify(after)}`);
  }
});
