// contrail-store.js: keeps a contrail.js Scope in IndexedDB, so what the page has not sent survives
// a reload or a closed tab: the replica and its unsettled change sets are saved as they change, and
// restored before the fetch, which then sends them exactly as the Swift client sends what its
// fragment log kept (same change-set ids, and change sets once sent coalesced go again together
// under their batch's id, so a server that applied one answers it as a repeat and never applies it
// twice; rebased on the fetched state by the usual merge rules).
//
//   import { Client, Scope } from "/contrail.js";
//   import { ScopeStore } from "/contrail-store.js";
//   const canvas = new Scope("Canvas", { rootClass: "Canvas" });
//   const store = await ScopeStore.open(canvas);   // restores, then saves; throws a StoreError
//   await new Client("ws://127.0.0.1:3000/").fetch(canvas);
//
// One record per scope, replaced on every save (never appended): storage is the size of the scope
// plus its unsettled change sets, and a save longer than `maxLength` characters of JSON is refused (an
// error; the edits stay in memory). A record that is not a Contrail scope (damaged, or another app's) is refused with a
// StoreError and left as it is; `ScopeStore.clear` removes it.

const FORMAT = "contrail-scope";
const VERSION = 1;
const OBJECT_STORE = "scopes";
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Why a store cannot be used: `reason` is one of "unavailable", "locked", "damaged", "quota", "failed". */
export class StoreError extends Error {
  constructor(reason, message, cause) {
    super(message, cause ? { cause } : undefined);
    this.name = "StoreError";
    this.reason = reason;
  }
}

/** A request's result as a promise (IndexedDB's callbacks). */
const done = (request) => new Promise((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
});

/** Opens database `name` (version 1, one object store "scopes"); a database without it is another app's. */
async function openDatabase(indexedDB, name) {
  if (!indexedDB || typeof indexedDB.open !== "function") {
    throw new StoreError("unavailable", "IndexedDB is not available here (a private window of some browsers, or an insecure context): edits are kept in memory only");
  }
  let db;
  try {
    const request = indexedDB.open(name, VERSION);
    request.onupgradeneeded = () => { if (!request.result.objectStoreNames.contains(OBJECT_STORE)) request.result.createObjectStore(OBJECT_STORE); };
    db = await done(request);
  } catch (error) {
    throw new StoreError("unavailable", `IndexedDB database '${name}' cannot be opened: ${error?.message ?? error}`, error);
  }
  if (!db.objectStoreNames.contains(OBJECT_STORE)) {
    db.close();
    throw new StoreError("damaged", `IndexedDB database '${name}' is not a Contrail store (it has no '${OBJECT_STORE}'): pass another name in \`database\``);
  }
  return db;
}

/** Whether `value` is a plain object (not null, not an array). */
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isModels = (value) => isObject(value) && Object.entries(value).every(([id, m]) => UUID_RE.test(id) && isObject(m) && typeof m.clsName === "string" && isObject(m.properties));
const isFragment = (f) => isObject(f) && (f.type === "add" || f.type === "change") && typeof f.uuid === "string" && UUID_RE.test(f.uuid) && typeof f.clsName === "string" && isObject(f.properties) && (f.bases === undefined || isObject(f.bases));
const isEntry = (e) => isObject(e) && typeof e.id === "string" && UUID_RE.test(e.id) && Array.isArray(e.fragments) && e.fragments.length > 0 && e.fragments.every(isFragment)
  && isObject(e.originals) && Object.values(e.originals).every(isObject) && Array.isArray(e.added) && e.added.every((id) => typeof id === "string" && UUID_RE.test(id))
  && typeof e.atomic === "boolean" && typeof e.heldBack === "boolean"
  && (e.batch === undefined || e.batch === null || (typeof e.batch === "string" && UUID_RE.test(e.batch)))
  && (e.sentAlone === undefined || typeof e.sentAlone === "boolean");

/**
 * The saved replica in `text`, checked through and through (every byte of storage is as untrusted as
 * the network: another app, an old version or a damaged disk may have written it); a StoreError
 * naming what is wrong otherwise.
 */
