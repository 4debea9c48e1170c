// contrail-query.js: live queries over a contrail.js Scope, as Swift's `scope.query` (LiveQuery.swift):
// the scope's objects of one class that pass a filter, sorted, optionally windowed, kept up to date as
// they change, join and leave the scope, with the changes a list view needs once per task.
//
//   import { Client, Scope } from "/contrail.js";
//   import "/contrail-query.js";   // installs scope.query
//   const shapes = scope.query("Shape", (s) => s.get("width") > 50, ["color", "-x"], { window: [0, 50] });
//   shapes.on("change", ({ removed, inserted, moved, updated }) => redraw(shapes.items));
//
// What it sees: every object of class `clsName` in the scope's tree (`scope.objects`), wherever it
// sits. Sort keys are property names ("-name" for descending) or {key, descending}; values compare as
// numbers or strings, null first, NaN after every number, ties by uuid (Swift orders alike).
// When events come: once per task (a microtask after the first change), so a remote batch, a rebase
// or a full state is one event with the contents after it; `items` changes only then.
// Changes: `removed` (old indices), `inserted` (new indices), `moved` [{from, to}], `updated` (old
// indices of objects that stayed in place and changed), `oldCount`, `newCount`: a batch update.
// Cost: a change of one object is a binary search and one splice (O(log n) compares, O(n) moves of
// pointers); the window's changes are found by comparing at most the window's objects.
import { Scope } from "./contrail.js";

/** -1, 0, 1: null/undefined first, numbers before strings, NaN after every number. */
function compareValues(a, b) {
  const an = a === null || a === undefined, bn = b === null || b === undefined;
  if (an || bn) return an === bn ? 0 : an ? -1 : 1;
  if (typeof a === "number" && typeof b === "number") {
    if (a < b) return -1;
    if (b < a) return 1;
    if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return 0;
    return Number.isNaN(a) ? 1 : -1;
  }
  const as = typeof a === "number" ? a : String(a), bs = typeof b === "number" ? b : String(b);
  if (typeof as !== typeof bs) return typeof as === "number" ? -1 : 1;
  return as < bs ? -1 : as > bs ? 1 : 0;
}

/** Which of `candidates` ({old, new}) moved; the rest stay in place (Swift: QueryDiff.moved). */
export function movedCandidates(candidates, oldUnstable, newUnstable) {
  const countLess = (sorted, v) => { let lo = 0, hi = sorted.length; while (lo < hi) { const m = (lo + hi) >> 1; if (sorted[m] < v) lo = m + 1; else hi = m; } return lo; };
  const result = candidates.map(() => true);
  const gaps = new Map();
  candidates.forEach((c, i) => {
    const before = c.old - countLess(oldUnstable, c.old), after = c.new - countLess(newUnstable, c.new);
    if (before === after) { if (!gaps.has(before)) gaps.set(before, []); gaps.get(before).push(i); }
  });
  for (const members of gaps.values()) {
    const byNew = members.slice().sort((x, y) => candidates[x].new - candidates[y].new);
    for (const kept of longestIncreasingRun(byNew.map((i) => candidates[i].old))) result[byNew[kept]] = false;
  }
  return result;
}

/** Positions of a longest strictly increasing subsequence of `values`. */
function longestIncreasingRun(values) {
  const tails = [], previous = values.map(() => -1);
  values.forEach((v, p) => {
    let lo = 0, hi = tails.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (values[tails[m]] < v) lo = m + 1; else hi = m; }
    if (lo > 0) previous[p] = tails[lo - 1];
    tails[lo] = p;
  });
  const run = [];
  for (let p = tails.length ? tails[tails.length - 1] : -1; p >= 0; p = previous[p]) run.push(p);
  return run.reverse();
}

