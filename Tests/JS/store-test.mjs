// contrail-store.js without a browser (`node --test Tests/JS/`): Node has no IndexedDB, so the store is
// given a small in-memory one (`FakeIndexedDB`, the calls the store makes and nothing more) and a fake
// Web Locks; BrowserTests.swift runs the real ones in Chromium, across real page loads.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { ScopeStore, StoreError } from "../../Sources/ContrailServer/Pages/Assets/contrail-store.js";

/** IndexedDB's request/transaction shape over Maps: `open`, object stores, get/put/delete; `failPut` makes puts abort. */
class FakeIndexedDB {
  constructor() { this.databases = new Map(); this.failPut = null; }
  open(name) {
    const request = {};
    setTimeout(() => {
      let stores = this.databases.get(name);
      const fresh = !stores;
      if (fresh) { stores = new Map(); this.databases.set(name, stores); }
      request.result = {
        objectStoreNames: { contains: (n) => stores.has(n) },
        createObjectStore: (n) => stores.set(n, new Map()),
        transaction: (n) => this.#transaction(stores.get(n)),
        close() {},
      };
      if (fresh) request.onupgradeneeded?.();
      request.onsuccess?.();
    });
    return request;
  }
  #transaction(store) {
    const transaction = {};
    let failure = null;
    const later = (request, fn) => { setTimeout(() => { request.result = fn(); request.onsuccess?.(); }); return request; };
    transaction.objectStore = () => ({
      get: (key) => later({}, () => store.get(key)),
      put: (value, key) => { if (this.failPut) failure = this.failPut; else store.set(key, value); return {}; },
      delete: (key) => { store.delete(key); return {}; },
    });
    setTimeout(() => { if (failure) { transaction.error = failure; transaction.onabort?.(); } else transaction.oncomplete?.(); }, 1);
    return transaction;
  }
  /** The stored text under `key` in database "contrail". */
  record(key) { return this.databases.get("contrail")?.get("scopes")?.get(key); }
  setRecord(key, value) {
    if (!this.databases.has("contrail")) this.databases.set("contrail", new Map([["scopes", new Map()]]));
    this.databases.get("contrail").get("scopes").set(key, value);
  }
}

/** Web Locks' `request(name, {signal}, callback)`: exclusive, released when the callback's promise settles. */
class FakeLocks {
  held = new Set();
  async request(name, { signal }, callback) {
    while (this.held.has(name)) {
      if (signal?.aborted) throw Object.assign(new Error("aborted"), { name: "TimeoutError" });
      await new Promise((r) => setTimeout(r, 5));
    }
    this.held.add(name);
    try { return await callback(); } finally { this.held.delete(name); }
  }
}

/** A scope that received the server's full state (an empty Canvas root), as after a fetch. */
function attachedScope(name = "Canvas", changeInterval = 10) {
  const scope = new Scope(name, { rootClass: "Canvas", changeInterval });
  const root = uuid();
  scope._applyRemote([{ type: "add", uuid: root, clsName: "Canvas", properties: {} }], root);
  return scope;
}

const open = (scope, idb, options = {}) => ScopeStore.open(scope, { indexedDB: idb, locks: new FakeLocks(), saveDelay: 1, ...options });

test("a scope's replica and unsettled change sets come back in a new page, with their ids, and edits go on", async () => {
  const idb = new FakeIndexedDB();
  const scope = attachedScope("Canvas", 1e9);  // no flush on a timer: the unflushed edit stays unflushed
  const store = await open(scope, idb);
  assert.equal(store.restored, null, "nothing was stored");
  let shape;
  scope.modify(() => { shape = scope.create("Shape", { x: 1 }); scope.root.insert("shapes", shape); });
  scope.modify(() => shape.set("x", 2));
  scope.root.set("name", "not flushed yet");   // an edit still waiting for its flush is kept too
  await store.close();  // the page goes away
  scope.flush();
  const ids = scope.queue.map((e) => e.id).slice(0, 2);

  const page = new Scope("Canvas", { rootClass: "Canvas" });
  const states = [];
  page.on("state", (e) => states.push(e));
  const reopened = await open(page, idb);
  assert.deepEqual(reopened.restored, { objects: 2, changeSets: 2 });
  assert.equal(states.length, 1, "the page can draw at once");
  assert.equal(states[0].restored, true);
  assert.deepEqual(page.stateJSON(), scope.stateJSON());
  assert.deepEqual(page.queue.map((e) => e.id), ids, "the same change-set ids");
  assert.deepEqual(page.queue.map((e) => e.fragments), scope.queue.slice(0, 2).map((e) => e.fragments));
  page.flush();  // the restored unflushed edit becomes a change set of its own
  assert.equal(page.queue.length, 3);
  assert.deepEqual(page.queue[2].fragments[0].properties, { name: "not flushed yet" });
  page.modify(() => page.object(shape.uuid).set("x", 3));  // edits go on offline
  assert.equal(page.queue.length, 4);
  await reopened.saved();
  const third = await open(new Scope("Canvas"), idb, { locks: new FakeLocks() });
  assert.deepEqual(third.restored, { objects: 2, changeSets: 4 });
});

