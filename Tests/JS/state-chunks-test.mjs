// contrail.js reading a large state in parts (Protocol §8.25) from a scripted server: it asks for
// parts only from a server that lists ScopeStateChunk, acknowledges each, reports progress, applies
// the state whole after the last part with the change sets that came meanwhile, and refuses parts
// that do not follow.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { ScriptedSocket } from "./harness.mjs";

function scriptedClient(t) {
  const client = new Client("ws://server.test/", { WebSocket: ScriptedSocket, backoff: { min: 1, max: 1 } });
  t.after(() => client.close());
  return client;
}

/** Session and fetch against a server listing `extensions`; returns the socket, the fetch and its promise. */
function fetching(client, scope, extensions) {
  const before = ScriptedSocket.made.length;
  const fetched = client.fetch(scope);
  const ws = ScriptedSocket.made[before];
  ws.open();
  ws.receive({ type: "SessionCreateReply", index: 0, sessionToken: "token-1", extensions });
  const fetch = ws.sent.find((m) => m.type === "ScopeFetch");
  ws.receive({ type: "ScopeFetchReply", index: 1, replyTo: fetch.index, scopeIndex: 0 });
  return { ws, fetch, fetched };
}

/** A root with `n` shapes, as a state's fragments. */
function state(root, n) {
  const shapes = Array.from({ length: n }, () => uuid());
  return [{ type: "change", uuid: root, clsName: "Canvas", properties: { shapes } },
          ...shapes.map((s, i) => ({ type: "add", uuid: s, clsName: "Shape", properties: { x: i } }))];
}

const part = (index, root, total, offset, fragments) => ({ type: "ScopeStateChunk", index, scopeIndex: 0, rootUUID: root, total, offset, fragments });

test("parts are acknowledged, reported and applied whole after the last, with what came meanwhile", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const progress = [];
  client.on("progress", (e) => progress.push(`${e.received}/${e.total}`));
  const { ws, fetch, fetched } = fetching(client, scope, ["ScopeStateChunk"]);
  assert.equal(fetch.chunks, true);
  const root = uuid();
  const fragments = state(root, 4);
  ws.receive(part(2, root, 5, 0, fragments.slice(0, 2)));
  assert.deepEqual(ws.sent.at(-1), { type: "Ping", index: 0, ack: 2, resendMissing: false });
  // A change set after the snapshot arrives between the parts: it follows the state.
  ws.receive({ type: "ScopeSync", index: 3, scopeIndex: 0, fragments: [{ type: "change", uuid: fragments[1].uuid, clsName: "Shape", properties: { x: 99 } }] });
  assert.equal((scope.root.get("shapes") ?? []).length, 0, "nothing applied before the last part");
  ws.receive(part(4, root, 5, 2, fragments.slice(2, 5)));
  await fetched;
  assert.equal(scope.root.uuid, root);
  assert.equal(scope.root.get("shapes").length, 4);
  assert.equal(scope.object(fragments[1].uuid).get("x"), 99);
  assert.deepEqual(progress, ["2/5", "5/5"]);
});

test("a server without the extension is not asked for parts", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const { fetch } = fetching(client, scope, []);
  assert.equal(fetch.chunks, undefined);
});

test("a part that does not follow refuses the state", async (t) => {
  const client = scriptedClient(t);
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const errors = [];
  client.on("error", (e) => errors.push(e.message));
  const { ws, fetched } = fetching(client, scope, ["ScopeStateChunk"]);
  const root = uuid();
  const fragments = state(root, 4);
  ws.receive(part(2, root, 5, 0, fragments.slice(0, 2)));
  ws.receive(part(3, root, 5, 3, fragments.slice(3, 5)));   // a gap
  await assert.rejects(fetched, /invalid ScopeStateChunk/);
  ws.receive(part(4, root, 5, 2, fragments.slice(2, 5)));   // the rest is dropped
  assert.equal(errors.length, 1);
  assert.equal((scope.root.get("shapes") ?? []).length, 0);
});
