// Coalescing against a real Contrail server (`node --test Tests/JS/`, with CONTRAIL_TEST_URL set:
// PagesNodeTests.swift starts the server). A property test: random offline histories (adds, value
// changes, collection inserts, removals and moves within and between collections, atomic change
// sets, shared-text edits) made twice, on two scopes, by a client that coalesces and one that sends
// every change set alone (the positive control); after the reconnect both scopes end the same on
// the server (compared with every UUID named by the item's label), every change set settles the same
// way, each replica equals a fresh fetch, and the coalescing client sends far fewer messages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { SharedTextBinding } from "../../Sources/ContrailServer/Pages/Assets/contrail-text.js";
import { needsServer, settled, when, ticks } from "./harness.mjs";

const reason = needsServer("CONTRAIL_TEST_URL", "a Contrail server");
const url = process.env.CONTRAIL_TEST_URL;

/** A seeded generator (mulberry32): `rng(n)` is an integer in [0, n). */
function random(seed) {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/**
 * A client whose connection the test can take away: `offline()` closes its socket and refuses new
 * ones, `online()` lets it reconnect; `syncs` counts the ScopeSync messages it sent; while
 * `dropReplies`, the frames with a ScopeSyncReply are lost on the way.
 */
function gatedClient(coalesce) {
  const gate = { blocked: false, dropReplies: false, syncs: 0, sockets: [] };
  class Socket extends WebSocket {
    constructor(address) {
      if (gate.blocked) throw new Error("offline (the test's gate)");
      super(address);
      gate.sockets.push(this);
    }
    send(text) {
      if (text.includes('"type":"ScopeSync"')) gate.syncs++;
      super.send(text);
    }
    set onmessage(fn) { super.onmessage = (event) => { if (!gate.dropReplies || !String(event.data).includes('"type":"ScopeSyncReply"')) fn(event); }; }
    get onmessage() { return super.onmessage; }
  }
  const client = new Client(url, { WebSocket: Socket, coalesce, backoff: { min: 10, max: 50, healthyAfter: 1_000 } });
  client.on("error", () => {});  // the refused connections while offline
  gate.offline = () => { gate.blocked = true; for (const ws of gate.sockets) ws.close(4000, "test offline"); };
  gate.online = () => { gate.blocked = false; };
  return { client, gate };
}

/** The scope's state with each UUID named by its object's label ("root" for the root), so two scopes compare. */
function named(state) {
  const names = new Map([[state.root, "root"]]);
  for (const [id, o] of Object.entries(state.objects)) if (o.properties.label) names.set(id, o.properties.label);
  const name = (v) => (typeof v === "string" && names.has(v) ? names.get(v) : Array.isArray(v) ? v.map(name) : v);
  const objects = {};
  for (const [id, o] of Object.entries(state.objects)) {
    objects[names.get(id) ?? `unnamed ${id}`] = { clsName: o.clsName, properties: Object.fromEntries(Object.entries(o.properties).map(([k, v]) => [k, name(v)])) };
  }
  return objects;
}

/** Makes random history `seed` on `scope` (offline): `count` change sets, item labels from "i0" on; returns the number made. */
function history(scope, text, seed, count, start) {
  const rng = random(seed);
  let next = start;
  const list = (key) => scope.root.get(key) ?? [];
  const pick = (l) => l[rng(l.length)];
  const edit = () => {
    const key = rng(4) ? "items" : "other", other = key === "items" ? "other" : "items", items = list(key);
    const r = rng(100);
    if (r < 35 || !items.length) {
      const item = scope.create("Item", { label: `i${next++}`, n: 0 });
      scope.root.insert(key, item, rng(items.length + 1));
    } else if (r < 47) {
      scope.root.remove(key, scope.object(pick(items)));
    } else if (r < 59 && items.length > 1) {
      const moved = items.slice(), [id] = moved.splice(rng(moved.length), 1);
      moved.splice(rng(moved.length + 1), 0, id);
      scope.root.set(key, moved);
    } else if (r < 69) {
      const id = pick(items);
      scope.root.set(key, items.filter((x) => x !== id));
      const target = list(other).slice();
      target.splice(rng(target.length + 1), 0, id);
      scope.root.set(other, target);
    } else if (r < 88) {
      const item = scope.object(pick(items));
      item.set("n", (item.get("n") ?? 0) + 1 + rng(5));
    } else if (r < 94) {
      scope.root.set("title", `t${rng(1000)}`);
    } else {
      text.insert(String.fromCharCode(97 + rng(26)), rng([...text.text].length + 1));
    }
  };
  for (let i = 0; i < count; i++) {
    const r = rng(100);
    if (r < 85) { edit(); scope.flush(); }
    else if (r < 93) scope.modify(() => { for (let k = 1 + rng(3); k > 0; k--) edit(); });
    else scope.modify(() => { for (let k = 1 + rng(3); k > 0; k--) edit(); }, { atomic: true });
  }
  return next;
}

/** A fresh fetch of scope `name` from the server: its state. */
async function serverState(name) {
  const reader = new Client(url), fresh = new Scope(name, { rootClass: "Board" });
  try { await reader.fetch(fresh); return fresh.stateJSON(); } finally { reader.close(); }
}

test("coalesced offline change sets end on the server as they do sent one by one", { skip: reason, timeout: 240_000 }, async (t) => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const runs = [];
    for (const coalesce of [true, false]) {
      const name = `NodeCoalescing-${seed}-${coalesce}-${uuid()}`;
      const { client, gate } = gatedClient(coalesce);
      const scope = new Scope(name, { rootClass: "Board", changeInterval: 1 });
      try {
        await client.fetch(scope);
        const text = new SharedTextBinding(scope, scope.root, "note");
        // Online first: some items, settled.
        scope.modify(() => { for (let i = 0; i < 6; i++) scope.root.insert(i % 3 ? "items" : "other", scope.create("Item", { label: `s${i}`, n: 0 })); });
        await settled(scope);
        gate.offline();
        await when(client, ["status"], () => client.status === "offline", "the client went offline");
        const outcomes = [];
        scope.on("settled", ({ fragments, rejected }) => outcomes.push(`${fragments.length}/${rejected.length}`));
        history(scope, text, seed, 150, 0);
        const made = scope.queue.length;
        const before = gate.syncs;
        gate.online();
        await when(ticks(), ["tick"], () => scope.queue.length === 0 && scope._pending.size === 0 && client.status === "online", "everything settled", 120_000);
        const state = await serverState(name);
        await when(ticks(), ["tick"], () => JSON.stringify(scope.stateJSON()) === JSON.stringify(state), `the replica (coalesce ${coalesce}) equals a fresh fetch`, 20_000);
        runs.push({ made, outcomes, messages: gate.syncs - before, state: named(state) });
      } finally {
        client.close();
      }
    }
    const [on, off] = runs;
    assert.equal(on.made, off.made, `seed ${seed}: the same history`);
    assert.ok(off.made > 100, `seed ${seed}: ${off.made} change sets`);
    assert.deepEqual(on.state, off.state, `seed ${seed}: the server ends the same`);
    assert.deepEqual(on.outcomes, off.outcomes, `seed ${seed}: every change set settles as alone`);
    assert.ok(on.outcomes.every((o) => o.endsWith("/0")), `seed ${seed}: nothing refused`);
    assert.equal(off.messages, off.made, `seed ${seed}: alone, one message per change set`);
    // What may not join (atomic, shared text, an add of an object that leaves the tree again) goes alone and ends a batch.
    assert.ok(on.messages * 5 < off.messages * 3, `seed ${seed}: ${on.messages} messages coalesced, ${off.messages} alone`);
    t.diagnostic(`seed ${seed}: ${off.made} change sets in ${on.messages} messages coalesced, ${off.messages} alone`);
  }
});

