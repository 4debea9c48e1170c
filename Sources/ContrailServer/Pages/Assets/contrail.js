// contrail.js: a dependency-free ES module speaking the Jetstream sync protocol ("Protocol §N" cites
// the Protocol article of the documentation catalog, Sources/Contrail/Contrail.docc/Protocol.md) as
// Contrail's Swift client does: sessions that resume, fetch with full state, change sets both ways
// with replies, acknowledgements, keep-alive, reconnect with capped backoff and jitter, the `bases`
// extension for collection merges, and pending keys that remote values never overwrite.
//
// Its merge rules are the Swift client's (README, Design; Sources/Contrail/Contrail.docc/Convergence.md),
// implemented again here because the code cannot be shared: each rule names its Swift counterpart
// (file and function). JSMergeAgreementTests.swift checks mergeCollection against CollectionMerge, and
// Tests/JS/fuzz/convergence.mjs checks JS and Swift clients converge on one scope.
//
//   import { Client, Scope } from "/contrail.js";
//   const client = new Client("ws://127.0.0.1:3000/");
//   const canvas = new Scope("Canvas", { rootClass: "Canvas" });
//   await client.fetch(canvas);
//   canvas.on("change", (e) => console.log(e.model.uuid, e.key, e.value));
//   canvas.modify(() => { const s = canvas.create("Shape", { x: 10, y: 20 }); canvas.root.insert("shapes", s); });

import { COLLECTION_OPS, isUUID, stableElements, withCollectionEdits } from "./contrail-collections.js";

/** Protocol version sent in SessionCreate. */
export const VERSION = "0.2.0";
const FATAL_CLOSE = new Set([4096, 4097]);
// Protocol §8.22: the server is draining and keeps no session; a new one (on any server) at once.
const DRAINING_CLOSE = 4099;
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
const refsOf = (v) => (isUUID(v) ? [v] : Array.isArray(v) ? v.filter(isUUID) : []);

/**
 * What list `after` holds that `before` does not (`inserted`, in `after`'s order, each once) and
 * what `before` held that `after` does not (`removed`). Only the stretch between the lists' common
 * prefix and suffix is hashed, and each element found there checked against the whole other list:
 * an insert into or a removal from a long list costs O(length) identity comparisons.
 */
function listDifference(before, after) {
  let start = 0, endBefore = before.length, endAfter = after.length;
  while (start < endBefore && start < endAfter && before[start] === after[start]) start++;
  while (endBefore > start && endAfter > start && before[endBefore - 1] === after[endAfter - 1]) { endBefore--; endAfter--; }
  const middleBefore = new Set(before.slice(start, endBefore)), middleAfter = new Set(after.slice(start, endAfter));
  return {
    inserted: [...middleAfter].filter((x) => !middleBefore.has(x) && !before.includes(x)),
    removed: [...middleBefore].filter((x) => !middleAfter.has(x) && !after.includes(x)),
  };
}

/**
 * The references `after` holds that `before` did not, or null when `before` held one that `after`
 * does not (an object may have left the tree). O(length) for lists (`listDifference`).
 */
function referenceChange(before, after) {
  if (!Array.isArray(before) || !Array.isArray(after)) {
    const removed = refsOf(before).filter((r) => !refsOf(after).includes(r));
    return removed.length ? null : refsOf(after).filter((r) => !refsOf(before).includes(r));
  }
  const { inserted, removed } = listDifference(before, after);
  return removed.some(isUUID) ? null : inserted.filter(isUUID);
}

/** Minimal event emitter: `on(type, fn)` returns a function that removes the listener. */
export class Emitter {
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
 * The three-way merge of an ordered collection (Protocol §8.4): the edit from `base` to `next` applied
 * to `current`. The same algorithm as Swift's `CollectionMerge.merge(base:new:current:)`
 * (Sources/ContrailWire/Messages/CollectionMerge.swift), rule for rule: removal wins (an element either
 * side removed stays removed unless the edit inserted it; a move does not bring it back), kept
 * elements keep `current`'s order, inserts and moves go after their nearest placed predecessor in
 * `next`, concurrent inserts at one spot keep the order the server applied them in, no element twice.
 * Internal: exported for the client's own tests and the Swift agreement test (JSMergeAgreementTests),
 * not part of the pages' API.
 */
export function mergeCollection(base, next, current) {
  if (same(base, current)) return next.slice();
  if (same(base, next)) return current.slice();
  const nextSet = new Set(next), baseSet = new Set(base), currentSet = new Set(current);
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
    // Rule 1: an element of `base` that `current` lacks was removed by the other side.
    if (baseSet.has(e) && !currentSet.has(e)) continue;
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
  /**
   * The models of a collection property, in order: those of the classes the scope knows (all, unless
   * the scope was given `classes`). The others stay in the collection where they are (Protocol §8.23).
   */
  items(key) { return (this.properties[key] ?? []).map((id) => this.scope.object(id)).filter((m) => m && this.scope.knows(m)); }
  /**
   * Inserts `model` into collection `key` at `at`, an index into `items(key)` (default: the end):
   * right before the item now at `at`, so elements of classes the scope does not know keep their place.
   */
  insert(key, model, at) {
    const list = (this.properties[key] ?? []).slice();
    const before = at === undefined ? undefined : this.items(key)[at];
    list.splice(before ? list.indexOf(before.uuid) : list.length, 0, model.uuid);
    this.set(key, list);
  }
  /** Removes `model` from collection `key`. */
  remove(key, model) { this.set(key, (this.properties[key] ?? []).filter((id) => id !== model.uuid)); }
}

/**
 * The message limits a Contrail server advertises in its SessionCreateReply (Protocol §8.19), or null
 * (an original server, or no valid member). Members that are not positive integers are ignored.
 */
function advertisedLimits(limits) {
  if (!limits || typeof limits !== "object") return null;
  const positive = (n) => (Number.isInteger(n) && n > 0 ? n : null);
  const result = { maxMessageBytes: positive(limits.maxMessageBytes), maxFragmentsPerMessage: positive(limits.maxFragmentsPerMessage) };
  return result.maxMessageBytes === null && result.maxFragmentsPerMessage === null ? null : result;
}

/** Why the ScopeSync `message` is over the server's `limits`, or null when it is not (or there are none). */
function overLimits(message, limits) {
  if (!limits) return null;
  const fragments = message.fragments.length;
  if (limits.maxFragmentsPerMessage !== null && fragments > limits.maxFragmentsPerMessage) {
    return `the change set has ${fragments} fragments, over the server's limit of ${limits.maxFragmentsPerMessage}`;
  }
  if (limits.maxMessageBytes === null) return null;
  // Cheap bound first: UTF-8 takes at most 3 bytes per UTF-16 unit.
  const text = JSON.stringify([message]);
  if (text.length * 3 <= limits.maxMessageBytes) return null;
  const bytes = new TextEncoder().encode(text).length;
  return bytes > limits.maxMessageBytes ? `the change set is ${bytes} bytes, over the server's limit of ${limits.maxMessageBytes}` : null;
}

/** The error `Scope.markRevision` rejects with: `type` says why (§8.26's error types, or the client's own). */
function revisionError(type, message) {
  return Object.assign(new Error(message), { type });
}

/** Whether `value` is a collection on the wire: an array of UUID strings (Protocol §3.2). */
const isCollection = (value) => Array.isArray(value) && value.every(isUUID);
/** What `_heldValue` returns to leave a property alone. */
const KEEP = Symbol("keep");
/** Whether queued change set `entry` changes (id, key), so it knows the key's original. */
const changes = (entry, id, key) => key in (entry.originals.get(id) ?? {});

/**
 * A named tree with a root object, kept in step with the server once a Client fetched it.
 * Events: "change" {model, key, value, previous, remote}, "insert"/"remove" {model, key, item} for
 * collections, "attach"/"detach" {model}, "state" after a full state (or a restore from
 * contrail-store.js, with `restored: true`), "changeset" {fragments, remote, origin},
 * "settled" {fragments, rejected, answers}, "batched" {id, changeSets} when unsent change sets are
 * coalesced into one message (ChangeSetBatch; their ids).
 *
 * Its bookkeeping follows the Swift client's rules (README, Design; Convergence in the documentation
 * catalog); the Swift counterpart of each rule is named where it is implemented.
 */
export class Scope extends Emitter {
  constructor(name, { rootClass = "Root", changeInterval = 10, classes = null } = {}) {
    super();
    this.name = name;
    // The class names the app knows (null: every class). Objects of the others are kept and written
    // back as they are, and `items` leaves them out (Protocol §8.23).
    this.classes = classes ? new Set(classes) : null;
    this.changeInterval = changeInterval;
    this.objects = new Map();  // uuid → Model, the objects in the tree
    this.root = new Model(this, uuid(), rootClass);
    this.objects.set(this.root.uuid, this.root);
    // Change sets sent or waiting, not settled, oldest first (Swift: ChangeSetQueue.entries): each is
    // {id, fragments, originals: Map uuid → {key: value before it}, added: Set of uuids it adds,
    //  atomic, index (of its ScopeSync on this wire session, null when unsent), heldBack,
    //  batch (the id of the ScopeSync it was coalesced into once sent, null before: ChangeSetBatch),
    //  sentAlone (true once it was sent alone)}.
    this.queue = [];
    this._created = new Map(); // uuid → Model made locally, not in the tree yet
    // Objects that left the tree while change sets were pending (Swift: Scope.retired): a revert, a
    // rebase or a remote value that names one again brings back that same object (one object per UUID).
    this._retired = new Map();
    this._pending = new Map(); // uuid → {original: {key: value}} touched since the last flush
    this._remote = false;
    // What the remote values and reverts of one apply or settle did to references in the tree,
    // while it runs (read by `_reconcile`): {added: [[uuid, key, ref]], dropped, released: [[uuid,
    // key]] (keys of change sets that settled, no longer held by them)}.
    this._treeChange = null;
    this._timer = null;
    this._client = null;
    this._scopeIndex = null;
    this._attached = false;     // true once a full state arrived: edits before it wait, then go out
    this._beforeBatch = null;   // () => promise, awaited before a change set first leaves (contrail-store.js saves how)
    this._saving = null;        // that promise while it runs: nothing of this scope is sent meanwhile
    this.fragmentHooks = [];    // (fragment) => void, adding extension members to outgoing fragments (contrail-text.js)
  }