export function decodeRecord(text, scopeName) {
  const damaged = (why) => new StoreError("damaged", `the stored copy of scope '${scopeName}' is unusable (${why}); it is left as it is: ScopeStore.clear removes it`);
  if (typeof text !== "string") throw damaged(`a ${text === null ? "null" : typeof text}, not the JSON text this store writes`);
  let record;
  try { record = JSON.parse(text); } catch { throw damaged("not JSON"); }
  if (!isObject(record) || record.format !== FORMAT) throw damaged("not a Contrail scope record");
  if (record.version !== VERSION) throw damaged(`format version ${JSON.stringify(record.version)}, this page reads ${VERSION}`);
  if (record.scope !== scopeName) throw damaged(`it is scope ${JSON.stringify(record.scope)}'s`);
  const saved = record.saved;
  if (!isObject(saved) || typeof saved.root !== "string" || !isModels(saved.objects) || !isObject(saved.objects[saved.root])) throw damaged("no root object");
  if (!isModels(saved.created) || !isModels(saved.retired)) throw damaged("malformed objects");
  if (!isObject(saved.pending) || !Object.values(saved.pending).every(isObject)) throw damaged("malformed pending edits");
  if (!Array.isArray(saved.queue) || !saved.queue.every(isEntry)) throw damaged("a malformed change set");
  return saved;
}

/**
 * A Scope kept in IndexedDB: `ScopeStore.open(scope)` restores it and then saves it whenever it
 * changes (after `saveDelay` ms, one write for all changes meanwhile). Errors after opening (a full
 * quota, a record over `maxLength`) go to `onError` and `lastError`; the edits stay in memory and the
 * next change tries again. One tab at a time holds a store (Web Locks, where the browser has them):
 * another tab opening the same one gets a StoreError "locked".
 */
export class ScopeStore {
  /**
   * Opens the store of `scope` (before any fetch or edit), restores what it holds into the scope and
   * starts saving it. Resolves to the store, whose `restored` tells what came back
   * ({objects, changeSets}, or null for an empty store); rejects with a StoreError ("unavailable",
   * "locked", "damaged") and leaves the scope and the stored record as they were.
   * Options: `database` ("contrail"), `key` (the scope's name), `maxLength` (16 Mi characters of JSON), `saveDelay` (20 ms),
   * `onError`, `lockTimeout` (5000 ms), `indexedDB` and `locks` (the browser's, for tests).
   */
  static async open(scope, { database = "contrail", key = scope.name, maxLength = 16 << 20, saveDelay = 20, onError = null, lockTimeout = 5_000,
                             indexedDB = globalThis.indexedDB, locks = globalThis.navigator?.locks } = {}) {
    const release = await ScopeStore.#lock(locks, `contrail-store:${database}:${key}`, lockTimeout);
    let db = null;
    try {
      db = await openDatabase(indexedDB, database);
      let text;
      try {
        text = await done(db.transaction(OBJECT_STORE, "readonly").objectStore(OBJECT_STORE).get(key));
      } catch (error) {
        throw new StoreError("failed", `reading the stored copy of scope '${scope.name}' failed: ${error?.message ?? error}`, error);
      }
      let restored = null;
      if (text !== undefined) {
        const saved = decodeRecord(text, scope.name);
        scope._restore(saved);
        restored = { objects: Object.keys(saved.objects).length, changeSets: saved.queue.length };
      }
      return new ScopeStore(scope, db, key, { maxLength, saveDelay, onError, release, restored });
    } catch (error) {
      db?.close();
      release();
      throw error;
    }
  }

  /** Removes the stored copy under `key` (a damaged one, or to start afresh); resolves when it is gone. */
  static async clear(key, { database = "contrail", indexedDB = globalThis.indexedDB } = {}) {
    const db = await openDatabase(indexedDB, database);
    try {
      const transaction = db.transaction(OBJECT_STORE, "readwrite");
      transaction.objectStore(OBJECT_STORE).delete(key);
      await new Promise((resolve, reject) => { transaction.oncomplete = resolve; transaction.onerror = () => reject(transaction.error); transaction.onabort = () => reject(transaction.error); });
    } finally {
      db.close();
    }
  }

