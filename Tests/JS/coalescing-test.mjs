// contrail.js coalesces consecutive unsent change sets into one ScopeSync (ChangeSetBatch, as Swift's
// ChangeSetCoalescingTests check for the Swift client), without a server (`node --test Tests/JS/`):
// the Client is given a scripted WebSocket and each test plays the server. Against a real server:
// coalescing-server-test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { ScriptedSocket } from "./harness.mjs";

const EXTENSIONS = ["ScopeDetach", "collectionOps"];

/** A client on a scripted socket with a fetched Board (`count` items); `online(ws)` plays a new session's create and fetch. */
async function board(t, { count = 3, coalesce = true, extensions = EXTENSIONS } = {}) {
  const client = new Client("ws://server.test/", { WebSocket: ScriptedSocket, backoff: { min: 1, max: 1 }, coalesce });
  t.after(() => client.close());
  const scope = new Scope("Board", { rootClass: "Board" });
  const root = uuid(), items = Array.from({ length: count }, () => uuid());
  let serverIndex = 0;
  const reply = (ws, message) => ws.receive({ ...message, index: ++serverIndex });
  const online = (ws, state = true) => {
    serverIndex = 0;
    ws.open();
    ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: `t-${uuid()}`, extensions });
    const fetch = ws.sent.findLast((m) => m.type === "ScopeFetch");
    reply(ws, { type: "ScopeFetchReply", replyTo: fetch.index, scopeIndex: 0 });
    if (state) reply(ws, { type: "ScopeState", scopeIndex: 0, rootUUID: root, fragments: [
      { type: "add", uuid: root, clsName: "Board", properties: { items } },
      ...items.map((id) => ({ type: "add", uuid: id, clsName: "Item", properties: { n: 0 } }))] });
  };
  const fetched = client.fetch(scope);
  online(ScriptedSocket.made.at(-1));
  await fetched;
  return { client, scope, items, root, online, reply, ws: () => ScriptedSocket.made.at(-1) };
}

/** Ends the session for good (a fatal close): the client starts a new one, every change set unsent again. */
function expire(ws) { ws.drop(4096, "session expired"); }

const syncs = (ws) => ws.sent.filter((m) => m.type === "ScopeSync");
const waitFor = async (condition, why) => { for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 2)); assert.ok(condition(), why); };

/** Appends a new item `count` times, each its own change set, while the client is offline. */
function appendOffline(scope, count) {
  const made = [];
  for (let i = 0; i < count; i++) {
    const item = scope.create("Item", { n: i });
    scope.root.insert("items", item);
    scope.flush();
    made.push(item);
  }
  return made;
}

