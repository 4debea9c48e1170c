// contrail.js: a dependency-free ES module speaking the Jetstream sync protocol ("Protocol §N" cites
// the Protocol article of the documentation catalog, Sources/Contrail/Contrail.docc/Protocol.md) as
// Contrail's Swift client does: sessions that resume, fetch with full state, change sets both ways
// with replies, acknowledgements, keep-alive, reconnect with capped backoff and jitter, the `bases`
// extension for collection merges, and pending keys that remote values never overwrite.
//
//   import { Client, Scope } from "/contrail.js";
//   const client = new Client("ws://127.0.0.1:3000/");
//   const canvas = new Scope("Canvas", { rootClass: "Canvas" });
//   await client.fetch(canvas);
//   canvas.on("change", (e) => console.log(e.model.uuid, e.key, e.value));
//   canvas.modify(() => { const s = canvas.create("Shape", { x: 10, y: 20 }); canvas.root.insert("shapes", s); });

/** Protocol version sent in SessionCreate. */
export const VERSION = "0.2.0";
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FATAL_CLOSE = new Set([4096, 4097]);
/** Where the pages keep their token (sessionStorage: this tab only). */
const PAGE_TOKEN_KEY = "contrail-token";

/** A fresh lowercase random UUID (version 4). */
export function uuid() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const same = (a, b) => a === b || (Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]));
const copy = (v) => (Array.isArray(v) ? v.slice() : v);
const refsOf = (v) => (typeof v === "string" && UUID_RE.test(v) ? [v] : Array.isArray(v) ? v.filter((x) => typeof x === "string" && UUID_RE.test(x)) : []);

/** Minimal event emitter: `on(type, fn)` returns a function that removes the listener. */
class Emitter {
  #listeners = new Map();
  on(type, fn) {
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    this.#listeners.get(type).add(fn);
    return () => this.#listeners.get(type)?.delete(fn);
  }
  emit(type, event) {
    for (const fn of this.#listeners.get(type) ?? []) {
      try { fn(event); } catch (error) { console.error("contrail.js listener failed", error); }
    }
  }
}

/**
 * The three-way merge of an ordered collection (§8.4), the same algorithm as Swift's CollectionMerge:
 * the edit from `base` to `next` applied to `current`.
 */
export function mergeCollection(base, next, current) {
  if (same(base, current)) return next.slice();
  if (same(base, next)) return current.slice();
  const nextSet = new Set(next), baseSet = new Set(base);
  const stable = stableElements(base, next, nextSet);
  const placed = new Set(), result = [];
  for (const e of current) {
    if (baseSet.has(e)) { if (!nextSet.has(e) || !stable.has(e)) continue; }
    else if (nextSet.has(e)) continue;
    if (!placed.has(e)) { placed.add(e); result.push(e); }
  }
  let previous;
  for (const e of next) {
    const hint = previous; previous = e;
    if (placed.has(e)) continue;
    let anchor;
    if (hint !== undefined && placed.has(hint)) anchor = hint;
    else for (let i = next.indexOf(e) - 1; i >= 0; i--) if (placed.has(next[i])) { anchor = next[i]; break; }
    let pos = anchor === undefined ? 0 : result.indexOf(anchor) + 1;
    while (pos < result.length && !baseSet.has(result[pos]) && !nextSet.has(result[pos])) pos++;
    result.splice(pos, 0, e);
    placed.add(e);
  }
  return result;
}

function stableElements(base, next, nextSet) {
  const basePos = new Map();
  base.forEach((e, i) => { if (nextSet.has(e) && !basePos.has(e)) basePos.set(e, i); });
  const seq = next.filter((e) => basePos.has(e)).map((e) => [e, basePos.get(e)]);
  const tails = [], parents = new Array(seq.length).fill(-1);
  seq.forEach((item, i) => {
    let lo = 0, hi = tails.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (seq[tails[mid]][1] < item[1]) lo = mid + 1; else hi = mid; }
    if (lo > 0) parents[i] = tails[lo - 1];
    if (lo === tails.length) tails.push(i); else tails[lo] = i;
  });
  const stable = new Set();
  for (let c = tails.length ? tails[tails.length - 1] : -1; c >= 0; c = parents[c]) stable.add(seq[c][0]);
  return stable;
}