  /** Holds the lock `name` until the returned function is called; a StoreError "locked" after `timeout` ms. No Web Locks: no lock. */
  static async #lock(locks, name, timeout) {
    if (!locks || typeof locks.request !== "function") return () => {};
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    const signal = typeof AbortSignal?.timeout === "function" ? AbortSignal.timeout(timeout) : undefined;
    await new Promise((resolve, reject) => {
      locks.request(name, { signal }, () => { resolve(); return held; })
        .catch((error) => reject(new StoreError("locked", `the stored copy of this scope is in use by another tab (${error?.name ?? error}); this tab keeps its edits in memory only`, error)));
    });
    return release;
  }

  #scope; #db; #key; #maxLength; #saveDelay; #release;
  #offs = [];
  #timer = null;
  #changes = 0;   // changes seen (a counter: `saved()` waits for the count at its call)
  #written = 0;   // changes the last successful write covers
  #writing = null;
  #waiters = [];  // {changes, resolve, reject}
  #closed = false;

  constructor(scope, db, key, { maxLength, saveDelay, onError, release, restored }) {
    this.#scope = scope;
    this.#db = db;
    this.#key = key;
    this.#maxLength = maxLength;
    this.#saveDelay = saveDelay;
    this.#release = release;
    /** What the open restored: {objects, changeSets}, or null (nothing was stored). */
    this.restored = restored;
    /** Called with each StoreError after opening. */
    this.onError = onError;
    /** The last error of a save, or null once a save succeeded again. */
    this.lastError = null;
    const changed = () => this.#changed();
    for (const type of ["change", "changeset", "settled", "state"]) this.#offs.push(scope.on(type, changed));
    // A change set coalesced into a batch goes again under the batch's id (never alone, which a
    // server that applied the batch would apply again): the client sends a new batch once this
    // write of its id is done (or failed: then nothing is kept anyway).
    scope._beforeBatch = () => { this.#changed(); return this.saved(); };
    this.#offs.push(() => { scope._beforeBatch = null; });
    this.#changed();  // the restored or current state, as it is now
  }

  /** Resolves once every change so far is written (at once if nothing waits); rejects with the StoreError of a failed write. */
  saved() {
    if (this.#written >= this.#changes) return Promise.resolve();
    const written = new Promise((resolve, reject) => this.#waiters.push({ changes: this.#changes, resolve, reject }));
    if (this.#timer !== null) { clearTimeout(this.#timer); this.#timer = null; this.#save(); }
    return written;
  }

  /** Writes what changed, stops saving and releases the store for another tab. */
  async close() {
    if (this.#closed) return;
    try { await this.saved(); } catch { /* reported through onError and lastError */ }
    this.#closed = true;
    for (const off of this.#offs) off();
    this.#db.close();
    this.#release();
  }

  #changed() {
    if (this.#closed) return;
    this.#changes++;
    if (this.#timer === null && this.#writing === null) this.#timer = setTimeout(() => { this.#timer = null; this.#save(); }, this.#saveDelay);
  }

  /** Writes the scope as it is now in one transaction; then again if it changed meanwhile. */
  #save() {
    const saved = this.#scope._saved();
    const covers = this.#changes;
    if (!saved) { this.#finish(covers, null); return; }  // not fetched yet: nothing to keep
    const text = JSON.stringify({ format: FORMAT, version: VERSION, scope: this.#scope.name, savedAt: Date.now(), saved });
    if (text.length > this.#maxLength) {
      this.#finish(covers, new StoreError("quota", `scope '${this.#scope.name}' with its unsettled change sets is ${text.length} characters of JSON, over this store's limit of ${this.#maxLength}: not saved, the edits are kept in memory only`));
      return;
    }
    this.#writing = new Promise((resolve) => {
      let transaction;
      try {
        transaction = this.#db.transaction(OBJECT_STORE, "readwrite", { durability: "relaxed" });
        transaction.objectStore(OBJECT_STORE).put(text, this.#key);
      } catch (error) {
        resolve(this.#failure(error));
        return;
      }
      transaction.oncomplete = () => resolve(null);
      transaction.onabort = () => resolve(this.#failure(transaction.error));
      transaction.onerror = (event) => event.preventDefault?.();  // reported once, by onabort
    }).then((error) => {
      this.#writing = null;
      this.#finish(covers, error);
    });
  }

  #failure(error) {
    const quota = error?.name === "QuotaExceededError";
    return new StoreError(quota ? "quota" : "failed", `saving scope '${this.#scope.name}' failed (${quota ? "the browser's storage quota is used up" : error?.message ?? error}): the edits are kept in memory only`, error);
  }

  #finish(covers, error) {
    if (error) {
      this.lastError = error;
      try { this.onError?.(error); } catch (e) { console.error("contrail-store.js onError failed", e); }
    } else {
      this.#written = Math.max(this.#written, covers);
      this.lastError = null;
    }
    const still = [];
    for (const waiter of this.#waiters) {
      if (error && waiter.changes <= covers) waiter.reject(error);
      else if (!error && waiter.changes <= this.#written) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
    // Changes made during the write: write again (after a failure, not before the usual delay).
    if (this.#changes > covers && this.#timer === null && !this.#closed) {
      if (error) this.#timer = setTimeout(() => { this.#timer = null; this.#save(); }, this.#saveDelay);
      else this.#save();
    }
  }
}
