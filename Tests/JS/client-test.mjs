// contrail.js's session handling without a server (`node --test Tests/JS/`): the Client is given a
// scripted WebSocket (its `WebSocket` option), and each test plays the server's side of the exchange.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, VERSION, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { next, ScriptedSocket } from "./harness.mjs";

/** A client on a scripted socket, closed when the test ends, with quick reconnects. */
function scriptedClient(t, options = {}) {
  const client = new Client("ws://server.test/", { WebSocket: ScriptedSocket, backoff: { min: 1, max: 1 }, ...options });
  t.after(() => client.close());
  return client;
}

/** Plays the server through session create, fetch and an empty full state; returns the socket and the root's UUID. */
async function online(client, scope) {
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(scope);
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-1" });
  const fetch = ws.sent.find((m) => m.type === "ScopeFetch");
  const root = uuid();
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: fetch.index, scopeIndex: 0 },
             { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [{ type: "add", uuid: root, clsName: "Canvas", properties: {} }] });
  await fetched;
  return { ws, root };
}

test("a session, a fetch, a change set and its reply", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const statuses = [];
  client.on("status", (s) => statuses.push(s));
  const { ws, root } = await online(client, scope);
  assert.deepEqual(ws.sent.slice(0, 2), [
    { type: "SessionCreate", index: 0, version: VERSION, params: {} },
    { type: "ScopeFetch", index: 1, name: "Canvas", params: {} },
  ]);
  assert.deepEqual(statuses, ["connecting", "creating", "online"]);
  assert.equal(scope.root.uuid, root);
  scope.root.set("name", "n");
  scope.flush();
  const sync = ws.sent.at(-1);
  // Each change set carries its own id (`changeSet`, Protocol §8.11), so a server applies it once.
  assert.match(sync.changeSet, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(sync, { type: "ScopeSync", index: 2, scopeIndex: 0, atomic: false, changeSet: scope.queue[0].id,
                           fragments: [{ type: "change", uuid: root, clsName: "Canvas", properties: { name: "n" } }] });
  const settled = next(scope, "settled");
  ws.receive({ type: "ScopeSyncReply", index: 3, replyTo: 2, fragmentReplies: [{}] });
  assert.deepEqual((await settled).rejected, []);
  assert.equal(scope.queue.length, 0);
  // The server's ping acknowledges what it received: the client stops keeping it for resend.
  assert.equal(client._unacked.length, 2);
  ws.receive({ type: "Ping", index: 0, ack: 2, resendMissing: false });
  assert.equal(client._unacked.length, 0);
});

test("a denied session rejects the fetch and does not reconnect", async (t) => {
  const client = scriptedClient(t);
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(new Scope("Canvas"));
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, error: { code: 1, message: "no entry" } });
  await assert.rejects(fetched, /no entry/);
  assert.equal(client.status, "denied");
  assert.equal(ws.closed?.code, 1000);
  ws.drop(1000);
  assert.equal(client.status, "denied");
  assert.equal(ScriptedSocket.made.length, before + 1, "no second socket");
});

test("a URL routed by scope (?scope=, README: Running a cluster) keeps its query when it resumes", async (t) => {
  const routed = new Client("ws://server.test/?scope=Canvas", { WebSocket: ScriptedSocket, backoff: { min: 1, max: 1 } });
  t.after(() => routed.close());
  const { ws } = await online(routed, new Scope("Canvas", { rootClass: "Canvas" }));
  assert.equal(ws.url, "ws://server.test/?scope=Canvas");
  const reconnecting = next(routed, "status", (s) => s === "connecting");
  ws.drop(1006);
  await reconnecting;
  assert.equal(ScriptedSocket.made.at(-1).url, "ws://server.test/?scope=Canvas&x-jetstream-sessiontoken=token-1");
});