/** One object of a scope: a UUID, a class name and wire values by property name. */
export class Model {
  constructor(scope, id, clsName, properties = {}) {
    this.scope = scope;
    this.uuid = id;
    this.clsName = clsName;
    this.properties = properties;
  }
  /** The wire value of `key` (references are UUID strings, collections arrays of them). */
  get(key) { return this.properties[key]; }
  /** Sets `key` (a Model is stored as its UUID, an array of Models as UUIDs). */
  set(key, value) { this.scope.set(this, key, value); }
  /** The models of a collection property, in order. */
  items(key) { return (this.properties[key] ?? []).map((id) => this.scope.object(id)).filter(Boolean); }
  /** Inserts `model` into collection `key` at `at` (default: the end). */
  insert(key, model, at) {
    const list = (this.properties[key] ?? []).slice();
    list.splice(at ?? list.length, 0, model.uuid);
    this.set(key, list);
  }
  /** Removes `model` from collection `key`. */
  remove(key, model) { this.set(key, (this.properties[key] ?? []).filter((id) => id !== model.uuid)); }
}

/**
 * A named tree with a root object, kept in step with the server once a Client fetched it.
 * Events: "change" {model, key, value, previous, remote}, "insert"/"remove" {model, key, item} for
 * collections, "attach"/"detach" {model}, "state" after a full state, "changeset" {fragments, remote},
 * "settled" {fragments, rejected}.
 */
export class Scope extends Emitter {
  constructor(name, { rootClass = "Root", changeInterval = 10 } = {}) {
    super();
    this.name = name;
    this.changeInterval = changeInterval;
    this.objects = new Map();  // uuid → Model, the objects in the tree
    this.root = new Model(this, uuid(), rootClass);
    this.objects.set(this.root.uuid, this.root);
    this.queue = [];           // change sets sent and not settled, oldest first
    this._created = new Map(); // uuid → Model made locally, not in the tree yet
    this._pending = new Map(); // uuid → {original: {key: value}} touched since the last flush
    this._remote = false;
    this._timer = null;
    this._client = null;
    this._scopeIndex = null;
    this._attached = false;     // true once a full state arrived: edits before it wait, then go out
  }

  /** The model with `id`, in the tree or created and not yet attached. */
  object(id) { return this.objects.get(id) ?? this._created.get(id); }

  /** A new model of class `clsName`; it joins the tree (and syncs as an `add`) once a parent references it. */
  create(clsName, properties = {}) {
    const model = new Model(this, uuid(), clsName, {});
    for (const [k, v] of Object.entries(properties)) model.properties[k] = normalize(v);
    this._created.set(model.uuid, model);
    return model;
  }

  /** Sets a property; outside `modify` the edit goes out in a change set after `changeInterval` ms. */
  set(model, key, value) {
    value = normalize(value);
    const previous = model.properties[key];
    if (same(previous, value)) return;
    if (!this._remote && this.objects.has(model.uuid)) {
      let entry = this._pending.get(model.uuid);
      if (!entry) { entry = { original: {} }; this._pending.set(model.uuid, entry); }
      if (!(key in entry.original)) entry.original[key] = copy(previous === undefined ? null : previous);
    }
    model.properties[key] = copy(value);
    this._emitChange(model, key, value, previous, this._remote);
    if (!this._remote) this._schedule();
  }

  /** Runs `fn` and sends its edits as one change set (atomic when asked: all or nothing on the server). */
  modify(fn, { atomic = false } = {}) {
    this.flush();
    try { fn(); } finally { this.flush({ atomic }); }
  }

  /** The scope as `{root, objects: {uuid: {clsName, properties}}}`, like Swift's `Scope.stateJSON()`. */
  stateJSON() {
    const objects = {};
    for (const id of [...this.objects.keys()].sort()) {
      const m = this.objects.get(id);
      const properties = {};
      for (const k of Object.keys(m.properties).sort()) if (m.properties[k] !== null && m.properties[k] !== undefined) properties[k] = m.properties[k];
      objects[id] = { clsName: m.clsName, properties };
    }
    return { root: this.root.uuid, objects };
  }