/** The changes from list `old` to list `next` (models); `relocated` and `changed` are Sets of models. */
export function listChanges(old, next, relocated, changed) {
  const newIndex = new Map(next.map((m, i) => [m, i]));
  const result = { removed: [], inserted: [], moved: [], updated: [], oldCount: old.length, newCount: next.length };
  const oldUnstable = [], newUnstable = [], candidates = [], kept = new Set();
  old.forEach((m, i) => {
    const to = newIndex.get(m);
    if (to === undefined) { result.removed.push(i); oldUnstable.push(i); return; }
    kept.add(m);
    if (relocated.has(m)) { candidates.push({ old: i, new: to }); oldUnstable.push(i); } else if (changed.has(m)) result.updated.push(i);
  });
  next.forEach((m, i) => { if (!kept.has(m)) { result.inserted.push(i); newUnstable.push(i); } });
  for (const c of candidates) newUnstable.push(c.new);
  newUnstable.sort((a, b) => a - b);
  resolve(candidates, oldUnstable, newUnstable, result);
  return result;
}

function resolve(candidates, oldUnstable, newUnstable, result) {
  const moved = movedCandidates(candidates, oldUnstable, newUnstable);
  candidates.forEach((c, i) => { if (moved[i]) result.moved.push({ from: c.old, to: c.new }); else result.updated.push(c.old); });
  result.moved.sort((a, b) => a.from - b.from);
  result.updated.sort((a, b) => a - b);
}

/**
 * A live query. `items` is the window's models (all matches without a window), `totalCount` the
 * number of matches; "change" events carry the changes. `window` is [start, end) or null; setting it
 * takes effect (with a change event) at the next delivery. `close()` stops it.
 */
export class LiveQuery {
  #listeners = new Set();
  #unsubscribe = [];
  #entries = [];          // {key: [...], id, model}, sorted
  #members = new Map();   // model → entry
  #dirty = new Set();
  #scheduled = false;
  #applied = null;        // the window `items` holds
  #shown = null;          // the window's models, or null without a window