  /** Whether the app knows `model`'s class (the `classes` option); unknown ones are kept, never dropped. */
  knows(model) { return !this.classes || this.classes.has(model.clsName); }

  /** The model with `id`: in the tree, created and not yet attached, or out of the tree and still held. */
  object(id) { return this.objects.get(id) ?? this._created.get(id) ?? this._retired.get(id); }

  /** A new model of class `clsName`; it joins the tree (and syncs as an `add`) once a parent references it. */
  create(clsName, properties = {}) {
    const model = new Model(this, uuid(), clsName, {});
    for (const [k, v] of Object.entries(properties)) model.properties[k] = normalize(v);
    this._created.set(model.uuid, model);
    return model;
  }

  /** Sets a property; outside `modify` the edit goes out in a change set after `changeInterval` ms. */
  set(model, key, value) {
    // A model the scope no longer knows (dropped long ago, held by the app) joins again like a new one.
    for (const m of Array.isArray(value) ? value : [value]) {
      if (m instanceof Model && m.scope === this && !this.object(m.uuid)) this._created.set(m.uuid, m);
    }
    value = normalize(value);
    const previous = model.properties[key];
    if (same(previous, value)) return;
    // The first local edit of a key in this flush keeps the value before it: the change set's original
    // (for a revert) and, for a collection, its base (Swift: Scope.touch in Scope+Recording.swift).
    if (!this._remote && this.objects.has(model.uuid)) {
      let entry = this._pending.get(model.uuid);
      if (!entry) { entry = { original: {} }; this._pending.set(model.uuid, entry); }
      if (!(key in entry.original)) entry.original[key] = copy(previous === undefined ? null : previous);
    }
    if (this._remote && this._treeChange && !this._treeChange.dropped && this.objects.has(model.uuid)) {
      const added = referenceChange(previous, value);
      if (added === null) this._treeChange.dropped = true;
      else for (const ref of added) this._treeChange.added.push([model.uuid, key, ref]);
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

  /**
   * Names the scope's state on the server `label` (a named revision, Protocol §8.26) after every
   * edit made before the call (flushed now, sent before it); resolves to the sequence number of the
   * last change set it includes. Rejects with an Error whose `type` is "extension-unavailable" when
   * the server does not list MarkRevision, "not-fetched" before the scope's fetch reply, the
   * server's type ("revision-exists", "invalid-revision", "forbidden") when it refuses the label,
   * "timeout" without an answer. Swift: Session.markRevision.
   */
  markRevision(label) {
    this.flush();
    return this._client ? this._client._markRevision(this, label) : Promise.reject(revisionError("not-fetched", `scope '${this.name}' is not fetched`));
  }

  /**
   * A live query over this scope's objects of class `clsName` (filter, sort, `{window}`): see
   * contrail-query.js, which provides it once imported (`import "/contrail-query.js"`).
   */
  query(clsName, filter, sort, options) {
    if (!Scope.queryImplementation) throw new Error('scope.query needs: import "/contrail-query.js"');
    return new Scope.queryImplementation(this, clsName, filter, sort, options);
  }

  /**
   * Internal, for contrail-store.js: the replica once it has a full state (null before), its edits
   * not yet flushed (`pending`: the values before them) and its unsettled change sets, as plain data.
   * Swift: the snapshot and pending records of a FragmentLog.
   */
  _saved() {
    if (!this._attached) return null;
    const models = (entries) => Object.fromEntries([...entries].map(([id, m]) => [id, { clsName: m.clsName, properties: m.properties }]));
    const reachable = this._reachable();
    return {
      root: this.root.uuid,
      objects: models(this.objects),
      created: models([...this._created].filter(([id]) => reachable.has(id))),
      retired: models(this._retired),
      pending: Object.fromEntries([...this._pending].map(([id, entry]) => [id, entry.original])),
      queue: this.queue.map((e) => ({ id: e.id, fragments: e.fragments, originals: Object.fromEntries(e.originals), added: [...e.added], atomic: e.atomic, heldBack: e.heldBack, batch: e.batch ?? null, sentAlone: e.sentAlone === true })),
    };
  }

  /**
   * Internal, for contrail-store.js: takes back what `_saved` returned (checked by the caller), before
   * the first fetch and any edit. The replica shows it at once (edits go on offline); its change sets
   * are sent after the fetch with their ids, so a server that applied one answers it as a repeat
   * (Protocol §8.11), and the full state rebases them like any pending change set.
   * Swift: FragmentLog.attach with Scope.restorePending.
   */
  _restore(saved) {
    if (this._attached || this.queue.length || this._pending.size || this._created.size) throw new Error(`scope '${this.name}' is already fetched or edited: restore it first`);
    const model = (id, m) => new Model(this, id, m.clsName, { ...m.properties });
    this.objects.clear();
    this.root.uuid = saved.root;
    this.root.clsName = saved.objects[saved.root].clsName;
    this.root.properties = { ...saved.objects[saved.root].properties };
    this.objects.set(saved.root, this.root);
    for (const [id, m] of Object.entries(saved.objects)) if (id !== saved.root) this.objects.set(id, model(id, m));
    for (const [id, m] of Object.entries(saved.created)) this._created.set(id, model(id, m));
    for (const [id, m] of Object.entries(saved.retired)) this._retired.set(id, model(id, m));
    for (const [id, original] of Object.entries(saved.pending)) if (this.objects.has(id)) this._pending.set(id, { original: { ...original } });
    this.queue = saved.queue.map((e) => ({ id: e.id, fragments: e.fragments, originals: new Map(Object.entries(e.originals)), added: new Set(e.added), atomic: e.atomic, index: null, heldBack: e.heldBack, batch: e.batch ?? null, sentAlone: e.sentAlone === true }));
    this._attached = true;
    for (const m of this.objects.values()) this.emit("attach", { model: m });
    this.emit("state", { root: this.root, restored: true });
    if (this._pending.size || this._created.size) this._schedule();
  }

  _emitChange(model, key, value, previous, remote) {
    this.emit("change", { model, key, value, previous, remote });
    if (Array.isArray(value) || Array.isArray(previous)) {
      const { inserted, removed } = listDifference(Array.isArray(previous) ? previous : [], Array.isArray(value) ? value : []);
      for (const item of inserted) this.emit("insert", { model, key, item, remote });
      for (const item of removed) this.emit("remove", { model, key, item, remote });
    }
  }

  _schedule() {
    if (this._timer !== null) return;
    this._timer = setTimeout(() => { this._timer = null; this.flush(); }, this.changeInterval);
  }

  /**
   * Sends what was edited since the last flush as one change set. Before the first full state the
   * edits wait (the root takes the server's UUID then) and go out right after it.
   * Swift: Scope.flush (Scope+ChangeSets.swift) with Scope.touch (Scope+Recording.swift).
   */
  flush({ atomic = false } = {}) {
    if (this._timer !== null) { clearTimeout(this._timer); this._timer = null; }
    if (!this._attached) return;
    // What the edits made reachable that was not in the tree; when an edit dropped a reference (an
    // object may have left), the whole tree is walked instead.
    const joined = this._joinedByEdits();
    const reachable = joined === null ? this._reachable() : null;
    const fragments = [], originals = new Map(), added = new Set();
    // An object that joins the tree (new, or back after it left in an earlier flush) is sent whole as
    // an `add`; one that leaves one parent and joins another within this flush is not (a move is not
    // an add: it never left `objects`). Swift: Scope+Recording.swift, `leftThisFlush`.
    for (const id of reachable ?? joined) {
      if (this.objects.has(id)) continue;
      const model = this._created.get(id) ?? this._retired.get(id);
      this._created.delete(id);
      this._retired.delete(id);
      this.objects.set(id, model);
      this.emit("attach", { model });
      fragments.push({ type: "add", uuid: id, clsName: model.clsName, properties: { ...model.properties } });
      added.add(id);
    }
    for (const [id, entry] of this._pending) {
      const model = this.objects.get(id);
      if (!model || (reachable && !reachable.has(id))) continue;
      const properties = {}, bases = {};
      for (const key of Object.keys(entry.original)) {
        const value = model.properties[key], original = entry.original[key];
        if (same(value, original)) continue;
        properties[key] = copy(value === undefined ? null : value);
        // A collection goes out with its base, the list before this change set's first edit; a
        // collection never set (null) is the empty base, so concurrent first inserts merge
        // (Swift: Scope.touch keeps the elements of the old value, [] for an empty collection).
        if (isCollection(value) && (original === null || isCollection(original))) bases[key] = original === null ? [] : original.slice();
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
    if (reachable) this._collect(reachable);
    if (!fragments.length) return;
    for (const hook of this.fragmentHooks) for (const fragment of fragments) hook(fragment);
    const entry = { id: uuid(), fragments, originals, added, atomic, index: null, heldBack: false, batch: null, sentAlone: false };
    this.queue.push(entry);
    this.emit("changeset", { fragments, remote: false });
    this._client?._pump(this);
  }

  /**
   * The uuids the edits since the last flush (`_pending`) made reachable from the root that are not
   * in the tree (`objects`), found from what the edits changed; null when an edit dropped a
   * reference (an object may have left the tree: the caller walks it whole, `_reachable`).
   * O(the edited values + the objects reached anew): an edit of a plain value or an insert into a
   * collection does not cost the size of the scope.
   */
  _joinedByEdits() {
    const added = [];
    for (const [id, entry] of this._pending) {
      const model = this.objects.get(id);
      if (!model) continue;  // not in the tree (any more): its references reach nothing from the root
      for (const key of Object.keys(entry.original)) {
        const change = referenceChange(entry.original[key], model.properties[key]);
        if (change === null) return null;
        added.push(...change);
      }
    }
    return this._reachedFrom(added);
  }

  /** The uuids reachable from the root through known models (in the tree, created, or held); objects hang on references (§3.3). */
  _reachable() { return this._walk([this.root.uuid], () => false); }

  /**
   * The uuids reachable from `starts` through known models, not going into those `stop` accepts.
   * O(the models reached and their values).
   */
  _walk(starts, stop) {
    const seen = new Set(), stack = [...starts];
    while (stack.length) {
      const id = stack.pop();
      if (seen.has(id) || stop(id)) continue;
      const model = this.object(id);
      if (!model) continue;
      seen.add(id);
      for (const v of Object.values(model.properties)) for (const r of refsOf(v)) if (!seen.has(r)) stack.push(r);
    }
    return seen;
  }

  /**
   * Whether an object in the tree names a UUID this replica holds no object for, in a key no pending
   * change set holds (a pending value is the app's own; the server settles it).
   */
  _dangling() {
    for (const model of this.objects.values()) {
      for (const key of Object.keys(model.properties)) if (this._dangles(model.uuid, key)) return true;
    }
    return false;
  }

  /** Whether key `key` of object `id` in the tree names an unknown object, and no pending change set holds it. */
  _dangles(id, key) {
    const model = this.objects.get(id);
    return model !== undefined && refsOf(model.properties[key]).some((r) => !this.object(r)) && !this._holders(id, key).length;
  }

  /**
   * Drops objects no longer reachable from the root (removal by orphaning, §3.3). They stay held
   * while change sets are pending, so a revert or rebase that names them again brings them back
   * (Swift: Scope.retire in Scope+Recording.swift, with Scope.retired; a pending edit of a dropped
   * object is dropped with it, as Scope's `pending.removeValue(for:)`).
   */
  _collect(reachable) {
    for (const [id, model] of this.objects) {
      if (reachable.has(id)) continue;
      this.objects.delete(id);
      this._pending.delete(id);
      this._retired.set(id, model);
      this.emit("detach", { model });
    }
  }

  /** Forgets the objects out of the tree once no change set is pending (nothing can bring them back). */
  _pruneRetired() {
    if (!this.queue.length && !this._pending.size) this._retired.clear();
  }

  /**
   * After a remote apply, a revert or a reply: objects that became reachable join the tree (a local
   * creation waits for the next flush, which sends its add); unreachable ones leave it. Returns true
   * when the replica may now differ from the server, so the scope must be fetched again: an object
   * came back that was out of the tree (it missed remote changes meanwhile; Swift: Session.revert), or
   * a reference names an object this replica does not hold.
   */
  _reconcile(incoming = new Set()) {
    const change = this._treeChange;
    this._treeChange = null;
    // Only references were added (the common case: a remote value, an insert): what they reach
    // joins, and only they can name an unknown object. O(the values changed + the objects reached
    // anew), not O(objects).
    if (change && !change.dropped) {
      const joined = this._reachedFrom(change.added.map(([, , ref]) => ref));
      const stale = this._join(joined, incoming);
      // Where an unknown object can be named now: the keys that got references, the keys a settled
      // change set no longer holds, and every key of the objects that joined.
      const named = new Map();  // each key once: a collection many change sets wrote is checked once
      for (const [id, key] of [...change.added, ...change.released]) named.set(`${id} ${key}`, [id, key]);
      for (const id of joined) for (const key of Object.keys(this.objects.get(id)?.properties ?? {})) named.set(`${id} ${key}`, [id, key]);
      return stale || [...named.values()].some(([id, key]) => this._dangles(id, key));
    }
    const reachable = this._reachable();
    const stale = this._join(reachable, incoming);
    this._collect(reachable);
    return stale || this._dangling();
  }

  /** The uuids not in the tree that `refs` reach through known models (`_reachable`'s walk, from them). */
  _reachedFrom(refs) { return this._walk(refs, (id) => this.objects.has(id)); }

  /**
   * Attaches the objects of `reachable` that are not in the tree (a local creation waits for the
   * next flush, unless the server added it too); returns true when one came back from out of the tree.
   */
  _join(reachable, incoming) {
    let stale = false;
    for (const id of reachable) {
      if (this.objects.has(id)) continue;
      if (this._created.has(id) && !incoming.has(id)) continue;  // a local creation: joins with the next flush
      const model = this._created.get(id) ?? this._retired.get(id);
      if (this._retired.has(id) && !incoming.has(id)) stale = true;
      this._created.delete(id);
      this._retired.delete(id);
      this.objects.set(id, model);
      this.emit("attach", { model });
    }
    return stale;
  }

  // The holders of a key (Swift: ChangeSetQueue.Entry.holds / holdsThroughAdd / sentValue /
  // setOriginal). A queued change set holds (uuid, key) when it changes the key, or adds the object
  // (then it holds every key of it, with no original). Before the first full state, unflushed edits
  // hold their keys too (a pseudo change set whose sent value is the local value).

  /** The queued change sets after `after` (all when null) that hold (id, key), oldest first, then the unflushed edits. */
  _holders(id, key, after = null) {
    const start = after ? this.queue.indexOf(after) + 1 : 0;
    const holders = [];
    for (let i = start; i < this.queue.length; i++) {
      const entry = this.queue[i];
      if (changes(entry, id, key) || entry.added.has(id)) holders.push(entry);
    }
    const pending = this._pending.get(id);
    if (pending && key in pending.original) holders.push({ pending });
    return holders;
  }

  /** What `holder` sends for (id, key) as the server applies it: {value, base} (base null: an overwrite), or null. */
  _sentValue(holder, id, key) {
    if (holder.pending) {
      const value = this.object(id)?.properties[key] ?? null, original = holder.pending.original[key];
      return { value, base: isCollection(value) && (original === null || isCollection(original)) ? (original ?? []) : null };
    }
    if (changes(holder, id, key)) {
      const fragment = holder.fragments.find((f) => f.type === "change" && f.uuid === id && key in (f.properties ?? {}));
      return fragment ? { value: fragment.properties[key], base: fragment.bases?.[key] ?? null } : null;
    }
    const add = holder.fragments.find((f) => f.type === "add" && f.uuid === id);
    return add && key in add.properties ? { value: add.properties[key], base: null } : null;
  }

  /** Records `value` as what (id, key) held before `holder` (a rebase or a revert of an earlier change set). */
  _setOriginal(holder, id, key, value) {
    if (holder.pending) holder.pending.original[key] = copy(value);
    else if (changes(holder, id, key)) holder.originals.get(id)[key] = copy(value);
  }

  /**
   * The value of a key the change sets `holders` hold, for a remote value `remote` (§8.3): the remote
   * value becomes the first holder's original, and the property shows the pending edits replayed on
   * it as the server will apply them: each holder's sent value in order, a collection merged by its
   * base (null is the empty collection), an add's value taken whole. KEEP leaves the property alone:
   * the key is held through an add only (the server takes the add's values or answers with its own),
   * or no holder's value is known. Swift: ScopeSubscription.heldValue and ScopeSubscription.rebase.
   */
  _heldValue(model, key, remote, holders) {
    const [first] = holders;
    if (!first.pending && !changes(first, model.uuid, key)) {
      first.heldBack = true;  // Swift: Entry.heldBackRemoteValues: a revert must refetch
      return KEEP;
    }
    let ids = isCollection(remote) ? remote.slice() : [], value, known = false;
    for (const holder of holders) {
      const sent = this._sentValue(holder, model.uuid, key);
      if (!sent) continue;
      known = true;
      value = sent.value;
      if (!isCollection(sent.value)) continue;
      ids = sent.base ? mergeCollection(sent.base, sent.value, ids) : sent.value.slice();
    }
    this._setOriginal(first, model.uuid, key, remote);
    if (!known) return KEEP;
    return isCollection(value) ? ids.filter((id) => this.object(id)) : copy(value);
  }

  /**
   * Applies a server value to (model, key): as is when no pending change set after `after` holds the
   * key, else replayed (`_heldValue`). Swift: ScopeSubscription.redirect (remote values) and
   * ScopeSubscription.applyModifications (a reply's values, after the change set it answers).
   */
  _applyServerValue(model, key, value, after = null) {
    const holders = this._holders(model.uuid, key, after);
    if (!holders.length) { this.set(model, key, value); return; }
    const held = this._heldValue(model, key, value, holders);
    if (held !== KEEP) this.set(model, key, held);
  }

  /**
   * Applies incoming fragments (§4.3); with `rootUUID` they are a full state (ScopeState). Local edits
   * become a change set first, so they hold their keys (Swift: ScopeSubscription.applyRemote and
   * applyState, which flush first). Returns true when the scope must be fetched again (a change to an
   * object out of this replica's tree, or a reference to an object it does not hold).
   */
  _applyRemote(fragments, rootUUID = null, origin = null) {
    this.flush();
    let stale = false;
    this._remote = true;
    this._treeChange = { added: [], dropped: Boolean(rootUUID), released: [] };  // a full state: the whole tree is walked
    try {
      if (rootUUID && rootUUID !== this.root.uuid) this._rekeyRoot(rootUUID);
      const rootFragment = rootUUID && fragments.find((f) => f.uuid === rootUUID);
      if (rootFragment?.clsName) this.root.clsName = rootFragment.clsName;
      // An add of an object this replica holds out of its tree brings back that same object.
      const incoming = new Set(), fresh = new Set();
      for (const f of fragments) {
        if (f.type !== "add" || typeof f.uuid !== "string") continue;
        incoming.add(f.uuid);
        if (!this.object(f.uuid)) { this._created.set(f.uuid, new Model(this, f.uuid, f.clsName, {})); fresh.add(f.uuid); }
      }
      for (const f of fragments) {
        const model = this.objects.get(f.uuid) ?? (incoming.has(f.uuid) ? this.object(f.uuid) : undefined);
        if (!model) { if (f.type === "change") stale = true; continue; }  // Swift: ApplyReport.unknownObjects → refetch
        for (const [key, value] of Object.entries(f.properties ?? {})) this._applyServerValue(model, key, value);
        if (rootUUID) {
          // A full state gives every property: one it leaves out is null (Swift: applyDefaults).
          for (const key of Object.keys(model.properties)) {
            if (!(key in (f.properties ?? {}))) this._applyServerValue(model, key, null);
          }
        }
      }
      stale = this._reconcile(incoming) || stale;
      for (const id of fresh) if (!this.objects.has(id)) this._created.delete(id);  // added and not in the tree
      this._pruneRetired();
    } finally {
      this._remote = false;
      this._treeChange = null;
    }
    this.emit("changeset", { fragments, remote: true, state: Boolean(rootUUID), origin });
    if (rootUUID) {
      this._attached = true;
      this.emit("state", { root: this.root });
      if (this._pending.size || this._created.size) this._schedule();
    }
    // A full state that is itself incomplete would only be fetched again the same way.
    if (stale && !rootUUID) this._client?._refetch(this);
    return stale;
  }

  _rekeyRoot(id) {
    const old = this.root.uuid;
    this.objects.delete(old);
    this.root.uuid = id;
    this.objects.set(id, this.root);
    const p = this._pending.get(old);
    if (p) { this._pending.delete(old); this._pending.set(id, p); }
  }

  /**
   * Reverts `entry` locally (Swift: ChangeSetQueue.revert): the keys of the objects in `only` (all
   * when null) go back to their originals, except keys a later change set holds, which keep their
   * value and take this original as theirs (the rebase) or, held through a later add, keep it as the
   * add sends it. A revert also reaches objects out of the tree (Swift: ChangeSet.revert).
   */
  _revert(entry, only = null) {
    for (const [id, originals] of entry.originals) {
      if (only && !only.has(id)) continue;
      const model = this.object(id);
      if (!model) continue;
      for (const [key, original] of Object.entries(originals)) {
        const [later] = this._holders(id, key, entry);
        if (later) this._setOriginal(later, id, key, original);
        else this.set(model, key, original);
      }
    }
  }

  /**
   * Hands the keys of `entry`, which the server took, to the change sets after it (Swift:
   * ChangeSetQueue.handOver): the next holder of each key takes the value `entry` sent as its
   * original, what the server holds after `entry` (the reply's `modifications`, applied after this,
   * correct it), so reverting that holder later does not bring back a value the server replaced.
   * Fragments of objects in `rejected` are skipped (their revert hands over the originals).
   */
  _handOver(entry, rejected) {
    for (const fragment of entry.fragments) {
      if (fragment.type !== "change" || rejected.has(fragment.uuid)) continue;
      for (const [key, value] of Object.entries(fragment.properties ?? {})) {
        const [later] = this._holders(fragment.uuid, key, entry);
        if (later) this._setOriginal(later, fragment.uuid, key, value);
      }
    }
  }

  /**
   * Settles a change set with its ScopeSyncReply entries (§4.8), or reverts it all when `replies` is
   * null or does not match. Swift: Session.settle (flush first, so this turn's edits hold their keys;
   * revert the rejected objects, or all when every fragment was rejected; hand the accepted keys to
   * the change sets after it; then apply the server's `modifications` after this change set) and Session.revert (refetch when objects came back or
   * remote values an add held back are missing).
   */
  _settle(entry, replies) { this._settleAll([[entry, replies]]); }

  /**
   * Settles change sets in order, each with its replies as `_settle` does, with one flush before and
   * one pass over the tree after (objects join or leave it, refetch if stale) for them all: the
   * members of one batch (ChangeSetBatch), whose reply comes at once. O(change sets × queue + objects),
   * not O(change sets × objects).
   */
  _settleAll(settlements) {
    this.flush();
    const settled = [];
    let stale = false;
    this._remote = true;
    this._treeChange = { added: [], dropped: false, released: [] };
    try {
      for (const [entry, replies] of settlements) {
        const position = this.queue.indexOf(entry);
        if (position < 0) continue;  // settled already (a reply can come only once per entry)
        const whole = !Array.isArray(replies) || replies.length !== entry.fragments.length;
        const answers = entry.fragments.map((_, i) => (whole ? { error: { message: "no matching reply" } } : replies[i] ?? {}));
        const rejected = [];
        entry.fragments.forEach((fragment, i) => { if (answers[i].error) rejected.push({ fragment, error: answers[i].error }); });
        if (rejected.length) {
          const all = rejected.length === entry.fragments.length;
          this._revert(entry, all ? null : new Set(rejected.map((r) => r.fragment.uuid)));
          if (entry.heldBack) stale = true;
        }
        if (rejected.length < entry.fragments.length) this._handOver(entry, new Set(rejected.map((r) => r.fragment.uuid)));
        entry.fragments.forEach((fragment, i) => {
          const modifications = answers[i].error ? null : answers[i].modifications;
          if (!modifications || typeof modifications !== "object") return;
          const model = this.objects.get(fragment.uuid);
          if (!model) { stale = true; return; }
          for (const [key, value] of Object.entries(modifications)) this._applyServerValue(model, key, value, entry);
        });
        this.queue.splice(position, 1);
        for (const [id, originals] of entry.originals) for (const key of Object.keys(originals)) this._treeChange.released.push([id, key]);
        for (const id of entry.added) for (const key of Object.keys(this.object(id)?.properties ?? {})) this._treeChange.released.push([id, key]);
        settled.push({ fragments: entry.fragments, rejected, answers });  // answers[i]: fragment i's reply entry
      }
      stale = this._reconcile() || stale;
      this._pruneRetired();
    } finally {
      this._remote = false;
      this._treeChange = null;
    }
    for (const event of settled) this.emit("settled", event);
    if (stale) this._client?._refetch(this);
  }
}

function normalize(value) {
  if (value instanceof Model) return value.uuid;
  if (Array.isArray(value)) return value.map((v) => (v instanceof Model ? v.uuid : v));
  if (value instanceof Date) return value.getTime() / 1000;
  return value === undefined ? null : value;
}

/**
 * Consecutive unsent change sets sent as one `ScopeSync` (coalescing, issue 30), as Swift's
 * ChangeSetBatch (Sources/Contrail/Sync/ChangeSetBatch.swift), rule for rule. Only the wire message
 * is merged: every change set keeps its queue entry, id, originals and outcome, and is settled from
 * the batch's reply as if it had gone alone (`replies`). Merged: change sets that are not atomic,
 * carry no shared-text or counter members (§8.21), add no object that is out of the tree or that
 * another queued change set adds too, were never sent (alone or in a batch: a server may have
 * applied them under that id), up to `maxMembers` and the server's limits (the JS client has no
 * procedure calls and no undo steps). Fragments are merged
 * per object: a later `change` writes its values over the object's last `change` in the batch (a
 * change after an `add` of it goes as a `change` of its own, after the add), and a collection keeps
 * the base of its first change in the batch, so the server does one three-way merge (§8.4) or one
 * edit (§8.24) per collection. A refused merged fragment refuses every member's fragment of that
 * object (each member reverts it); the server's values go to the last member writing the object.
 * Once sent, a batch is frozen: its members keep its id (`entry.batch`) and go again together under
 * it after a new session or a restore (contrail-store.js), so a server that applied it answers a
 * repeat (§8.11).
 */
class ChangeSetBatch {
  /** The most change sets one batch merges (Swift: ChangeSetBatch.maxMembers). */
  static maxMembers = 1_000;

  /** How many queued change sets of `scope` add each object (Swift: ChangeSetQueue.addCount). O(queue). */
  static addCounts(scope) {
    const counts = new Map();
    for (const entry of scope.queue) for (const id of entry.added) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }

  /** Whether `entry` may be merged with others (see the class comment). O(its fragments). */
  static canJoin(scope, entry, addCounts) {
    if (entry.atomic || entry.sentAlone) return false;
    return entry.fragments.every((f) => f.text === undefined && f.counter === undefined
      && (f.type !== "add" || (scope.objects.has(f.uuid) && addCounts.get(f.uuid) === 1)));
  }

  entries = [];     // the members, oldest first
  fragments = [];   // the merged fragments, in order of each object's first fragment in the batch
  #targets = [];    // for each member, for each of its fragments, the merged fragment it went into
  #slot = new Map(); // uuid → the merged fragment of the object

  /** Adds `entry` when its fragments merge with the batch; false (the batch unchanged) otherwise. O(its fragments and their keys). */
  add(entry) {
    // An object that came back after leaving the tree is added again: it ends the batch.
    if (!entry.fragments.every((f) => f.type === "change" || !this.#slot.has(f.uuid))) return false;
    if (!entry.fragments.every((f) => this.#follows(f))) return false;
    const placed = [];
    for (const f of entry.fragments) {
      const position = this.#slot.get(f.uuid);
      if (position !== undefined && this.fragments[position].type === "change") {
        ChangeSetBatch.#merge(f, this.fragments[position]);
        placed.push(position);
      } else {
        this.#slot.set(f.uuid, this.fragments.length);
        placed.push(this.fragments.length);
        this.fragments.push(f.type === "change" ? { ...f, properties: { ...f.properties }, ...(f.bases ? { bases: { ...f.bases } } : {}) } : f);
      }
    }
    this.entries.push(entry);
    this.#targets.push(placed);
    return true;
  }

  /**
   * Whether fragment `f` edits each collection of its object on the value the batch gives it so
   * far. Not so when a remote value came in between (the replica replayed the earlier members on
   * it): merged on the batch's first base, the edit would undo that remote change on the server, so
   * it ends the batch (not in Swift's, which does not batch across remote values but for over
   * `maxPendingMessages` in flight). O(the collections' lengths).
   */
  #follows(f) {
    const position = this.#slot.get(f.uuid);
    if (f.type !== "change" || !f.bases || position === undefined || this.fragments[position].type !== "change") return true;
    const merged = this.fragments[position].properties;
    return Object.entries(f.bases).every(([key, base]) => !(key in merged) || same(base, merged[key]));
  }

  /** Writes `later`'s values over `earlier` (a copy): a key `earlier` wrote keeps its base, a new one takes `later`'s. */
  static #merge(later, earlier) {
    for (const [key, value] of Object.entries(later.properties)) {
      const wroteBefore = key in earlier.properties;
      earlier.properties[key] = value;
      if (wroteBefore || !later.bases || !(key in later.bases)) continue;
      earlier.bases = { ...earlier.bases, [key]: later.bases[key] };
    }
  }

  /**
   * Each member's fragment replies, as if it had been sent alone, from the batch's `fragmentReplies`:
   * the merged fragment's reply for each of its fragments, `modifications` for the last member
   * writing the object only; null for every member when the reply does not match (each is reverted).
   * O(fragments).
   */
  replies(fragmentReplies) {
    if (!Array.isArray(fragmentReplies) || fragmentReplies.length !== this.fragments.length) return this.entries.map(() => null);
    const last = new Map();
    this.#targets.forEach((placed, member) => { for (const position of placed) last.set(position, member); });
    return this.#targets.map((placed, member) => placed.map((position) => {
      const reply = { ...(fragmentReplies[position] ?? {}) };
      if (last.get(position) !== member) delete reply.modifications;
      return reply;
    }));
  }
}

/**
 * A session with a Contrail (or Jetstream) server. Status: "connecting", "creating", "resuming",
 * "online", "offline" (reconnecting), "denied", "closed". Events: "status", "error".
 */
export class Client extends Emitter {
  constructor(url, { params = {}, pingInterval = 10_000, replyTimeout = 20_000, connectTimeout = 15_000, backoff = { min: 250, max: 10_000, healthyAfter: 10_000 }, WebSocket: WS = globalThis.WebSocket, coalesce = true } = {}) {
    super();
    // Whether consecutive unsent change sets that may be merged go as one message (ChangeSetBatch);
    // off, every change set goes alone (the coalescing tests compare both).
    this.coalesce = coalesce;
    this.url = url;
    this.params = params;
    this.pingInterval = pingInterval;
    this.replyTimeout = replyTimeout;
    this.connectTimeout = connectTimeout;
    this.backoff = backoff;
    this.status = "closed";
    this._WS = WS;
    this._ws = null;
    this._token = null;
    this._limits = null;   // the server's advertised message limits (Protocol §8.19), null when it sent none
    this.extensions = new Set();   // the Contrail extensions the server lists (§8.12); contrail-presence.js reads them
    this.serverLimits = {};        // the server's advertised limits as sent (§8.19, §8.20)
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
    // A handshake that never completes (socket, session create or resume) is given up and retried
    // (Swift: ClientOptions.connectTimeout).
    this._later(this.connectTimeout, () => { if (ws === this._ws && this._started && ["connecting", "creating", "resuming"].includes(this.status)) this._forceReconnect(); });
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
    if ((FATAL_CLOSE.has(code) || code === DRAINING_CLOSE) && this._token !== null) {
      // The session is gone (expired or unknown token): a new one, every scope fetched again,
      // and every unsettled change set sent again after its scope's fetch reply.
      this._resetSession();
      for (const record of this._fetched) {
        record.scope._scopeIndex = null;
        record.scope._refetching = false;
        for (const entry of record.scope.queue) entry.index = null;  // Swift: ChangeSetQueue.markAllUnsent
      }
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
        this._limits = advertisedLimits(m.limits);
        this.extensions = new Set(Array.isArray(m.extensions) ? m.extensions : []);  // Protocol §8.12
        this.serverLimits = m.limits && typeof m.limits === "object" ? m.limits : {};
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
    if (m.type === "PresencePeers" && m.index === 0) { this.emit("presence", m); return; }  // §8.20: contrail-presence.js
    if (!Number.isInteger(m.index) || m.index <= this._serverIndex) return;
    if (m.index !== this._serverIndex + 1) { this._forceReconnect(); return; }
    this._serverIndex = m.index;
    if (m.type === "ScopeFetchReply" || m.type === "ScopeSyncReply" || m.type === "MarkRevisionReply") {
      const waiter = this._replies.get(m.replyTo);
      this._replies.delete(m.replyTo);
      waiter?.handler(m);
    } else if (m.type === "ScopeState") {
      const scope = this._scopesByIndex.get(m.scopeIndex);
      if (scope) {
        scope._incoming = null;
        this._applyState(scope, m.fragments ?? [], m.rootUUID, []);
      }
    } else if (m.type === "ScopeStateChunk") {
      // §8.25: a large state in parts, acknowledged at once so the server sends the next ones.
      this._raw({ type: "Ping", index: 0, ack: this._serverIndex, resendMissing: false });
      const scope = this._scopesByIndex.get(m.scopeIndex);
      if (scope) this._receivePart(scope, m);
    } else if (m.type === "ScopeSync") {
      const scope = this._scopesByIndex.get(m.scopeIndex);
      if (scope?._incoming?.held && Array.isArray(m.fragments)) scope._incoming.held.push(m);  // follows the state
      else if (scope && Array.isArray(m.fragments) && m.fragments.length) scope._applyRemote(m.fragments, null, m.origin ?? null);
    }
  }

  /** Applies a full state, then the change sets that arrived while it came in parts (`held`). */
  _applyState(scope, fragments, rootUUID, held) {
    scope._refetching = false;
    scope._applyRemote(fragments, rootUUID);
    for (const m of held) if (m.fragments.length) scope._applyRemote(m.fragments, null, m.origin ?? null);
    const record = this._fetched.find((r) => r.scope === scope);
    record?.resolve(scope);
    this.emit("attached", scope);
  }

  /**
   * One part of a state (§8.25): checked against the parts before it, reported as a `progress`
   * event ({scope, received, total}), and applied whole once the last is in. A part that does not
   * follow refuses the state (an `error` event, the fetch rejected); the rest of it is dropped.
   */
  _receivePart(scope, m) {
    const fragments = Array.isArray(m.fragments) ? m.fragments : [];
    if (m.offset !== 0 && scope._incoming?.refused) return;
    const parts = m.offset === 0 ? { root: m.rootUUID, total: m.total, fragments: [], held: [] } : scope._incoming;
    if (!parts?.held || !Number.isInteger(m.total) || parts.root !== m.rootUUID || parts.total !== m.total
        || m.offset !== parts.fragments.length || !fragments.length || fragments.length > parts.total - parts.fragments.length) {
      scope._incoming = { refused: true };
      scope._refetching = false;
      const error = new Error(`invalid ScopeStateChunk at offset ${m.offset} of ${m.total}`);
      this.emit("error", error);
      const record = this._fetched.find((r) => r.scope === scope);
      if (record) { this._fetched.splice(this._fetched.indexOf(record), 1); record.reject(error); }
      return;
    }
    for (const fragment of fragments) parts.fragments.push(fragment);
    scope._incoming = parts;
    this.emit("progress", { scope, received: parts.fragments.length, total: parts.total });
    if (parts.fragments.length < parts.total) return;
    scope._incoming = null;
    this._applyState(scope, parts.fragments, parts.root, parts.held);
  }

  /** Online: (re)sends every held or unacknowledged message in index order and starts pinging. */
  _online() {
    // The backoff starts over only once the connection has stayed up a while (issue 28): a server
    // that ends sessions right after they open is backed off from like one that cannot be reached.
    const ws = this._ws;
    this._later(this.backoff.healthyAfter ?? 10_000, () => { if (ws === this._ws && this.status === "online") this._attempt = 0; });
    this._setStatus("online");
    for (const x of this._unacked) this._raw(x);
    for (const record of this._fetched) this._pump(record.scope);
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

  /** Sends an unsequenced message (index 0: never buffered or resent) while online; dropped otherwise. */
  sendUnsequenced(message) {
    if (this.status === "online") this._raw(message);
  }

  _send(message, handler) {
    message.index = ++this._outIndex;
    this._unacked.push(message);
    this._replies.set(message.index, { handler, at: Date.now() });
    if (this.status === "online") this._raw(message);
  }

  _sendFetch(record) {
    const { scope, params } = record;
    const message = { type: "ScopeFetch", index: 0, name: scope.name, params };
    if (this.extensions.has("ScopeStateChunk")) message.chunks = true;  // §8.25
    this._send(message, (reply) => {
      if (reply.error || !Number.isInteger(reply.scopeIndex)) {
        this._fetched.splice(this._fetched.indexOf(record), 1);
        record.reject(new Error(reply.error?.message ?? "scope fetch failed"));
        return;
      }
      scope._scopeIndex = reply.scopeIndex;
      this._scopesByIndex.set(reply.scopeIndex, scope);
      this._pump(scope);
    });
  }

  /** Scope.markRevision: a MarkRevision (§8.26) after the change sets already sent, its reply as a promise. */
  _markRevision(scope, label) {
    return new Promise((resolve, reject) => {
      if (!this.extensions.has("MarkRevision")) {
        reject(revisionError("extension-unavailable", "the server does not offer MarkRevision (an original Jetstream server, or one without history)"));
        return;
      }
      if (scope._scopeIndex === null || this._scopesByIndex.get(scope._scopeIndex) !== scope) {
        reject(revisionError("not-fetched", `scope '${scope.name}' is not fetched on this session`));
        return;
      }
      this._pump(scope, true);  // the change sets flushed before it go first, even offline
      // A new session forgets the request (no resend): the wait ends after replyTimeout.
      const timer = this._later(this.replyTimeout, () => reject(revisionError("timeout", `no answer to MarkRevision '${label}' in ${this.replyTimeout} ms`)));
      this._send({ type: "MarkRevision", index: 0, scopeIndex: scope._scopeIndex, label: String(label) }, (reply) => {
        clearTimeout(timer);
        this._timers.delete(timer);
        if (reply.error || !Number.isInteger(reply.seq)) reject(revisionError(reply.error?.type ?? "revision-refused", reply.error?.message ?? "MarkRevision refused"));
        else resolve(reply.seq);
      });
    });
  }

  /**
   * Fetches `scope` again on this session (its replica may differ from the server's), once at a time;
   * the full state keeps pending keys (Swift: Session.requestFetch).
   */
  _refetch(scope) {
    const record = this._fetched.find((r) => r.scope === scope);
    if (!record || scope._refetching || this._token === null) return;
    scope._refetching = true;
    this._sendFetch(record);
  }

  /**
   * Sends the change sets of `scope` not yet sent on this wire session, oldest first, coalesced where
   * they may be (ChangeSetBatch), once its fetch reply gave it an index. Offline they wait (unless
   * `force`d: a MarkRevision must follow them), so what was edited meanwhile goes in few messages
   * when the session is back, resumed or new (the Swift client holds them in its resend buffer
   * instead). With a `_beforeBatch` hook (contrail-store.js), what goes for the first time is marked
   * first (a new batch's id, or `sentAlone`) and sent once the hook's promise settles, so the mark
   * is saved before the message leaves: a restored replica sends a batch under its id again and
   * never puts a change set a server may have applied into a batch. Change sets made meanwhile
   * wait, and go coalesced. Swift: Session.pump. O(unsent change sets' fragments).
   */
  _pump(scope, force = false) {
    if (scope._scopeIndex === null || (!force && (this.status !== "online" || scope._saving))) return;
    const unsent = scope.queue.filter((entry) => entry.index === null && !entry.refused);
    const plan = [];  // batches and change sets going alone, oldest first
    let addCounts = null;
    for (let i = 0; i < unsent.length;) {
      const first = unsent[i];
      let batch = null;
      if (first.batch || (this.coalesce && this.extensions.size && i + 1 < unsent.length && !unsent[i + 1].batch && !unsent[i + 1].sentAlone)) {
        addCounts ??= ChangeSetBatch.addCounts(scope);
        batch = this._batch(scope, unsent, i, addCounts);
      }
      plan.push(batch ?? first);
      i += batch ? batch.entries.length : 1;
    }
    const fresh = (p) => (p instanceof ChangeSetBatch ? !p.entries[0].batch : !p.sentAlone);
    if (scope._beforeBatch && !force && plan.some(fresh)) {
      for (const p of plan.filter(fresh)) if (p instanceof ChangeSetBatch) this._freeze(scope, p); else p.sentAlone = true;
      scope._saving = Promise.resolve().then(() => scope._beforeBatch()).catch(() => {}).then(() => { scope._saving = null; this._pump(scope); });
      return;
    }
    for (const p of plan) if (p instanceof ChangeSetBatch) this._sendBatch(scope, p); else this._sendChangeSet(scope, p);
  }

  /**
   * The batch `unsent[i]` goes in: the one it was sent in before (frozen: the same members, to go
   * under the same id), or a new one of the change sets from it that may join, within the server's
   * limits (fragments per message, bytes of the message as sent). Null: it goes alone. Swift:
   * Session.batch(from:of:scopeIndex:). O(members' fragments).
   */
  _batch(scope, unsent, i, addCounts) {
    const frozen = unsent[i].batch ?? null;
    if (!frozen && !(ChangeSetBatch.canJoin(scope, unsent[i], addCounts) && ChangeSetBatch.canJoin(scope, unsent[i + 1], addCounts))) return null;
    const maxFragments = Math.min(this._limits?.maxFragmentsPerMessage ?? 10_000, 10_000);
    const batch = new ChangeSetBatch();
    for (let k = i; k < unsent.length; k++) {
      const entry = unsent[k];
      if (frozen ? entry.batch !== frozen
        : batch.entries.length >= ChangeSetBatch.maxMembers || entry.batch || !ChangeSetBatch.canJoin(scope, entry, addCounts)) break;
      if (batch.fragments.length + entry.fragments.length > maxFragments || !batch.add(entry)) break;
    }
    if (!frozen && batch.entries.length < 2) return null;
    batch.sent = this.extensions.has(COLLECTION_OPS) ? batch.fragments.map(withCollectionEdits) : batch.fragments;
    const probe = { type: "ScopeSync", index: 0, scopeIndex: scope._scopeIndex, atomic: false, fragments: batch.sent, changeSet: frozen ?? uuid() };
    return overLimits(probe, this._limits) ? null : batch;
  }

  /**
   * Sends `batch` as one non-atomic ScopeSync under the id its members keep (a new one the first
   * time, `_freeze`), and settles each member from the reply as if it had gone alone.
   */
  _sendBatch(scope, batch) {
    const id = batch.entries[0].batch ?? this._freeze(scope, batch);
    const message = { type: "ScopeSync", index: 0, scopeIndex: scope._scopeIndex, atomic: false, fragments: batch.sent, changeSet: id };
    this._send(message, (reply) => {
      const replies = batch.replies(reply.fragmentReplies);
      scope._settleAll(batch.entries.map((entry, k) => [entry, replies[k]]));
    });
    for (const entry of batch.entries) entry.index = message.index;
  }

  /** Gives the members of a new `batch` its id, for good, and tells the scope ("batched"); returns the id. */
  _freeze(scope, batch) {
    const id = uuid();
    for (const entry of batch.entries) entry.batch = id;
    scope.emit("batched", { id, changeSets: batch.entries.map((entry) => entry.id) });
    return id;
  }

  /**
   * Sends a change set not yet sent on this wire session, with its id (§8.11: the server applies it
   * once). Swift: Session.send (Sources/Contrail/Sync/Session.swift); a new session resends them all.
   */
  _sendChangeSet(scope, entry) {
    if (scope._scopeIndex === null || entry.index !== null) return;  // sent after the fetch reply, or sent
    // A server that does not merge shared text or counters (§8.21) gets the plain values only;
    // collections go as edits of their bases to a server that takes them (§8.24); entry.fragments stay whole.
    const unlisted = ["SharedText", "SharedCounter"].filter((name) => !this.extensions?.has(name));
    let fragments = !unlisted.length ? entry.fragments : entry.fragments.map(({ text, counter, ...plain }) => ({
      ...plain, ...(text && !unlisted.includes("SharedText") ? { text } : {}), ...(counter && !unlisted.includes("SharedCounter") ? { counter } : {}) }));
    if (this.extensions?.has(COLLECTION_OPS)) fragments = fragments.map(withCollectionEdits);
    const message = { type: "ScopeSync", index: 0, scopeIndex: scope._scopeIndex, atomic: entry.atomic, fragments, changeSet: entry.id };
    const refusal = overLimits(message, this._limits);
    if (refusal) {
      // Never sent: the server would close the connection, and every new session would send it again.
      // Reverted and settled as rejected, and the change sets after it go on (Swift: Session.overLimits in
      // Sources/Contrail/Sync/Session.swift, Protocol §8.19). Settled after this turn, outside the flush that sent it.
      const error = { type: "limit-exceeded", message: refusal };
      entry.refused = true;
      queueMicrotask(() => scope._settle(entry, entry.fragments.map(() => ({ error }))));
      return;
    }
    this._send(message, (reply) => scope._settle(entry, reply.fragmentReplies));
    entry.index = message.index;
    entry.sentAlone = true;  // a server may have applied it under its id: it never joins a batch
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

