// contrail-counter.js without a server (`node --test Tests/JS/`): a scripted WebSocket plays the
// server, as in client-test.mjs. A SharedCounter (Protocol §8.21) sends its delta beside the plain
// total only to a server that lists "SharedCounter", shows the server's total plus its pending
// deltas, takes the server's sum from the reply, and drops a rejected delta.
// JSCounterAgreementTests.swift runs it against a real server beside Swift clients.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { SharedCounterBinding } from "../../Sources/ContrailServer/Pages/Assets/contrail-counter.js";
import { ScriptedSocket, next } from "./harness.mjs";

/** A client on a scripted socket with `scope` fetched (the root's likes at `likes`); the server lists `extensions`. */
async function online(t, extensions, likes = 4) {
  const client = new Client("ws://server.test/", { WebSocket: ScriptedSocket, backoff: { min: 1, max: 1 } });
  t.after(() => client.close());
  const scope = new Scope("Post", { rootClass: "Post" });
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(scope);
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-1", extensions });
  const fetch = ws.sent.find((m) => m.type === "ScopeFetch");
  const root = uuid();
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: fetch.index, scopeIndex: 0 },
             { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [{ type: "add", uuid: root, clsName: "Post", properties: { likes } }] });
  await fetched;
  const likesBinding = new SharedCounterBinding(scope, scope.root, "likes");
  return { scope, ws, root, likes: likesBinding };
}

const syncs = (ws) => ws.sent.filter((m) => m.type === "ScopeSync");

test("a delta goes beside the total, and a remote total shows with the pending delta", async (t) => {
  const { scope, ws, root, likes } = await online(t, ["SharedCounter"]);
  const seen = [];
  likes.onChange = (value, isRemote) => seen.push([value, isRemote]);
  likes.add(2);
  likes.increment();
  assert.equal(likes.value, 7);
  scope.flush();
  const [sync] = syncs(ws);
  assert.deepEqual(sync.fragments, [{ type: "change", uuid: root, clsName: "Post", properties: { likes: 7 }, counter: { likes: 3 } }]);
  // Another client's +5 reaches the server first: its total (9) plus this client's pending 3.
  ws.receive({ type: "ScopeSync", index: 3, scopeIndex: 0, fragments: [{ type: "change", uuid: root, clsName: "Post", properties: { likes: 9 }, counter: { likes: 5 } }] });
  assert.equal(likes.value, 12, "the remote total plus the pending delta");
  const settled = next(scope, "settled");
  ws.receive({ type: "ScopeSyncReply", index: 4, replyTo: sync.index, fragmentReplies: [{ modifications: { likes: 12 } }] });
  await settled;
  assert.equal(likes.value, 12);
  assert.equal(likes.pending(), 0);
  assert.deepEqual(seen, [[6, false], [7, false], [12, true]]);
});

test("a rejected delta is dropped, and later ones still count", async (t) => {
  const { scope, ws, root, likes } = await online(t, ["SharedCounter"]);
  likes.add(10);
  scope.flush();
  likes.decrement();
  scope.flush();
  const [first, second] = syncs(ws);
  assert.deepEqual(second.fragments[0].counter, { likes: -1 });
  assert.equal(likes.value, 13);
  let settled = next(scope, "settled");
  ws.receive({ type: "ScopeSyncReply", index: 3, replyTo: first.index, fragmentReplies: [{ error: { type: "denied", message: "no" } }] });
  await settled;
  assert.equal(likes.value, 3, "the server's 4 and the pending -1");
  settled = next(scope, "settled");
  ws.receive({ type: "ScopeSyncReply", index: 4, replyTo: second.index, fragmentReplies: [{ modifications: { likes: 3 } }] });
  await settled;
  assert.equal(likes.value, 3);
  assert.equal(scope.root.properties.likes, 3);
  assert.ok(root);
});

test("a server without the extension gets plain totals, last writer wins", async (t) => {
  const { scope, ws, likes } = await online(t, []);
  likes.add(1);
  scope.flush();
  const [sync] = syncs(ws);
  assert.equal(sync.fragments[0].counter, undefined, "an original server never sees a delta");
  assert.equal(sync.fragments[0].properties.likes, 5);
  assert.deepEqual(scope.queue[0].fragments[0].counter, { likes: 1 }, "the change set keeps it for a later server");
  const settled = next(scope, "settled");
  ws.receive({ type: "ScopeSyncReply", index: 3, replyTo: sync.index, fragmentReplies: [{}] });
  await settled;
  assert.equal(likes.value, 5, "the server took the plain total");
  assert.throws(() => likes.add(0.5), TypeError);
});