  constructor(scope, clsName, filter = () => true, sort = [], { window = null } = {}) {
    this.scope = scope;
    this.clsName = clsName;
    this.filter = filter;
    this.sort = (Array.isArray(sort) ? sort : [sort]).map((s) => (typeof s === "string"
      ? { key: s.replace(/^-/, ""), descending: s.startsWith("-") } : { key: s.key, descending: Boolean(s.descending) }));
    this.window = window;
    this.#applied = window;
    const mark = ({ model }) => this.#mark(model);
    for (const type of ["change", "attach", "detach"]) this.#unsubscribe.push(scope.on(type, mark));
    // A full state can rekey the root and replaces everything: every object is looked at again.
    this.#unsubscribe.push(scope.on("state", () => {
      for (const model of this.#members.keys()) this.#mark(model);
      for (const model of scope.objects.values()) this.#mark(model);
    }));
    for (const model of scope.objects.values()) {
      const entry = this.#current(model);
      if (entry) this.#entries.push(entry);
    }
    this.#entries.sort((a, b) => this.#compare(a, b));
    for (const entry of this.#entries) this.#members.set(entry.model, entry);
    this.#shown = window ? this.#slice(window) : null;
  }

  /** The models shown: the window's, or every match in order. */
  get items() { return this.#shown ?? this.#entries.map((e) => e.model); }
  /** The number of matches, in the window or not. */
  get totalCount() { return this.#entries.length; }
  /** Moves the window ([start, end) offsets into the matches, or null for all); delivered with changes. */
  setWindow(window) { this.window = window; this.#schedule(); }
  /** Listens for "change" events; returns a function that removes the listener. */
  on(type, fn) {
    if (type !== "change") throw new Error(`LiveQuery has no "${type}" event`);
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
  /** Stops following the scope. */
  close() { for (const off of this.#unsubscribe.splice(0)) off(); }

  #slice(window) { return this.#entries.slice(Math.max(0, window[0]), Math.max(0, window[1])).map((e) => e.model); }

  #compare(a, b) {
    for (let i = 0; i < this.sort.length; i++) {
      const c = compareValues(a.key[i], b.key[i]);
      if (c !== 0) return this.sort[i].descending ? -c : c;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  }

  #current(model) {
    if (model.clsName !== this.clsName || this.scope.objects.get(model.uuid) !== model || !this.filter(model)) return null;
    return { key: this.sort.map((s) => model.properties[s.key]), id: model.uuid, model };
  }

  /** The index of `entry` in the entries, or where it would go. */
  #position(entry) {
    let lo = 0, hi = this.#entries.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (this.#compare(this.#entries[m], entry) < 0) lo = m + 1; else hi = m; }
    return lo;
  }

  #mark(model) {
    if (!model) return;
    this.#dirty.add(model);
    this.#schedule();
  }

  #schedule() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => { this.#scheduled = false; this.#flush(); });
  }

  #flush() {
    const stayed = [], moving = [];
    for (const model of this.#dirty) {
      const old = this.#members.get(model) ?? null, next = this.#current(model);
      if (!old && !next) continue;
      const item = { model, old, next, oldIndex: old ? this.#position(old) : -1, newIndex: -1 };
      if (old && next && this.#compare(old, next) === 0) stayed.push(item); else moving.push(item);
    }
    this.#dirty.clear();
    const windowMoved = JSON.stringify(this.window) !== JSON.stringify(this.#applied);
    if (!stayed.length && !moving.length && !windowMoved) return;
    const oldCount = this.#entries.length;
    const oldShown = this.#shown ?? (windowMoved ? this.#entries.map((e) => e.model) : null);
    for (const item of moving) if (item.old) { this.#entries.splice(this.#position(item.old), 1); this.#members.delete(item.model); }
    for (const item of moving) if (item.next) { this.#entries.splice(this.#position(item.next), 0, item.next); this.#members.set(item.model, item.next); }
    for (const item of stayed) { this.#members.set(item.model, item.next); item.newIndex = this.#position(item.next); this.#entries[item.newIndex] = item.next; }
    for (const item of moving) if (item.next) item.newIndex = this.#position(item.next);
    let changes;
    if (oldShown) {
      const end = this.#applied ? this.#applied[1] : Infinity;
      const reaches = windowMoved || moving.some((i) => (i.old && i.oldIndex < end) || (i.next && i.newIndex < end));
      if (!reaches) {
        const start = this.#applied ? this.#applied[0] : 0;
        changes = { removed: [], inserted: [], moved: [], updated: stayed.filter((i) => i.oldIndex >= start && i.oldIndex < end).map((i) => i.oldIndex - start).sort((a, b) => a - b), oldCount: oldShown.length, newCount: oldShown.length };
      } else {
        this.#applied = this.window;
        const next = this.window ? this.#slice(this.window) : this.#entries.map((e) => e.model);
        this.#shown = this.window ? next : null;
        changes = listChanges(oldShown, next, new Set(moving.filter((i) => i.old && i.next).map((i) => i.model)), new Set(stayed.map((i) => i.model)));
      }
    } else {
      changes = { removed: [], inserted: [], moved: [], updated: stayed.map((i) => i.oldIndex), oldCount, newCount: this.#entries.length };
      const candidates = [], oldUnstable = [], newUnstable = [];
      for (const item of moving) {
        if (item.old) oldUnstable.push(item.oldIndex);
        if (item.next) newUnstable.push(item.newIndex);
        if (item.old && item.next) candidates.push({ old: item.oldIndex, new: item.newIndex });
        else if (item.old) changes.removed.push(item.oldIndex);
        else changes.inserted.push(item.newIndex);
      }
      oldUnstable.sort((a, b) => a - b);
      newUnstable.sort((a, b) => a - b);
      changes.removed.sort((a, b) => a - b);
      changes.inserted.sort((a, b) => a - b);
      resolve(candidates, oldUnstable, newUnstable, changes);
    }
    const empty = !changes.removed.length && !changes.inserted.length && !changes.moved.length && !changes.updated.length;
    if (empty && oldCount === this.#entries.length) return;
    changes.totalCount = this.#entries.length;
    for (const fn of [...this.#listeners]) {
      try { fn(changes); } catch (error) { console.error("contrail-query.js listener failed", error); }
    }
  }
}

Scope.queryImplementation = LiveQuery;