  _emitChange(model, key, value, previous, remote) {
    this.emit("change", { model, key, value, previous, remote });
    if (Array.isArray(value) || Array.isArray(previous)) {
      const before = new Set(previous ?? []), after = new Set(value ?? []);
      for (const item of after) if (!before.has(item)) this.emit("insert", { model, key, item, remote });
      for (const item of before) if (!after.has(item)) this.emit("remove", { model, key, item, remote });
    }
  }

  _schedule() {
    if (this._timer !== null) return;
    this._timer = setTimeout(() => { this._timer = null; this.flush(); }, this.changeInterval);
  }

  /**
   * Sends what was edited since the last flush as one change set. Before the first full state the
   * edits wait (the root takes the server's UUID then) and go out right after it.
   */
  flush({ atomic = false } = {}) {
    if (this._timer !== null) { clearTimeout(this._timer); this._timer = null; }
    if (!this._attached) return;
    const reachable = this._reachable();
    const fragments = [], originals = new Map();
    for (const id of reachable) {
      if (this.objects.has(id)) continue;
      const model = this._created.get(id);
      this._created.delete(id);
      this.objects.set(id, model);
      this.emit("attach", { model });
      fragments.push({ type: "add", uuid: id, clsName: model.clsName, properties: { ...model.properties } });
    }
    for (const [id, entry] of this._pending) {
      const model = this.objects.get(id);
      if (!model || !reachable.has(id)) continue;
      const properties = {}, bases = {};
      for (const key of Object.keys(entry.original)) {
        const value = model.properties[key];
        if (same(value, entry.original[key])) continue;
        properties[key] = copy(value === undefined ? null : value);
        if (Array.isArray(value) && Array.isArray(entry.original[key])) bases[key] = entry.original[key].slice();
      }
      if (!Object.keys(properties).length) continue;
      const fragment = { type: "change", uuid: id, clsName: model.clsName, properties };
      if (Object.keys(bases).length) fragment.bases = bases;
      fragments.push(fragment);
      const kept = {};
      for (const key of Object.keys(properties)) kept[key] = entry.original[key];
      originals.set(id, kept);
    }
    this._pending.clear();
    this._collect(reachable);
    if (!fragments.length) return;
    const entry = { fragments, originals, atomic, sent: false };
    this.queue.push(entry);
    this.emit("changeset", { fragments, remote: false });
    this._client?._sendChangeSet(this, entry);
  }

  _reachable() {
    const seen = new Set(), stack = [this.root.uuid];
    while (stack.length) {
      const id = stack.pop();
      if (seen.has(id)) continue;
      const model = this.object(id);
      if (!model) continue;
      seen.add(id);
      for (const v of Object.values(model.properties)) for (const r of refsOf(v)) if (!seen.has(r)) stack.push(r);
    }
    return seen;
  }

  /** Drops objects no longer reachable from the root (removal by orphaning, §3.3). */
  _collect(reachable) {
    for (const [id, model] of this.objects) {
      if (reachable.has(id)) continue;
      this.objects.delete(id);
      this._pending.delete(id);
      this.emit("detach", { model });
    }
  }

  /** The oldest unflushed or queued holder of (uuid, key) after `after` (an entry, or null for all). */
  _holder(id, key, after = null) {
    let start = after ? this.queue.indexOf(after) + 1 : 0;
    for (let i = start; i < this.queue.length; i++) {
      const o = this.queue[i].originals.get(id);
      if (o && key in o) return o;
    }
    const p = this._pending.get(id);
    return p && key in p.original ? p.original : null;
  }

  /** Applies a server value: a pending local edit keeps its value and takes the server's as original (§8.3). */
  _applyServerValue(model, key, value, after = null) {
    const holder = this._holder(model.uuid, key, after);
    if (!holder) { this.set(model, key, value); return; }
    const original = holder[key];
    holder[key] = copy(value);
    const local = model.properties[key];
    if (Array.isArray(local) && Array.isArray(value) && Array.isArray(original)) {
      this.set(model, key, mergeCollection(original, local, value));
    }
  }