test("restored change sets go out after the fetch with their ids and are rebased on the fetched state", async (t) => {
  const idb = new FakeIndexedDB();
  const scope = attachedScope();
  const root = scope.root.uuid;
  await open(scope, idb);
  let mine;
  scope.modify(() => { mine = scope.create("Shape", { x: 1 }); scope.root.insert("shapes", mine); });
  await (await open(new Scope("Other"), idb)).saved();  // another scope's store does not mix in
  const id = scope.queue[0].id;
  await new Promise((r) => setTimeout(r, 10));

  const page = new Scope("Canvas", { rootClass: "Canvas" });
  await open(page, idb);
  const sockets = [];
  class Socket {
    constructor(url) { this.url = url; this.readyState = 0; this.sent = []; sockets.push(this); }
    send(text) { this.sent.push(JSON.parse(text)); }
    close() { this.readyState = 3; }
  }
  const client = new Client("ws://server.test/", { WebSocket: Socket, backoff: { min: 1, max: 1 } });
  t.after(() => client.close());
  const fetched = client.fetch(page);
  const ws = sockets[0];
  ws.readyState = 1; ws.onopen();
  const receive = (...m) => ws.onmessage({ data: JSON.stringify(m) });
  receive({ type: "SessionCreateReply", index: 0, sessionToken: "t" });
  // Meanwhile another client inserted a shape of its own.
  const theirs = uuid();
  receive({ type: "ScopeFetchReply", index: 1, replyTo: 1, scopeIndex: 0 });
  // Sent once the store saved that it is being sent (so a reload never puts it into a batch).
  for (let i = 0; i < 500 && !ws.sent.some((m) => m.type === "ScopeSync"); i++) await new Promise((r) => setTimeout(r, 2));
  const sync = ws.sent.find((m) => m.type === "ScopeSync");
  assert.equal(sync?.changeSet, id, "sent after the fetch reply, with the id it had before the reload");
  assert.deepEqual(sync.fragments.map((f) => f.type), ["add", "change"]);
  receive({ type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [
    { type: "add", uuid: root, clsName: "Canvas", properties: { shapes: [theirs] } },
    { type: "add", uuid: theirs, clsName: "Shape", properties: { x: 9 } }] });
  await fetched;
  assert.deepEqual(page.root.get("shapes"), [theirs, mine.uuid], "the pending insert is merged onto the fetched state");
  receive({ type: "ScopeSyncReply", index: 3, replyTo: sync.index, repeated: true, fragmentReplies: [{}, {}] });
  assert.equal(page.queue.length, 0);
});

