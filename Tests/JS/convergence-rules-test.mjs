// contrail.js follows the Swift client's convergence rules (README, Design; Convergence in the
// documentation catalog) without a server: the three mechanisms of issue 31 (a revert that must bring
// back the objects its change set dropped, a never-set collection as the empty base, removal wins over
// a move), and the replay of pending change sets onto remote values. Server messages are applied the
// way the client applies them on receipt; the server's merge is mergeCollection (Swift agrees: see
// JSMergeAgreementTests.swift).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Scope, mergeCollection, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";

/** A scope that received the server's full state (an empty root of class Shelf), with a stub client recording refetches. */
function attachedScope() {
  const scope = new Scope("Shelf", { rootClass: "Shelf" });
  const refetches = [];
  scope._client = { _pump() {}, _refetch: (s) => refetches.push(s) };
  const root = uuid();
  scope._applyRemote([{ type: "add", uuid: root, clsName: "Shelf", properties: {} }], root);
  return { scope, refetches };
}

const accept = (scope, entry = scope.queue[0], modifications = []) => scope._settle(entry, entry.fragments.map((_, i) => (modifications[i] ? { modifications: modifications[i] } : {})));
const reject = (scope, entry = scope.queue[0]) => scope._settle(entry, entry.fragments.map(() => ({ error: { code: 2, message: "rejected" } })));
/** References in the tree that name no object of it. */
const dangling = (scope) => [...scope.objects.values()].flatMap((m) => Object.values(m.properties).flat()).filter((v) => typeof v === "string" && /^[0-9a-f-]{36}$/.test(v) && !scope.objects.has(v));

test("removal wins over a move: the merge does not bring back what the other side removed", () => {
  assert.deepEqual(mergeCollection(["a", "X", "b"], ["X", "a", "b"], ["a", "b"]), ["a", "b"]);
  assert.deepEqual(mergeCollection(["a", "X", "b"], ["a", "b"], ["X", "a", "b"]), ["a", "b"], "and over the other side's move");
  // Positive control: an element the edit inserts (not in the base) is placed even where the other side removed things.
  assert.deepEqual(mergeCollection(["a", "X", "b"], ["Y", "a", "X", "b"], ["a", "b"]), ["Y", "a", "b"]);
});

test("a remote removal wins over a pending local move: the moved object leaves the tree, nothing dangles", () => {
  const { scope } = attachedScope();
  let a, x, b;
  scope.modify(() => { [a, x, b] = ["a", "x", "b"].map((label) => scope.create("Item", { label, count: 0 })); for (const m of [a, x, b]) scope.root.insert("items", m); });
  accept(scope);
  scope.modify(() => { scope.root.remove("items", x); scope.root.insert("items", x, 0); });  // move x to the front
  assert.deepEqual(scope.queue[0].fragments.at(-1).bases, { items: [a.uuid, x.uuid, b.uuid] });
  // Another client removed x: the server's value arrives while the move is pending.
  scope._applyRemote([{ type: "change", uuid: scope.root.uuid, clsName: "Shelf", properties: { items: [a.uuid, b.uuid] } }]);
  assert.deepEqual(scope.root.get("items"), [a.uuid, b.uuid], "the replay of the pending move keeps x removed, as the server will");
  assert.equal(scope.objects.has(x.uuid), false);
  // The server merges the move the same way and answers with its value.
  assert.equal(scope.queue[0].fragments.length, 1);
  accept(scope, scope.queue[0], [{ items: mergeCollection([a.uuid, x.uuid, b.uuid], [x.uuid, a.uuid, b.uuid], [a.uuid, b.uuid]) }]);
  assert.deepEqual(scope.root.get("items"), [a.uuid, b.uuid]);
  assert.deepEqual(dangling(scope), []);
  // Nothing is left to send: the next flush makes no change set that would bring x back as an insert.
  scope.flush();
  assert.equal(scope.queue.length, 0);
});

test("a reverted change set brings back the objects it dropped, and the scope is fetched again", () => {
  const { scope, refetches } = attachedScope();
  let x, y;
  scope.modify(() => { x = scope.create("Item", { label: "x", count: 0 }); y = scope.create("Item", { label: "y", count: 0 }); scope.root.insert("items", x); scope.root.insert("items", y); });
  accept(scope);
  scope.modify(() => { scope.root.remove("items", x); y.set("label", 404); }, { atomic: true });
  assert.equal(scope.objects.has(x.uuid), false, "x left the tree at the flush");
  reject(scope);  // the server refuses the label: the atomic change set is refused whole
  assert.deepEqual(scope.root.get("items"), [x.uuid, y.uuid], "x is back in items");
  assert.equal(scope.objects.get(x.uuid), x, "the same object is back in the tree");
  assert.equal(y.get("label"), "y");
  assert.deepEqual(dangling(scope), []);
  assert.deepEqual(Object.keys(scope.stateJSON().objects).length, 3, "root, x and y, as a fresh fetch has them");
  assert.deepEqual(refetches, [scope], "x missed remote changes while it was out of the tree: fetch again");
  // Positive control: a revert that brings nothing back does not refetch.
  refetches.length = 0;
  scope.modify(() => y.set("label", 405));
  reject(scope);
  assert.equal(y.get("label"), "y");
  assert.deepEqual(refetches, []);
});

