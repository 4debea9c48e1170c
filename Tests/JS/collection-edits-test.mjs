// contrail.js sends a collection with its base as an edit (Protocol §8.24) only to a server that
// lists `collectionOps`, and keeps the whole fragments for settling (`node --test Tests/JS/`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { collectionDigest, collectionEdit, withCollectionEdits } from "../../Sources/ContrailServer/Pages/Assets/contrail-collections.js";

test("an edit names its base by length and digest, and removals and placements by anchor", () => {
  assert.equal(collectionDigest([]), "cbf29ce484222325");
  const [a, b, c, x] = [uuid(), uuid(), uuid(), uuid()];
  assert.notEqual(collectionDigest([a, b]), collectionDigest([b, a]));
  assert.deepEqual(collectionEdit([a, b, c], [c, a, b, x]),
                   { n: 3, digest: collectionDigest([a, b, c]), place: [[c, null, 1], [x, b]] });
  assert.deepEqual(collectionEdit([a, b], [b]), { n: 2, digest: collectionDigest([a, b]), remove: [a] });
  assert.equal(collectionEdit([a, a], [a]), null, "an element twice: no edit");
  // Only where it is shorter: replacing everything stays whole.
  const whole = { type: "change", uuid: a, clsName: "Board", properties: { items: [x] }, bases: { items: [b] } };
  assert.equal(withCollectionEdits(whole), whole);
});

class Socket {
  static made = [];
  constructor() { this.readyState = 0; this.sent = []; Socket.made.push(this); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() { this.readyState = 3; }
  open() { this.readyState = 1; this.onopen?.(); }
  receive(...messages) { this.onmessage?.({ data: JSON.stringify(messages) }); }
}

/** A client whose server lists `extensions`, with a board of `count` items; returns what it needs. */
async function board(t, extensions, count) {
  const client = new Client("ws://server.test/", { WebSocket: Socket, backoff: { min: 1, max: 1 } });
  t.after(() => client.close());
  const scope = new Scope("Board", { rootClass: "Board" });
  const fetched = client.fetch(scope);
  const ws = Socket.made.at(-1);
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "t", extensions });
  const root = uuid(), items = Array.from({ length: count }, () => uuid());
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: ws.sent.find((m) => m.type === "ScopeFetch").index, scopeIndex: 0 },
             { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [
               { type: "change", uuid: root, clsName: "Board", properties: { items } },
               ...items.map((id) => ({ type: "add", uuid: id, clsName: "Item", properties: {} }))] });
  await fetched;
  return { ws, scope, items };
}

test("an append to a long collection goes as an edit to a server that takes edits", async (t) => {
  const { ws, scope, items } = await board(t, ["ScopeDetach", "collectionOps"], 500);
  scope.modify(() => scope.root.insert("items", scope.create("Item", {})));
  scope.flush();
  const sync = ws.sent.at(-1);
  const change = sync.fragments.find((f) => f.type === "change");
  assert.equal(change.properties.items, undefined);
  assert.equal(change.collectionOps.items.n, items.length);
  assert.equal(change.collectionOps.items.place.length, 1);
  assert.ok(JSON.stringify(sync).length < 1000, `${JSON.stringify(sync).length} bytes`);
  // The queued change set keeps the whole value (for rebases and the reply).
  assert.equal(scope.queue[0].fragments.find((f) => f.type === "change").properties.items.length, items.length + 1);
});

test("an original server gets whole arrays", async (t) => {
  const { ws, scope, items } = await board(t, undefined, 50);
  scope.modify(() => scope.root.insert("items", scope.create("Item", {})));
  scope.flush();
  const change = ws.sent.at(-1).fragments.find((f) => f.type === "change");
  assert.equal(change.collectionOps, undefined);
  assert.equal(change.properties.items.length, items.length + 1);
});
