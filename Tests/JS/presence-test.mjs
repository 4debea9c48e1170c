// contrail-presence.js without a server (`node --test Tests/JS/`): a scripted WebSocket plays the
// server, as in client-test.mjs. Presence (Protocol §8.20) goes only to a server that lists it, is
// throttled (latest wins), bounded by the server's advertised size, sent again after a resume, and
// the peers' joins, changes and leaves become events.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { presence, PresenceTooLarge } from "../../Sources/ContrailServer/Pages/Assets/contrail-presence.js";
import { ScriptedSocket, when, ticks } from "./harness.mjs";

/** A client on a scripted socket with `scope` fetched; the server lists `extensions` and `limits`. */
async function online(t, { extensions = ["ScopeDetach", "Presence"], limits } = {}) {
  const client = new Client("ws://server.test/", { WebSocket: ScriptedSocket, backoff: { min: 1, max: 1 } });
  t.after(() => client.close());
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const here = presence(client, scope);
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(scope);
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-1", extensions, limits });
  const fetch = ws.sent.find((m) => m.type === "ScopeFetch");
  const root = uuid();
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: fetch.index, scopeIndex: 0 },
             { type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [{ type: "add", uuid: root, clsName: "Canvas", properties: {} }] });
  await fetched;
  return { client, scope, here, ws };
}

const sentPresence = (ws) => ws.sent.filter((m) => m.type === "Presence");

test("presence goes only to a server that lists it", async (t) => {
  const jetstream = await online(t, { extensions: [] });
  jetstream.here.publish({ name: "Ada" });
  assert.deepEqual(sentPresence(jetstream.ws), [], "a Jetstream server never sees it");
  const contrail = await online(t);
  assert.deepEqual(sentPresence(contrail.ws), [{ type: "Presence", index: 0, scopeIndex: 0, value: null }], "subscribed once attached");
  contrail.here.publish({ name: "Ada" });   // within the interval of that send: it waits for it
  await when(ticks(), ["tick"], () => sentPresence(contrail.ws).length === 2, "the value did not go");
  assert.deepEqual(sentPresence(contrail.ws).at(-1), { type: "Presence", index: 0, scopeIndex: 0, value: { name: "Ada" } });
});

test("changes within the interval wait, and the latest wins", async (t) => {
  // 500 ms apart: wide enough that a loaded machine does not stretch the five publishes below over
  // one interval (at 20 ms apart, a pause of the process between two of them let both go at once).
  const { here, ws } = await online(t, { limits: { presenceUpdatesPerSecond: 2 } });
  await new Promise((resolve) => setTimeout(resolve, 510));   // past the subscribing send's interval
  for (let x = 1; x <= 5; x++) here.publish({ x });
  assert.deepEqual(sentPresence(ws).slice(1).map((m) => m.value), [{ x: 1 }], "the first goes at once");
  await when(ticks(), ["tick"], () => sentPresence(ws).length === 3, "the deferred send did not go");
  assert.deepEqual(sentPresence(ws)[2].value, { x: 5 });
});

test("a value over the server's limit is refused before sending", async (t) => {
  const { here, ws } = await online(t, { limits: { maxPresenceBytes: 32 } });
  assert.throws(() => here.publish({ name: "x".repeat(40) }), (error) => error instanceof PresenceTooLarge && error.limit === 32);
  assert.equal(here.value, null);
  here.publish({ name: "Ada" });   // positive control
  await when(ticks(), ["tick"], () => sentPresence(ws).length === 2, "the value did not go");
  assert.deepEqual(sentPresence(ws).at(-1).value, { name: "Ada" });
});

test("peers join, change and leave; all leave offline; presence goes again after a resume", async (t) => {
  const { here, ws } = await online(t);
  const events = [];
  for (const type of ["join", "change", "leave"]) here.on(type, ({ peer }) => events.push([type, peer.id, peer.value?.name ?? null]));
  ws.receive({ type: "PresencePeers", index: 0, scopeIndex: 0, replace: true, peers: [
    { peer: "p1", user: "ada", value: { name: "Ada" } }, { peer: "p2", value: { name: "Bo" } }] });
  ws.receive({ type: "PresencePeers", index: 0, scopeIndex: 0, peers: [{ peer: "p1", user: "ada", value: { name: "Ada2" } }] });
  ws.receive({ type: "PresencePeers", index: 0, scopeIndex: 0, peers: [{ peer: "p2", value: null }] });
  ws.receive({ type: "PresencePeers", index: 0, scopeIndex: 1, peers: [{ peer: "p9", value: { name: "other scope" } }] });
  assert.deepEqual(events, [["join", "p1", "Ada"], ["join", "p2", "Bo"], ["change", "p1", "Ada2"], ["leave", "p2", "Bo"]]);
  assert.deepEqual([...here.peers.values()], [{ id: "p1", user: "ada", value: { name: "Ada2" } }]);
  // Unsequenced: the next sequenced message is still taken in order.
  ws.receive({ type: "ScopeSync", index: 3, scopeIndex: 0, fragments: [] });
  assert.equal(ws.closed, null, "no reconnect for an out-of-order index");
  here.publish({ name: "Me" });
  ws.drop(1006);
  assert.equal(here.peers.size, 0, "offline: nobody is known to be here");
  assert.deepEqual(events.at(-1), ["leave", "p1", "Ada2"]);
  await when(ticks(), ["tick"], () => ScriptedSocket.made.at(-1) !== ws, "no reconnect");
  const resumed = ScriptedSocket.made.at(-1);
  resumed.open();
  resumed.receive({ type: "Ping", index: 0, ack: 0, resendMissing: true });
  assert.deepEqual(sentPresence(resumed), [{ type: "Presence", index: 0, scopeIndex: 0, value: { name: "Me" } }]);
});