  /** Applies incoming fragments (§4.3); `full` is a ScopeState with `rootUUID`. */
  _applyRemote(fragments, rootUUID = null) {
    this._remote = true;
    try {
      if (rootUUID && rootUUID !== this.root.uuid) this._rekeyRoot(rootUUID);
      const rootFragment = rootUUID && fragments.find((f) => f.uuid === rootUUID);
      if (rootFragment?.clsName) this.root.clsName = rootFragment.clsName;
      const fresh = new Map();
      for (const f of fragments) {
        if (f.type === "add" && !this.object(f.uuid)) fresh.set(f.uuid, new Model(this, f.uuid, f.clsName, {}));
      }
      for (const [id, m] of fresh) this._created.set(id, m);
      for (const f of fragments) {
        const model = this.object(f.uuid);
        if (!model || (f.type === "change" && !this.objects.has(f.uuid) && !rootUUID)) continue;
        for (const [key, value] of Object.entries(f.properties ?? {})) this._applyServerValue(model, key, value);
        if (rootUUID) {
          for (const key of Object.keys(model.properties)) {
            if (!(key in (f.properties ?? {})) && !this._holder(model.uuid, key)) this._applyServerValue(model, key, null);
          }
        }
      }
      const reachable = this._reachable();
      for (const id of reachable) {
        if (this.objects.has(id)) continue;
        const model = this._created.get(id);
        if (!fresh.has(id) && !rootUUID) continue;  // a local creation: joins with the next flush
        this._created.delete(id);
        this.objects.set(id, model);
        this.emit("attach", { model });
      }
      for (const id of fresh.keys()) if (!this.objects.has(id)) this._created.delete(id);
      this._collect(reachable);
    } finally {
      this._remote = false;
    }
    this.emit("changeset", { fragments, remote: true, state: Boolean(rootUUID) });
    if (rootUUID) {
      this._attached = true;
      this.emit("state", { root: this.root });
      if (this._pending.size || this._created.size) this._schedule();
    }
  }

  _rekeyRoot(id) {
    const old = this.root.uuid;
    this.objects.delete(old);
    this.root.uuid = id;
    this.objects.set(id, this.root);
    const p = this._pending.get(old);
    if (p) { this._pending.delete(old); this._pending.set(id, p); }
  }

  /** Settles a change set with its ScopeSyncReply entries (§4.8), or reverts it all when `replies` is null. */
  _settle(entry, replies) {
    const whole = !Array.isArray(replies) || replies.length !== entry.fragments.length;
    const rejected = [];
    this._remote = true;
    try {
      entry.fragments.forEach((fragment, i) => {
        const reply = whole ? { error: { message: "no matching reply" } } : replies[i] ?? {};
        const model = this.objects.get(fragment.uuid);
        if (reply.error) {
          rejected.push({ fragment, error: reply.error });
          const originals = entry.originals.get(fragment.uuid);
          if (fragment.type !== "change" || !model || !originals) return;
          for (const [key, original] of Object.entries(originals)) {
            const later = this._holder(fragment.uuid, key, entry);
            if (later) later[key] = copy(original); else this.set(model, key, original);
          }
        } else if (reply.modifications && model) {
          for (const [key, value] of Object.entries(reply.modifications)) this._applyServerValue(model, key, value, entry);
        }
      });
      this._collect(this._reachable());
    } finally {
      this._remote = false;
    }
    this.queue.splice(this.queue.indexOf(entry), 1);
    this.emit("settled", { fragments: entry.fragments, rejected });
  }
}

function normalize(value) {
  if (value instanceof Model) return value.uuid;
  if (Array.isArray(value)) return value.map((v) => (v instanceof Model ? v.uuid : v));
  if (value instanceof Date) return value.getTime() / 1000;
  return value === undefined ? null : value;
}

/**
 * A session with a Contrail (or Jetstream) server. Status: "connecting", "creating", "resuming",
 * "online", "offline" (reconnecting), "denied", "closed". Events: "status", "error".
 */
export class Client extends Emitter {
  constructor(url, { params = {}, pingInterval = 10_000, replyTimeout = 20_000, backoff = { min: 250, max: 10_000 }, WebSocket: WS = globalThis.WebSocket } = {}) {
    super();
    this.url = url;
    this.params = params;
    this.pingInterval = pingInterval;
    this.replyTimeout = replyTimeout;
    this.backoff = backoff;
    this.status = "closed";
    this._WS = WS;
    this._ws = null;
    this._token = null;
    this._resetSession();
    this._fetched = [];     // {scope, params, resolve, reject}
    this._attempt = 0;
    this._timers = new Set();
    this._started = false;
  }