test("a dropped socket resumes the session: token in the URL, then a resend exchange", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { ws } = await online(client, scope);
  const reconnecting = next(client, "status", (s) => s === "connecting");
  ws.drop(1006);
  assert.equal(client.status, "offline");
  scope.root.set("name", "while offline");
  scope.flush();
  await reconnecting;
  const again = ScriptedSocket.made.at(-1);
  assert.equal(again.url, "ws://server.test/?x-jetstream-sessiontoken=token-1");
  again.open();
  assert.equal(client.status, "resuming");
  assert.deepEqual(again.sent, [{ type: "Ping", index: 0, ack: 2, resendMissing: true }], "only the resume ping before the server answers");
  again.receive({ type: "Ping", index: 0, ack: 1, resendMissing: true });
  assert.equal(client.status, "online");
  assert.deepEqual(again.sent.slice(1).map((m) => [m.type, m.index]), [["ScopeSync", 2]], "what the server did not acknowledge is sent again");
});

test("a session the server no longer knows (4097) is replaced by a new one", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { ws } = await online(client, scope);
  const reconnecting = next(client, "status", (s) => s === "connecting");
  ws.drop(4097, "session expired");
  assert.equal(client._token, null);
  await reconnecting;
  const again = ScriptedSocket.made.at(-1);
  assert.equal(again.url, "ws://server.test/", "no token to resume with");
  again.open();
  assert.deepEqual(again.sent.map((m) => m.type), ["SessionCreate"]);
  again.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-2" });
  assert.deepEqual(again.sent.at(-1), { type: "ScopeFetch", index: 1, name: "Canvas", params: {} }, "the scope is fetched again");
});

test("a gap in the server's message indexes forces a reconnect", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { ws } = await online(client, scope);
  ws.receive({ type: "ScopeSync", index: 3, scopeIndex: 0, fragments: [] });
  assert.equal(client.status, "online", "the next index is accepted");
  ws.receive({ type: "ScopeSync", index: 5, scopeIndex: 0, fragments: [] });
  assert.equal(ws.closed?.code, 4000);
  assert.equal(client.status, "offline");
});

test("a handshake that never completes is given up after connectTimeout and tried again", async (t) => {
  const client = scriptedClient(t, { connectTimeout: 30 });
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { ws } = await online(client, scope);
  const reconnecting = next(client, "status", (s) => s === "connecting");
  ws.drop(1006);
  await reconnecting;
  const silent = ScriptedSocket.made.at(-1);
  silent.open();  // the socket opens, the server never answers the resume ping
  assert.equal(client.status, "resuming");
  await next(client, "status", (s) => s === "offline", 2_000);
  assert.equal(silent.closed?.code, 4000, "the stuck socket is closed");
  await next(client, "status", (s) => s === "connecting", 2_000);
  const retry = ScriptedSocket.made.at(-1);
  assert.notEqual(retry, silent, "a new socket");
  // Positive control: a handshake that completes in time stays up.
  retry.open();
  retry.receive({ type: "Ping", index: 0, ack: 0, resendMissing: true });
  assert.equal(client.status, "online");
  assert.equal(retry.closed, null);
});

test("a change set over the server's advertised limits is never sent: reverted, settled as rejected, later ones go on", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(scope);
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-1", limits: { maxMessageBytes: 2000, maxFragmentsPerMessage: 10 } });
  const fetch = ws.sent.find((m) => m.type === "ScopeFetch");
  const root = uuid();
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: fetch.index, scopeIndex: 0 },
             { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [{ type: "add", uuid: root, clsName: "Canvas", properties: { name: "old" } }] });
  await fetched;
  const sentBefore = ws.sent.length;
  const settled = next(scope, "settled");
  scope.root.set("name", "é".repeat(1500));  // 3,000 bytes of UTF-8 in 1,500 UTF-16 units
  scope.flush();
  const outcome = await settled;
  assert.equal(outcome.rejected.length, 1);
  assert.equal(outcome.rejected[0].error.type, "limit-exceeded");
  assert.equal(scope.root.properties.name, "old", "the refused edit is reverted");
  assert.equal(ws.sent.length, sentBefore, "nothing was sent");
  assert.equal(scope.queue.length, 0);
  // Positive control: a change set within the limits goes out.
  scope.root.set("name", "new");
  scope.flush();
  assert.equal(ws.sent.at(-1).type, "ScopeSync");
  assert.equal(ws.sent.at(-1).fragments[0].properties.name, "new");
});