test("a batch whose reply was lost goes again under its id in a new session, and the server does not apply it twice", { skip: reason, timeout: 120_000 }, async (t) => {
  // Control: the same batch under a new id is applied again (the check can fail).
  for (const sameId of [true, false]) {
    const name = `NodeCoalescingRepeat-${sameId}-${uuid()}`;
    const { client, gate } = gatedClient(true);
    const scope = new Scope(name, { rootClass: "Board", changeInterval: 1 });
    const other = new Client(url), theirs = new Scope(name, { rootClass: "Board" });
    try {
      await client.fetch(scope);
      await other.fetch(theirs);
      gate.offline();
      await when(client, ["status"], () => client.status === "offline", "the client went offline");
      const [x] = ["x", "y"].map((label) => { const item = scope.create("Item", { label }); scope.root.insert("items", item); scope.flush(); return item; });
      gate.dropReplies = true;  // the batch arrives and is applied; its reply is lost
      const before = gate.syncs;
      gate.online();
      await when(theirs, ["changeset"], () => (theirs.root.get("items") ?? []).length === 2, "the other client sees the batch applied", 30_000);
      assert.equal(gate.syncs - before, 1, "one message");
      gate.offline();
      // Meanwhile the other client takes x out.
      theirs.root.remove("items", theirs.object(x.uuid));
      await settled(theirs);
      // The session ends (the server no longer knows its token): a new one resends what is unsettled.
      assert.equal(scope.queue.length, 2);
      if (!sameId) for (const entry of scope.queue) entry.batch = null;
      client._token = uuid();
      gate.dropReplies = false;
      gate.online();
      await when(ticks(), ["tick"], () => scope.queue.length === 0 && client.status === "online", "everything settled", 60_000);
      const state = await serverState(name);
      const items = state.objects[state.root].properties.items.map((id) => state.objects[id].properties.label);
      if (sameId) assert.deepEqual(items, ["y"], "answered as a repeat: x stays out");
      else assert.deepEqual(items, ["x", "y"], "control: under a new id, the batch is applied again and x is back");
      await when(ticks(), ["tick"], () => JSON.stringify(scope.stateJSON()) === JSON.stringify(state), "the replica equals a fresh fetch", 20_000);
    } finally {
      client.close();
      other.close();
    }
  }
});