  _resetSession() {
    this._token = null;
    this._outIndex = 0;
    this._serverIndex = 0;
    this._unacked = [];      // sequenced messages sent or held, not yet acknowledged
    this._replies = new Map(); // index → {handler, at}
    this._scopesByIndex = new Map();
  }

  _setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    this.emit("status", status);
  }

  /** Fetches `scope` (connecting first if needed); resolves once its full state is applied. */
  fetch(scope, params = {}) {
    scope._client = this;
    return new Promise((resolve, reject) => {
      const record = { scope, params, resolve, reject };
      this._fetched.push(record);
      if (!this._started) this._connect();
      if (this._token) this._sendFetch(record);
    });
  }

  /** Closes the socket for good; pending change sets stay queued in their scopes. */
  close() {
    this._started = false;
    for (const t of this._timers) clearTimeout(t);
    this._timers.clear();
    this._ws?.close(1000, "client closed");
    this._setStatus("closed");
  }

  _later(ms, fn) {
    const t = setTimeout(() => { this._timers.delete(t); fn(); }, ms);
    this._timers.add(t);
    return t;
  }

  _connect() {
    this._started = true;
    const resuming = this._token !== null;
    const url = resuming ? `${this.url}${this.url.includes("?") ? "&" : "?"}x-jetstream-sessiontoken=${encodeURIComponent(this._token)}` : this.url;
    this._setStatus("connecting");
    let ws;
    try { ws = new this._WS(url); } catch (error) { this.emit("error", error); this._reconnectLater(); return; }
    this._ws = ws;
    ws.onopen = () => {
      if (ws !== this._ws) return;
      if (resuming) {
        this._setStatus("resuming");
        this._raw({ type: "Ping", index: 0, ack: this._serverIndex, resendMissing: true });
      } else {
        this._setStatus("creating");
        this._raw({ type: "SessionCreate", index: 0, version: VERSION, params: this.params });
      }
    };
    ws.onmessage = (event) => { if (ws === this._ws) this._receive(event.data); };
    ws.onclose = (event) => { if (ws === this._ws) this._closed(event.code, event.reason); };
    ws.onerror = () => {};
  }

  _raw(message) {
    if (this._ws?.readyState === 1) this._ws.send(JSON.stringify(message));
  }

  _closed(code, reason) {
    this._ws = null;
    if (!this._started || this.status === "denied") return;
    if (FATAL_CLOSE.has(code) && this._token !== null) {
      // The session is gone (expired or unknown token): a new one, every scope fetched again,
      // and every unsettled change set sent again after its scope's fetch reply.
      this._resetSession();
      for (const record of this._fetched) record.scope._scopeIndex = null;
    } else if (FATAL_CLOSE.has(code)) {
      this.emit("error", new Error(`connection rejected (${code}): ${reason}`));
    }
    this._setStatus("offline");
    this._reconnectLater();
  }

  _reconnectLater() {
    const { min, max } = this.backoff;
    const cap = Math.min(max, min * 2 ** this._attempt++);
    this._later(cap / 2 + Math.random() * (cap / 2), () => { if (this._started) this._connect(); });
  }

  _forceReconnect() {
    const ws = this._ws;
    this._ws = null;
    ws?.close(4000, "resync");
    this._setStatus("offline");
    this._reconnectLater();
  }

  _receive(text) {
    let data;
    try { data = JSON.parse(text); } catch { this.emit("error", new Error("server sent a frame that is not JSON")); return; }
    for (const message of Array.isArray(data) ? data : [data]) {
      if (!message || typeof message !== "object" || typeof message.type !== "string") continue;
      if (this._ws === null) return;  // a forced reconnect dropped the rest of the frame
      this._dispatch(message);
    }
  }

  _dispatch(m) {
    if (m.type === "SessionCreateReply") {
      if (typeof m.sessionToken === "string" && m.sessionToken) {
        this._token = m.sessionToken;
        this._online();
        for (const record of this._fetched) this._sendFetch(record);
      } else {
        this._setStatus("denied");
        this._started = false;
        this.emit("error", new Error(m.error?.message ?? "Session creation denied"));
        for (const record of this._fetched) record.reject(new Error(m.error?.message ?? "Session creation denied"));
        this._ws?.close(1000);
      }
      return;
    }
    if (m.type === "Ping") {
      this._unacked = this._unacked.filter((x) => x.index > m.ack);
      if (m.resendMissing === true) {
        if (this.status === "resuming") this._online();
        else for (const x of this._unacked) this._raw(x);
      }
      return;
    }
    if (!Number.isInteger(m.index) || m.index <= this._serverIndex) return;
    if (m.index !== this._serverIndex + 1) { this._forceReconnect(); return; }
    this._serverIndex = m.index;
    if (m.type === "ScopeFetchReply" || m.type === "ScopeSyncReply") {
      const waiter = this._replies.get(m.replyTo);
      this._replies.delete(m.replyTo);
      waiter?.handler(m);
    } else if (m.type === "ScopeState") {
      const scope = this._scopesByIndex.get(m.scopeIndex);
      if (scope) {
        scope._applyRemote(m.fragments ?? [], m.rootUUID);
        const record = this._fetched.find((r) => r.scope === scope);
        record?.resolve(scope);
      }
    } else if (m.type === "ScopeSync") {
      const scope = this._scopesByIndex.get(m.scopeIndex);
      if (scope && Array.isArray(m.fragments) && m.fragments.length) scope._applyRemote(m.fragments);
    }
  }

  /** Online: (re)sends every held or unacknowledged message in index order and starts pinging. */
  _online() {
    this._attempt = 0;
    this._setStatus("online");
    for (const x of this._unacked) this._raw(x);
    this._schedulePing();
  }

  _schedulePing() {
    const ws = this._ws;
    this._later(this.pingInterval * (0.9 + Math.random() * 0.2), () => {
      if (ws !== this._ws || this.status !== "online") return;
      this._raw({ type: "Ping", index: 0, ack: this._serverIndex, resendMissing: false });
      this._checkReplies();
      this._schedulePing();
    });
  }

  /** A reply overdue past `replyTimeout`: reconnect, so the resend exchange recovers it. */
  _checkReplies() {
    const now = Date.now();
    for (const waiter of this._replies.values()) {
      if (now - waiter.at > this.replyTimeout) { this._forceReconnect(); return; }
    }
  }

  _send(message, handler) {
    message.index = ++this._outIndex;
    this._unacked.push(message);
    this._replies.set(message.index, { handler, at: Date.now() });
    if (this.status === "online") this._raw(message);
  }

  _sendFetch(record) {
    const { scope, params } = record;
    this._send({ type: "ScopeFetch", index: 0, name: scope.name, params }, (reply) => {
      if (reply.error || !Number.isInteger(reply.scopeIndex)) {
        this._fetched.splice(this._fetched.indexOf(record), 1);
        record.reject(new Error(reply.error?.message ?? "scope fetch failed"));
        return;
      }
      scope._scopeIndex = reply.scopeIndex;
      this._scopesByIndex.set(reply.scopeIndex, scope);
      for (const entry of scope.queue) this._sendChangeSet(scope, entry);
    });
  }

  _sendChangeSet(scope, entry) {
    if (scope._scopeIndex === null) return;  // sent after the fetch reply
    const message = { type: "ScopeSync", index: 0, scopeIndex: scope._scopeIndex, atomic: entry.atomic, fragments: entry.fragments };
    this._send(message, (reply) => scope._settle(entry, reply.fragmentReplies));
  }
}

/**
 * The token a page passes to the server (SessionCreate params and the overview's Authorization
 * header): taken from the URL fragment `#token=…` (then removed from the address bar and kept in
 * sessionStorage for this tab), else from sessionStorage; null if none. Never from the query string,
 * which lands in server and proxy logs.
 */
export function pageToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.has("token")) {
    sessionStorage.setItem(PAGE_TOKEN_KEY, hash.get("token"));
    hash.delete("token");
    const rest = hash.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return sessionStorage.getItem(PAGE_TOKEN_KEY);
}

/** Asks the user for a token (a prompt), keeps it like `pageToken` does; null when dismissed. */
export function askForPageToken(message) {
  const token = globalThis.prompt?.(message) ?? null;
  if (token) sessionStorage.setItem(PAGE_TOKEN_KEY, token);
  return token || null;
}