test("without advertised limits (an original server) a large change set is sent", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { ws } = await online(client, scope);
  scope.root.set("name", "é".repeat(1500));
  scope.flush();
  assert.equal(ws.sent.at(-1).type, "ScopeSync");
  assert.equal(ws.sent.at(-1).fragments[0].properties.name.length, 1500);
});

test("an app that knows fewer classes keeps the others and the values it does not know (Protocol §8.23)", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Board", { rootClass: "Board", classes: ["Board", "Card"] });
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(scope);
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-1" });
  const root = uuid(), person = uuid(), card = uuid(), sticker = uuid();
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: 1, scopeIndex: 0 },
             { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [
               { type: "change", uuid: root, clsName: "Board", properties: { title: "plan", owner: person, tags: ["a", "b"], cards: [card, sticker] } },
               { type: "add", uuid: person, clsName: "Person", properties: { name: "Ada" } },
               { type: "add", uuid: card, clsName: "Card", properties: { text: "first", note: "from v2" } },
               { type: "add", uuid: sticker, clsName: "Sticker", properties: { label: "hot" } },
             ] });
  await fetched;
  // The app sees the card only; the sticker stays in place when it inserts before the card.
  assert.deepEqual(scope.root.items("cards").map((m) => m.uuid), [card]);
  const added = scope.create("Card", { text: "new" });
  scope.modify(() => scope.root.insert("cards", added, 1));
  const sync = ws.sent.at(-1);
  const change = sync.fragments.find((f) => f.uuid === root);
  assert.deepEqual(change.properties.cards, [card, sticker, added.uuid]);
  assert.deepEqual(change.bases, { cards: [card, sticker] });
  scope.modify(() => scope.root.insert("cards", scope.create("Card", {}), 0));
  assert.deepEqual(ws.sent.at(-1).fragments.find((f) => f.uuid === root).properties.cards.slice(1), [card, sticker, added.uuid]);
  // Nothing it does not know is dropped: the whole state, the owner, the tags, the note.
  const state = scope.stateJSON();
  assert.equal(state.objects[person].properties.name, "Ada");
  assert.equal(state.objects[sticker].clsName, "Sticker");
  assert.equal(state.objects[card].properties.note, "from v2");
  assert.deepEqual(state.objects[root].properties.tags, ["a", "b"]);
  assert.equal(state.objects[root].properties.owner, person);
  // A remote change of an object of a class it does not know reaches it too.
  ws.receive({ type: "ScopeSync", index: 3, scopeIndex: 0, fragments: [{ type: "change", uuid: person, clsName: "Person", properties: { name: "Grace" } }] });
  assert.equal(scope.object(person).get("name"), "Grace");
});

test("a drain (close 4099) opens a new session; the backoff starts over only after a healthy spell", async (t) => {
  const client = scriptedClient(t, { backoff: { min: 1, max: 1, healthyAfter: 40 } });
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { ws } = await online(client, scope);
  const before = ScriptedSocket.made.length;
  ws.drop(4099, JSON.stringify({ message: "Server is draining", type: "server-draining" }));
  assert.equal(client._attempt, 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const next = ScriptedSocket.made[before];
  assert.ok(next, "reconnected");
  assert.ok(!next.url.toLowerCase().includes("sessiontoken"), `a new session, not a resume: ${next.url}`);
  next.open();
  assert.equal(next.sent[0].type, "SessionCreate");
  next.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-2" });
  const fetch = next.sent.find((m) => m.type === "ScopeFetch");
  assert.ok(fetch, "the scope is fetched again");
  next.receive({ type: "ScopeFetchReply", index: 1, replyTo: fetch.index, scopeIndex: 0 },
               { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: scope.root.uuid, fragments: [{ type: "add", uuid: scope.root.uuid, clsName: "Canvas", properties: {} }] });
  assert.equal(client.status, "online");
  assert.equal(client._attempt, 1, "online again, but not yet forgiven");
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.equal(client._attempt, 0, "healthy for longer than healthyAfter: the backoff starts over");
});