test("a damaged or foreign record is a StoreError 'damaged', the scope untouched and the record left as it is", async () => {
  const good = new FakeIndexedDB();
  const scope = attachedScope();
  await open(scope, good);
  scope.modify(() => scope.root.set("name", "n"));
  await new Promise((r) => setTimeout(r, 10));
  const text = good.record("Canvas");
  const record = JSON.parse(text);
  const cases = {
    "not JSON": "{not json",
    "not a Contrail scope record": JSON.stringify({ hello: "another app" }),
    "format version 2, this page reads 1": JSON.stringify({ ...record, version: 2 }),
    "it is scope \"Elsewhere\"'s": JSON.stringify({ ...record, scope: "Elsewhere" }),
    "no root object": JSON.stringify({ ...record, saved: { ...record.saved, root: uuid() } }),
    "a malformed change set": JSON.stringify({ ...record, saved: { ...record.saved, queue: [{ id: "x", fragments: [] }] } }),
    "a number, not the JSON text this store writes": 42,
  };
  for (const [why, stored] of Object.entries(cases)) {
    const idb = new FakeIndexedDB();
    idb.setRecord("Canvas", stored);
    const page = new Scope("Canvas", { rootClass: "Canvas" });
    await assert.rejects(open(page, idb), (error) => error instanceof StoreError && error.reason === "damaged" && error.message.includes(why), why);
    assert.equal(page._attached, false, why);
    assert.equal(page.queue.length, 0, why);
    assert.deepEqual(idb.record("Canvas"), stored, `${why}: left as it is`);
  }
  // Positive control: the good record opens.
  const idb = new FakeIndexedDB();
  idb.setRecord("Canvas", text);
  assert.deepEqual((await open(new Scope("Canvas"), idb)).restored, { objects: 1, changeSets: 1 });
  // A scope already fetched is not overwritten by a restore (open it before the fetch).
  await assert.rejects(open(attachedScope(), idb, { locks: new FakeLocks() }), /already fetched or edited: restore it first/);
  // ScopeStore.clear removes a record.
  await ScopeStore.clear("Canvas", { indexedDB: idb });
  assert.equal(idb.record("Canvas"), undefined);
});

test("no IndexedDB, another app's database, or a store held by another tab: a StoreError naming it", async () => {
  await assert.rejects(open(new Scope("Canvas"), undefined), (e) => e.reason === "unavailable" && /not available/.test(e.message));
  const foreign = new FakeIndexedDB();
  foreign.databases.set("contrail", new Map([["other", new Map()]]));
  await assert.rejects(open(new Scope("Canvas"), foreign), (e) => e.reason === "damaged" && /not a Contrail store/.test(e.message));
  const idb = new FakeIndexedDB(), locks = new FakeLocks();
  const first = await open(new Scope("Canvas"), idb, { locks });
  await assert.rejects(open(new Scope("Canvas"), idb, { locks, lockTimeout: 30 }), (e) => e.reason === "locked" && /another tab/.test(e.message));
  await first.close();
  assert.ok(await open(new Scope("Canvas"), idb, { locks, lockTimeout: 1_000 }), "free again once the first tab closed it");
});