test("offline change sets go as one ScopeSync, each settles from its reply as alone; off, one message each", async (t) => {
  for (const coalesce of [true, false]) {
    const { scope, items, online, reply, ws } = await board(t, { coalesce });
    expire(ws());
    await waitFor(() => ScriptedSocket.made.at(-1) !== undefined && ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
    const made = appendOffline(scope, 5);
    scope.object(items[0]).set("n", 1); scope.flush();
    scope.object(items[0]).set("n", 2); scope.flush();
    assert.equal(scope.queue.length, 7);
    const settled = [];
    scope.on("settled", (e) => settled.push(e));
    const socket = ws();
    online(socket, false);
    const sent = syncs(socket);
    if (!coalesce) {
      // Positive control: every change set goes alone, under its own id.
      assert.equal(sent.length, 7);
      assert.deepEqual(sent.map((m) => m.changeSet), scope.queue.map((e) => e.id));
      continue;
    }
    assert.equal(sent.length, 1, "one message");
    const [batch] = sent;
    assert.equal(batch.atomic, false);
    assert.ok(!scope.queue.some((e) => e.id === batch.changeSet), "a batch id of its own");
    assert.ok(scope.queue.every((e) => e.batch === batch.changeSet && e.index === batch.index));
    // Per object: five adds, one root change (the collection as one edit of the value before the batch), one item change.
    assert.deepEqual(batch.fragments.map((f) => f.type), ["add", "change", "add", "add", "add", "add", "change"]);
    const rootChange = batch.fragments[1];
    assert.equal(rootChange.collectionOps.items.n, items.length, "based on the value before the batch");
    assert.deepEqual(rootChange.collectionOps.items.place.map(([id]) => id), made.map((m) => m.uuid));
    assert.deepEqual(batch.fragments[6].properties, { n: 2 });
    // The queue's change sets are as they were made.
    assert.equal(scope.queue[1].fragments.find((f) => f.type === "change").bases.items.length, items.length + 1);
    const modified = [...made.map((m) => m.uuid), ...items];  // the server's order
    reply(socket, { type: "ScopeSyncReply", replyTo: batch.index, fragmentReplies: batch.fragments.map((f, i) => (i === 1 ? { modifications: { items: modified } } : {})) });
    assert.equal(scope.queue.length, 0);
    assert.equal(settled.length, 7, "each change set settled");
    assert.ok(settled.every((e) => e.rejected.length === 0 && e.answers.length === e.fragments.length));
    // The server's values go to the last change set writing the object, and show.
    assert.deepEqual(settled.map((e) => e.answers.some((a) => a.modifications)), [false, false, false, false, true, false, false]);
    assert.equal(scope.object(items[0]).get("n"), 2);
    assert.deepEqual(scope.root.get("items"), modified);
  }
});

test("atomic change sets, shared values and an object added twice end a batch; a new change set never joins a sent batch", async (t) => {
  const { scope, items, online, reply, ws } = await board(t, { extensions: [...EXTENSIONS, "SharedCounter"] });
  expire(ws());
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  scope.object(items[0]).set("n", 1); scope.flush();
  scope.object(items[1]).set("n", 1); scope.flush();
  scope.modify(() => scope.object(items[2]).set("n", 1), { atomic: true });
  scope.object(items[0]).set("n", 2); scope.flush();
  scope.root.set("likes", 3); scope.flush();
  scope.queue.at(-1).fragments[0].counter = { likes: 1 };  // as contrail-counter.js writes it
  const moved = appendOffline(scope, 1)[0];
  scope.root.remove("items", moved); scope.flush();          // it leaves the tree…
  scope.root.insert("items", moved); scope.flush();          // …and is added again
  scope.object(items[1]).set("n", 2); scope.flush();
  scope.object(items[1]).set("n", 3); scope.flush();
  const socket = ws();
  online(socket, false);
  const sent = syncs(socket);
  const members = sent.map((m) => scope.queue.filter((e) => e.index === m.index).length);
  assert.deepEqual(members, [2, 1, 1, 1, 1, 1, 1, 2], "batch, atomic alone, then alone until two may join again");
  assert.equal(sent[1].atomic, true);
  assert.ok(sent[3].fragments[0].counter, "shared values go as they were made");
  // While that batch waits for its reply, a new change set goes alone, not into it.
  scope.object(items[0]).set("n", 9); scope.flush();
  assert.equal(syncs(socket).length, sent.length + 1);
  assert.equal(syncs(socket).at(-1).changeSet, scope.queue.at(-1).id);
  for (const m of syncs(socket)) reply(socket, { type: "ScopeSyncReply", replyTo: m.index, fragmentReplies: m.fragments.map(() => ({})) });
  assert.equal(scope.queue.length, 0);
});

test("a batch sent before a new session goes again with the same members under the same id, answered as a repeat", async (t) => {
  const { scope, online, reply, ws } = await board(t);
  expire(ws());
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  appendOffline(scope, 4);
  let socket = ws();
  online(socket, false);
  const [first] = syncs(socket);
  assert.equal(first.fragments.length, 5);
  // The session ends before the reply; meanwhile two more change sets are made.
  expire(socket);
  await waitFor(() => ScriptedSocket.made.at(-1) !== socket, "a new socket");
  appendOffline(scope, 2);
  socket = ws();
  const settled = [];
  scope.on("settled", (e) => settled.push(e));
  online(socket, false);
  const [again, rest] = syncs(socket);
  assert.equal(again.changeSet, first.changeSet, "the same id");
  assert.deepEqual(again.fragments, first.fragments, "the same members, the same fragments");
  assert.notEqual(rest.changeSet, first.changeSet);
  assert.equal(rest.fragments.length, 3, "the later ones in a batch of their own");
  reply(socket, { type: "ScopeSyncReply", replyTo: again.index, repeated: true, fragmentReplies: again.fragments.map(() => ({})) });
  assert.equal(settled.length, 4);
  assert.ok(settled.every((e) => e.rejected.length === 0));
  reply(socket, { type: "ScopeSyncReply", replyTo: rest.index, fragmentReplies: rest.fragments.map(() => ({})) });
  assert.equal(scope.queue.length, 0);
});

test("a refused member is reverted as alone; a refused object reverts every member's edit of it", async (t) => {
  const { scope, items, online, reply, ws } = await board(t);
  expire(ws());
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  const [a, b, c] = items.map((id) => scope.object(id));
  a.set("n", 1); scope.flush();
  b.set("n", "bad"); scope.flush();    // the server refuses this one
  c.set("n", 1); scope.flush();
  c.set("n", 2); scope.flush();
  c.set("label", "x"); scope.flush();  // …and c's merged fragment
  const outcomes = [];
  scope.on("settled", (e) => outcomes.push(e.rejected.map((r) => r.fragment.uuid)));
  const socket = ws();
  online(socket, false);
  const [batch] = syncs(socket);
  assert.deepEqual(batch.fragments.map((f) => f.uuid), [a.uuid, b.uuid, c.uuid]);
  const error = { code: 2, message: "a number, not a string" };
  reply(socket, { type: "ScopeSyncReply", replyTo: batch.index, fragmentReplies: [{}, { error }, { error }] });
  assert.deepEqual(outcomes, [[], [b.uuid], [c.uuid], [c.uuid], [c.uuid]]);
  assert.equal(a.get("n"), 1, "the accepted member stays");
  assert.equal(b.get("n"), 0, "the refused one is reverted");
  assert.deepEqual([c.get("n"), c.get("label")], [0, null], "back to the value before the batch");
});

/** A board whose session ended, two items' values set offline, then a new session: what it sent. */
async function twoEditsOffline(t, options) {
  const { scope, items, online, reply, ws } = await board(t, options);
  expire(ws());
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  scope.object(items[0]).set("n", 1); scope.flush();
  scope.object(items[1]).set("n", 1); scope.flush();
  const socket = ws();
  online(socket, false);
  return { scope, items, reply, socket, sent: syncs(socket) };
}

test("a reply that does not match the batch reverts every member", async (t) => {
  const { scope, items, reply, socket, sent: [batch] } = await twoEditsOffline(t);
  reply(socket, { type: "ScopeSyncReply", replyTo: batch.index, fragmentReplies: [{}] });
  assert.equal(scope.queue.length, 0);
  assert.deepEqual(items.slice(0, 2).map((id) => scope.object(id).get("n")), [0, 0]);
});

test("an original Jetstream server gets every change set alone", async (t) => {
  const { scope, sent } = await twoEditsOffline(t, { extensions: null });
  assert.deepEqual(sent.map((m) => m.changeSet), scope.queue.map((e) => e.id));
});

test("a batch stays within the server's limits: fragments per message", async (t) => {
  const { scope, online, ws } = await board(t);
  expire(ws());
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  appendOffline(scope, 10);  // 10 adds and one root change
  const socket = ws();
  socket.open();
  socket.receive({ type: "SessionCreateReply", index: 0, sessionToken: "t", extensions: EXTENSIONS, limits: { maxFragmentsPerMessage: 4 } });
  socket.receive({ type: "ScopeFetchReply", index: 1, replyTo: socket.sent.findLast((m) => m.type === "ScopeFetch").index, scopeIndex: 0 });
  const sent = syncs(socket);
  assert.ok(sent.every((m) => m.fragments.length <= 4), sent.map((m) => m.fragments.length).join(","));
  assert.ok(sent.length < 10, `${sent.length} messages`);
  assert.equal(new Set(scope.queue.map((e) => e.index)).size, sent.length);
});

test("a batch stays within the server's limits: bytes per message", async (t) => {
  const { scope, items, online, ws } = await board(t, { count: 6 });
  expire(ws());
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  for (const id of items) { scope.object(id).set("n", 1); scope.flush(); }
  const one = JSON.stringify([{ type: "ScopeSync", index: 2, scopeIndex: 0, atomic: false, fragments: scope.queue[0].fragments, changeSet: scope.queue[0].id }]).length;
  const limit = Math.floor(one * 3);  // room for about two merged fragments, not six
  const socket = ws();
  socket.open();
  socket.receive({ type: "SessionCreateReply", index: 0, sessionToken: "t", extensions: EXTENSIONS, limits: { maxMessageBytes: limit } });
  socket.receive({ type: "ScopeFetchReply", index: 1, replyTo: socket.sent.findLast((m) => m.type === "ScopeFetch").index, scopeIndex: 0 });
  const sent = syncs(socket);
  assert.ok(sent.every((m) => JSON.stringify([m]).length <= limit), sent.map((m) => JSON.stringify([m]).length).join(","));
  assert.ok(sent.some((m) => m.fragments.length > 1), "some coalesced");
  assert.equal(sent.reduce((n, m) => n + m.fragments.length, 0), 6, "every change set sent");
});

test("edits made while a resumable session is offline wait and go coalesced once it is resumed", async (t) => {
  const { client, scope, items, ws } = await board(t);
  const socket = ws();
  socket.drop(1006);
  scope.object(items[0]).set("n", 1); scope.flush();
  scope.object(items[1]).set("n", 1); scope.flush();
  assert.equal(client._unacked.filter((m) => m.type === "ScopeSync").length, 0, "not buffered one by one");
  await waitFor(() => ScriptedSocket.made.at(-1) !== socket, "a reconnect");
  const resumed = ws();
  resumed.open();
  assert.equal(resumed.sent[0].resendMissing, true);
  resumed.receive({ type: "Ping", index: 0, ack: 2, resendMissing: true });
  assert.equal(client.status, "online");
  assert.equal(syncs(resumed).length, 1);
  assert.equal(syncs(resumed)[0].fragments.length, 2);
});

test("a revision marked offline goes after the change sets made before it", async (t) => {
  const { client, scope, items, ws } = await board(t, { extensions: [...EXTENSIONS, "MarkRevision"] });
  ws().drop(1006);
  scope.object(items[0]).set("n", 1); scope.flush();
  scope.object(items[1]).set("n", 1);
  scope.markRevision("offline").catch(() => {});
  assert.deepEqual(client._unacked.slice(-2).map((m) => m.type), ["ScopeSync", "MarkRevision"]);
  assert.equal(client._unacked.at(-2).fragments.length, 2, "both edits, coalesced, before it");
});

test("a collection edited after a remote value came in ends the batch; without one, it joins", async (t) => {
  for (const remote of [true, false]) {
    const { scope, items, root, ws } = await board(t);
    const socket = ws();
    socket.drop(1006);
    scope.root.insert("items", scope.create("Item", { n: 1 })); scope.flush();
    await waitFor(() => ScriptedSocket.made.at(-1) !== socket, "a reconnect");
    const resumed = ws();
    resumed.open();
    // While resuming, the server resends a change another client made: it took items[0] out.
    if (remote) resumed.receive({ type: "ScopeSync", index: 3, scopeIndex: 0, fragments: [{ type: "change", uuid: root, clsName: "Board", properties: { items: items.slice(1) } }] });
    scope.root.insert("items", scope.create("Item", { n: 2 })); scope.flush();
    resumed.receive({ type: "Ping", index: 0, ack: 2, resendMissing: true });
    const sent = syncs(resumed);
    assert.equal(sent.length, remote ? 2 : 1, remote ? "each alone: the second edits a value the first one's base does not lead to" : "one batch");
    if (remote) assert.ok(!scope.root.get("items").includes(items[0]));
  }
});

test("change sets sent alone before a new session go alone again, under their ids; those never sent are coalesced", async (t) => {
  const { scope, items, online, ws } = await board(t);
  scope.object(items[0]).set("n", 1); scope.flush();
  scope.object(items[1]).set("n", 1); scope.flush();
  const [first, second] = syncs(ws()).map((m) => m.changeSet);
  expire(ws());  // before their replies
  await waitFor(() => ScriptedSocket.made.at(-1).readyState === 0, "a new socket");
  scope.object(items[2]).set("n", 1); scope.flush();
  scope.object(items[0]).set("n", 2); scope.flush();
  const socket = ws();
  online(socket, false);
  const sent = syncs(socket);
  assert.deepEqual(sent.slice(0, 2).map((m) => m.changeSet), [first, second], "alone, as before: a server may have applied them");
  assert.equal(sent.length, 3);
  assert.equal(sent[2].fragments.length, 2, "the two made offline, in one batch");
  // And in a saved replica: a restored page sends them alone too.
  assert.deepEqual(scope._saved().queue.map((e) => [e.sentAlone, e.batch]), [[true, null], [true, null], [false, sent[2].changeSet], [false, sent[2].changeSet]]);
  const page = new Scope("Board", { rootClass: "Board" });
  page._restore(JSON.parse(JSON.stringify(scope._saved())));
  assert.deepEqual(page.queue.map((e) => [e.sentAlone, e.batch]), [[true, null], [true, null], [false, sent[2].changeSet], [false, sent[2].changeSet]]);
});