test("a revert keeps a key a later change set holds, which takes the reverted original as its own", () => {
  const { scope } = attachedScope();
  scope.modify(() => scope.root.set("title", "one"));
  scope.modify(() => scope.root.set("title", "two"));
  const [first, second] = scope.queue;
  reject(scope, first);
  assert.equal(scope.root.get("title"), "two", "the later change set's value stays");
  reject(scope, second);
  assert.equal(scope.root.get("title"), null, "reverting that one too goes back to what was there before both");
});

test("a collection never set is the empty base: concurrent first inserts both survive", () => {
  const one = attachedScope().scope, other = new Scope("Shelf", { rootClass: "Shelf" });
  other._client = { _pump() {}, _refetch() {} };
  other._applyRemote([{ type: "add", uuid: one.root.uuid, clsName: "Shelf", properties: {} }], one.root.uuid);
  let x, y;
  one.modify(() => { x = one.create("Item", { label: "x", count: 0 }); one.root.insert("shelf", x); });
  other.modify(() => { y = other.create("Item", { label: "y", count: 0 }); other.root.insert("shelf", y); });
  for (const scope of [one, other]) assert.deepEqual(scope.queue[0].fragments.at(-1).bases, { shelf: [] }, "the fragment carries the empty base");
  // The server applies `other` first, then merges `one`'s edit ([] → [x]) into [y].
  const merged = mergeCollection([], [x.uuid], [y.uuid]);
  assert.deepEqual(merged, [y.uuid, x.uuid]);
  one._applyRemote([{ type: "add", uuid: y.uuid, clsName: "Item", properties: { label: "y", count: 0 } },
                    { type: "change", uuid: one.root.uuid, clsName: "Shelf", properties: { shelf: [y.uuid] } }]);
  assert.deepEqual(one.root.get("shelf"), merged, "the pending insert replayed on the remote value, as the server will merge it");
  accept(one, one.queue[0], [undefined, { shelf: merged }]);
  assert.deepEqual(one.root.get("shelf"), merged);
  // Negative control: without the base the server would have replaced [y] by [x].
  assert.deepEqual(mergeCollection([x.uuid], [x.uuid], [y.uuid]), [y.uuid]);
});

test("a remote value over a key held by two pending change sets replays both, each merged by its own base", () => {
  const { scope } = attachedScope();
  const [r1, r2] = [uuid(), uuid()];
  let a, b;
  scope.modify(() => { a = scope.create("Item", { label: "a", count: 0 }); scope.root.insert("items", a); });
  scope.modify(() => { b = scope.create("Item", { label: "b", count: 0 }); scope.root.insert("items", b, 0); });
  assert.deepEqual(scope.root.get("items"), [b.uuid, a.uuid]);
  scope._applyRemote([{ type: "add", uuid: r1, clsName: "Item", properties: { label: "r1", count: 0 } },
                      { type: "add", uuid: r2, clsName: "Item", properties: { label: "r2", count: 0 } },
                      { type: "change", uuid: scope.root.uuid, clsName: "Shelf", properties: { items: [r1, r2] } }]);
  // As the server: [r1, r2], then [] → [a] merged, then [a] → [b, a] merged.
  const expected = mergeCollection([a.uuid], [b.uuid, a.uuid], mergeCollection([], [a.uuid], [r1, r2]));
  assert.deepEqual(scope.root.get("items"), expected);
  assert.deepEqual(scope.queue[0].originals.get(scope.root.uuid), { items: [r1, r2] }, "the remote value is the first holder's original");
  assert.deepEqual(scope.queue[1].originals.get(scope.root.uuid), { items: [a.uuid] }, "a later holder keeps its own");
  // A scalar held by a pending change set keeps the sent value.
  scope.modify(() => scope.root.set("title", "mine"));
  scope._applyRemote([{ type: "change", uuid: scope.root.uuid, clsName: "Shelf", properties: { title: "theirs" } }]);
  assert.equal(scope.root.get("title"), "mine");
  reject(scope, scope.queue[2]);
  assert.equal(scope.root.get("title"), "theirs", "a revert goes back to the remote value that arrived meanwhile");
});

test("a change to an object out of the tree, or a reference to an unknown object, makes the scope fetch again", () => {
  const { scope, refetches } = attachedScope();
  let x;
  scope.modify(() => { x = scope.create("Item", { label: "x", count: 0 }); scope.root.insert("items", x); });
  accept(scope);
  scope.modify(() => scope.root.remove("items", x));
  scope._applyRemote([{ type: "change", uuid: x.uuid, clsName: "Item", properties: { label: "elsewhere" } }]);
  assert.deepEqual(refetches, [scope]);
  accept(scope);
  refetches.length = 0;
  scope._applyRemote([{ type: "change", uuid: scope.root.uuid, clsName: "Shelf", properties: { featured: uuid() } }]);
  assert.deepEqual(refetches, [scope], "a reference to nothing this replica holds");
  // Positive control: a remote add with its reference needs no fetch.
  refetches.length = 0;
  const z = uuid();
  scope._applyRemote([{ type: "add", uuid: z, clsName: "Item", properties: { label: "z", count: 0 } },
                      { type: "change", uuid: scope.root.uuid, clsName: "Shelf", properties: { featured: z } }]);
  assert.deepEqual(refetches, []);
  assert.equal(scope.objects.has(z), true);
});