test("a full quota or a record over maxLength is reported, the edits stay in memory, and the next change saves again", async () => {
  const idb = new FakeIndexedDB();
  const scope = attachedScope();
  const errors = [];
  const store = await open(scope, idb, { onError: (e) => errors.push(e) });
  await store.saved();
  idb.failPut = new DOMException("quota", "QuotaExceededError");
  scope.modify(() => scope.root.set("name", "big"));
  await assert.rejects(store.saved(), (e) => e.reason === "quota" && /quota/.test(e.message));
  assert.equal(errors.at(-1)?.reason, "quota");
  assert.equal(store.lastError?.reason, "quota");
  assert.equal(scope.queue.length, 1, "the change set is still queued in memory");
  assert.equal(JSON.parse(idb.record("Canvas")).saved.queue.length, 0, "the stored copy is the last one that fit");
  idb.failPut = null;
  scope.modify(() => scope.root.set("name", "bigger"));
  await store.saved();
  assert.equal(store.lastError, null);
  assert.equal(JSON.parse(idb.record("Canvas")).saved.queue.length, 2);

  const small = await open(attachedScope("Small"), new FakeIndexedDB(), { maxLength: 100, onError: (e) => errors.push(e) });
  await assert.rejects(small.saved(), (e) => e.reason === "quota" && /over this store's limit of 100/.test(e.message));
});

test("a batch's id is saved before the batch is sent, and a restored page sends its members under it again; one going alone is saved as such first", async (t) => {
  const idb = new FakeIndexedDB();
  const sockets = [];
  class Socket {
    constructor(url) { this.url = url; this.readyState = 0; this.sent = []; sockets.push(this); }
    // What the store holds when a message leaves.
    send(text) { this.sent.push({ message: JSON.parse(text), stored: idb.record("Canvas") }); }
    close() { this.readyState = 3; }
  }
  const root = uuid();
  const connect = (client) => {
    const ws = sockets.at(-1);
    ws.readyState = 1; ws.onopen();
    const receive = (...m) => ws.onmessage({ data: JSON.stringify(m) });
    receive({ type: "SessionCreateReply", index: 0, sessionToken: uuid(), extensions: ["collectionOps"] });
    receive({ type: "ScopeFetchReply", index: 1, replyTo: ws.sent.find((s) => s.message.type === "ScopeFetch").message.index, scopeIndex: 0 });
    return { ws, receive, syncs: () => ws.sent.filter((s) => s.message.type === "ScopeSync") };
  };
  const scope = new Scope("Canvas", { rootClass: "Canvas" });
  const store = await open(scope, idb);
  const client = new Client("ws://server.test/", { WebSocket: Socket, backoff: { min: 1, max: 1 } });
  t.after(() => client.close());
  const fetched = client.fetch(scope);
  const first = connect(client);
  first.receive({ type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [{ type: "add", uuid: root, clsName: "Canvas", properties: {} }] });
  await fetched;
  first.ws.readyState = 3; first.ws.onclose({ code: 4096, reason: "expired" });  // a new session next
  for (let i = 0; i < 3; i++) { scope.root.insert("shapes", scope.create("Shape", { x: i })); scope.flush(); }
  for (let i = 0; i < 100 && sockets.length < 2; i++) await new Promise((r) => setTimeout(r, 2));
  const second = connect(client);
  assert.equal(second.syncs().length, 0, "not before the store wrote the batch's id");
  for (let i = 0; i < 200 && !second.syncs().length; i++) await new Promise((r) => setTimeout(r, 2));
  const [{ message: batch, stored }] = second.syncs();
  assert.equal(batch.fragments.length, 4, "three adds and the collection, in one message");
  assert.deepEqual(JSON.parse(stored).saved.queue.map((e) => e.batch), [batch.changeSet, batch.changeSet, batch.changeSet], "saved before it left");
  await store.close();  // the page goes away before the reply
  client.close();

  const page = new Scope("Canvas", { rootClass: "Canvas" });
  const reopened = await open(page, idb);
  assert.deepEqual(reopened.restored.changeSets, 3);
  const again = new Client("ws://server.test/", { WebSocket: Socket, backoff: { min: 1, max: 1 } });
  t.after(() => again.close());
  const refetched = again.fetch(page);
  const third = connect(again);
  const [{ message: resent }] = third.syncs();
  assert.equal(resent.changeSet, batch.changeSet, "under the batch's id, not its members' own");
  assert.deepEqual(resent.fragments, batch.fragments);
  third.receive({ type: "ScopeState", index: 2, scopeIndex: 0, rootUUID: root, fragments: [{ type: "add", uuid: root, clsName: "Canvas", properties: {} }] });
  await refetched;
  third.receive({ type: "ScopeSyncReply", index: 3, replyTo: resent.index, repeated: true, fragmentReplies: resent.fragments.map(() => ({})) });
  assert.equal(page.queue.length, 0);
  // Online, a change set going alone is saved as sent alone before it leaves (a reload then never
  // puts it into a batch, which a server that applied it would apply again).
  page.root.set("name", "n");
  page.flush();
  assert.equal(third.syncs().length, 1, "not before the store wrote it");
  for (let i = 0; i < 200 && third.syncs().length < 2; i++) await new Promise((r) => setTimeout(r, 2));
  const { message: alone, stored: then } = third.syncs()[1];
  assert.equal(alone.changeSet, page.queue[0].id);
  assert.deepEqual(JSON.parse(then).saved.queue.map((e) => [e.id, e.sentAlone]), [[alone.changeSet, true]]);
  // A record naming a batch that is not a UUID is damaged.
  const record = JSON.parse(idb.record("Canvas"));
  const bad = new FakeIndexedDB();
  bad.setRecord("Canvas", JSON.stringify({ ...record, saved: { ...record.saved, queue: [{ ...JSON.parse(stored).saved.queue[0], batch: "x" }] } }));
  await assert.rejects(open(new Scope("Canvas"), bad), (error) => error instanceof StoreError && error.reason === "damaged");
  await reopened.close();
});
