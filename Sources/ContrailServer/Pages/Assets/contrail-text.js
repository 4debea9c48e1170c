// contrail-text.js: the shared text CRDT of Protocol §8.21 for the browser, the same algorithm as
// Swift's TextDocument (Sources/ContrailWire/Shared/TextDocument.swift): characters with ids
// (replica, seq) and the ids of their neighbours when typed; concurrent insertions at one spot
// ordered by FugueMax's rule, ties broken by replica name in byte order. The code cannot be shared,
// so JSTextAgreementTests.swift runs both on the same random concurrent operations and compares.
// Positions count Unicode scalars (code points), as in Swift. Runs are kept in one flat array: a
// caption or a note, not a book.
//
//   import { TextDocument } from "/contrail-text.js";
//   const doc = new TextDocument("tab1");
//   const op = doc.insert("hello", 0);          // send TextDocument.encode([op]) as a fragment's `text`
//   other.applyAll(TextDocument.decode(json));   // returns [{insert: [position, text]} | {delete: [position, count]}]

const REPLICA_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** A fresh replica name: 22 random characters. */
export function newReplicaName() {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = new Uint8Array(22);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

const same = (a, b) => (a === null ? b === null : b !== null && a[0] === b[0] && a[1] === b[1]);
// Replica names are ASCII, so JavaScript's UTF-16 order is Swift's byte order.
const precedes = (a, b) => a < b;

/** Collaborative plain text (Protocol §8.21). */
export class TextDocument {
  constructor(replica, initialText = "") {
    if (!REPLICA_RE.test(replica)) throw new Error(`invalid text replica name '${replica}'`);
    this.replica = replica;
    this.runs = [];            // {agent, seq, length, deleted, left: [agent, seq] | null, right}
    this.content = new Map();  // agent → array of code points (strings), indexed by seq
    const initial = Array.from(initialText);
    if (initial.length) {
      this.runs.push({ agent: "0", seq: 0, length: initial.length, deleted: false, left: null, right: null });
      this.content.set("0", initial);
    }
  }

  get count() { return this.runs.reduce((n, r) => n + (r.deleted ? 0 : r.length), 0); }

  get text() {
    let out = "";
    for (const r of this.runs) if (!r.deleted) out += this.content.get(r.agent).slice(r.seq, r.seq + r.length).join("");
    return out;
  }

  have(agent) { return this.content.get(agent)?.length ?? 0; }

  /** The run index and offset of visible character `position`. */
  locate(position) {
    let rest = position;
    for (let i = 0; i < this.runs.length; i++) {
      const r = this.runs[i];
      if (r.deleted) continue;
      if (rest < r.length) return [i, rest];
      rest -= r.length;
    }
    throw new RangeError(`text position ${position} is outside 0...${this.count}`);
  }

  /** The run index and offset of character `id` ([agent, seq]), or null. */
  find(id) {
    for (let i = 0; i < this.runs.length; i++) {
      const r = this.runs[i];
      if (r.agent === id[0] && id[1] >= r.seq && id[1] < r.seq + r.length) return [i, id[1] - r.seq];
    }
    return null;
  }

  split(index, offset) {
    const r = this.runs[index];
    const tail = { ...r, seq: r.seq + offset, length: r.length - offset, left: [r.agent, r.seq + offset - 1] };
    r.length = offset;
    this.runs.splice(index + 1, 0, tail);
  }

  visibleBefore(index) {
    let n = 0;
    for (let i = 0; i < index; i++) if (!this.runs[i].deleted) n += this.runs[i].length;
    return n;
  }

  appendContent(agent, chars) {
    if (!this.content.has(agent)) this.content.set(agent, []);
    this.content.get(agent).push(...chars);
  }

  /** Inserts `text` at `position` as this replica; returns the operation (null for empty text). */
  insert(text, position) {
    const count = this.count;
    if (position < 0 || position > count) throw new RangeError(`text position ${position} is outside 0...${count}`);
    const chars = Array.from(text);
    if (!chars.length) return null;
    const me = this.replica, seq = this.have(me);
    let left = null, right = null, at = 0;
    if (position === 0) {
      if (this.runs.length) right = [this.runs[0].agent, this.runs[0].seq];
    } else {
      const [i, offset] = this.locate(position - 1);
      const r = this.runs[i];
      left = [r.agent, r.seq + offset];
      at = i + 1;
      if (offset + 1 < r.length) {
        right = [r.agent, r.seq + offset + 1];
        this.split(i, offset + 1);
      } else {
        right = at < this.runs.length ? [this.runs[at].agent, this.runs[at].seq] : null;
        if (r.agent === me && r.seq + r.length === seq && !r.deleted && same(r.right, right)) {
          r.length += chars.length;
          this.appendContent(me, chars);
          return { insert: { id: [me, seq], text, left, right } };
        }
      }
    }
    this.runs.splice(at, 0, { agent: me, seq, length: chars.length, deleted: false, left, right });
    this.appendContent(me, chars);
    return { insert: { id: [me, seq], text, left, right } };
  }

  /** Deletes visible characters [start, end); returns the operations. */
  delete(start, end) {
    if (start < 0 || end > this.count || start > end) throw new RangeError(`text range ${start}..<${end} is outside the text`);
    const ops = [];
    let remaining = end - start;
    while (remaining > 0) {
      let [i, offset] = this.locate(start);
      if (offset > 0) { this.split(i, offset); i += 1; }
      const r = this.runs[i];
      const taken = Math.min(remaining, r.length);
      if (taken < r.length) this.split(i, taken);
      r.deleted = true;
      const last = ops[ops.length - 1];
      if (last && last.delete.id[0] === r.agent && last.delete.id[1] + last.delete.count === r.seq) last.delete.count += taken;
      else ops.push({ delete: { id: [r.agent, r.seq], count: taken } });
      remaining -= taken;
    }
    return ops;
  }

  /** Applies operations in order; returns what changed where. */
  applyAll(ops) { return ops.flatMap((op) => this.apply(op)); }

  /** Applies one operation from any replica (idempotent); throws on one naming unknown characters. */
  apply(op) {
    if (op.delete) return this.remove(op.delete.id, op.delete.count);
    let { id, text, left, right } = op.insert;
    let chars = Array.from(text);
    const have = this.have(id[0]);
    let seq = id[1];
    if (seq + chars.length <= have) return [];
    if (seq < have) { chars = chars.slice(have - seq); left = [id[0], have - 1]; seq = have; }
    if (seq !== have) throw new Error(`text insertion of ${id[0]} at ${seq} skips to it from ${have}`);
    let start = 0, startOffset = 0;
    if (left) {
      const found = this.find(left);
      if (!found) throw new Error(`text operation names an unknown character ${left[0]}:${left[1]}`);
      [start, startOffset] = [found[0], found[1] + 1];
    }
    let end = null;
    if (right) {
      end = this.find(right);
      if (!end) throw new Error(`text operation names an unknown character ${right[0]}:${right[1]}`);
    }
    // The concurrent runs between the origins, as pieces.
    const pieces = [];
    let i = start, offset = startOffset;
    for (;;) {
      if (i < this.runs.length && offset >= this.runs[i].length) { i += 1; offset = 0; }
      if (end && i === end[0] && offset === end[1]) break;
      if (i >= this.runs.length) {
        if (!end) break;
        throw new Error("an insertion's right origin is not after its left origin");
      }
      const r = this.runs[i];
      let length = r.length - offset;
      if (end && i === end[0]) {
        if (end[1] <= offset) throw new Error("an insertion's right origin is not after its left origin");
        length = end[1] - offset;
      }
      pieces.push({ run: i, offset, agent: r.agent, seq: r.seq + offset, length,
        left: offset > 0 ? [r.agent, r.seq + offset - 1] : r.left, right: r.right });
      offset += length;
      if (offset >= r.length) { i += 1; offset = 0; }
    }
    const inPieces = (from, to, id) => {
      for (let k = from; k < to; k++) {
        const p = pieces[k];
        if (p.agent === id[0] && id[1] >= p.seq && id[1] < p.seq + p.length) return true;
      }
      return false;
    };
    let destination = 0, scanning = false, index = 0, reachedEnd = true;
    while (index < pieces.length) {
      if (!scanning) destination = index;
      const p = pieces[index];
      if (!same(p.left, left)) {
        if (p.left && inPieces(0, index, p.left)) { index += 1; continue; }
        reachedEnd = false;
        break;
      }
      if (same(p.right, right)) {
        if (precedes(id[0], p.agent)) { reachedEnd = false; break; }
        scanning = false;
      } else {
        scanning = p.right !== null && inPieces(index + 1, pieces.length, p.right);
      }
      index += 1;
    }
    if (reachedEnd && !scanning) destination = pieces.length;
    let at, splitOffset;
    if (destination < pieces.length) [at, splitOffset] = [pieces[destination].run, pieces[destination].offset];
    else if (end) [at, splitOffset] = end;
    else [at, splitOffset] = [this.runs.length, 0];
    if (splitOffset > 0) { this.split(at, splitOffset); at += 1; }
    const position = this.visibleBefore(at);
    const insertedText = chars.join("");
    const previous = this.runs[at - 1];
    if (previous && previous.agent === id[0] && previous.seq + previous.length === seq && !previous.deleted
        && same(left, [id[0], seq - 1]) && same(previous.right, right)) {
      previous.length += chars.length;
    } else {
      this.runs.splice(at, 0, { agent: id[0], seq, length: chars.length, deleted: false, left, right });
    }
    this.appendContent(id[0], chars);
    return [{ insert: [position, insertedText] }];
  }

  remove(id, count) {
    if (!(count > 0) || id[1] + count > this.have(id[0])) throw new Error(`text operation names an unknown character ${id[0]}:${id[1] + count - 1}`);
    const changes = [];
    let seq = id[1], remaining = count;
    while (remaining > 0) {
      let [i, offset] = this.find([id[0], seq]);
      const r = this.runs[i];
      const taken = Math.min(remaining, r.length - offset);
      if (!r.deleted) {
        if (offset > 0) { this.split(i, offset); i += 1; }
        if (taken < this.runs[i].length) this.split(i, taken);
        const position = this.visibleBefore(i);
        this.runs[i].deleted = true;
        const last = changes[changes.length - 1];
        if (last && last.delete[0] === position) last.delete[1] += taken;
        else changes.push({ delete: [position, taken] });
      }
      seq += taken;
      remaining -= taken;
    }
    return changes;
  }

  /** A cursor ([agent, seq] or null for the end) that stays before its character. */
  cursor(position) {
    if (position === this.count) return null;
    const [i, offset] = this.locate(position);
    return [this.runs[i].agent, this.runs[i].seq + offset];
  }

  /** Where `cursor` stands now (null: unknown character). */
  positionOf(cursor) {
    if (cursor === null) return this.count;
    const found = this.find(cursor);
    if (!found) return null;
    return this.visibleBefore(found[0]) + (this.runs[found[0]].deleted ? 0 : found[1]);
  }

  /** The wire form of operations: {replicas, ops} (Protocol §8.21). */
  static encode(ops) {
    const names = [], index = new Map();
    const at = (name) => { if (!index.has(name)) { index.set(name, names.length); names.push(name); } return index.get(name); };
    const encoded = ops.map((op) => {
      if (op.delete) return [at(op.delete.id[0]), op.delete.id[1], op.delete.count];
      const { id, text, left, right } = op.insert;
      return [at(id[0]), id[1], text, left ? at(left[0]) : -1, left ? left[1] : 0, right ? at(right[0]) : -1, right ? right[1] : 0];
    });
    return { replicas: names, ops: encoded };
  }

  /** Decodes `encode`'s form, checking it; throws on anything else. */
  static decode(json) {
    const names = json?.replicas;
    if (!Array.isArray(names) || !names.every((n) => typeof n === "string" && REPLICA_RE.test(n)) || new Set(names).size !== names.length
        || !Array.isArray(json.ops)) throw new Error("malformed text operations");
    const id = (f, k) => {
      const r = f[k], s = f[k + 1];
      if (!Number.isInteger(r) || !Number.isInteger(s) || r < -1 || r >= names.length || s < 0 || s > 2147483647) throw new Error("malformed text operations");
      return r < 0 ? null : [names[r], s];
    };
    return json.ops.map((f) => {
      if (!Array.isArray(f)) throw new Error("malformed text operations");
      const first = id(f, 0);
      if (f.length === 3 && first && Number.isInteger(f[2]) && f[2] > 0) return { delete: { id: first, count: f[2] } };
      if (f.length === 7 && first && typeof f[2] === "string" && f[2].length) return { insert: { id: first, text: f[2], left: id(f, 3), right: id(f, 5) } };
      throw new Error("malformed text operations");
    });
  }

  /**
   * The whole document, as Swift's stateJSON encodes it (Protocol §8.21, version 1):
   * {replicas, runs: base64 of the run table, text: the visible text}, byte for byte the same.
   */
  stateJSON() {
    const names = [], index = new Map();
    const at = (name) => { if (!index.has(name)) { index.set(name, names.length); names.push(name); } return index.get(name); };
    // Runs that continue each other are one (how a document holds them depends on its history).
    const runs = [];
    for (const r of this.runs) {
      const last = runs[runs.length - 1];
      if (last && r.agent === last.agent && r.seq === last.seq + last.length && r.deleted === last.deleted
          && same(r.left, [last.agent, last.seq + last.length - 1]) && same(r.right, last.right)) {
        runs[runs.length - 1] = { ...last, length: last.length + r.length };
      } else {
        runs.push(r);
      }
    }
    const bytes = [STATE_VERSION];
    writeVarint(bytes, runs.length);
    let text = "";
    runs.forEach((r, i) => {
      const prev = runs[i - 1], next = runs[i + 1];
      const fields = [];
      let header = r.deleted ? 1 : 0, signed = false;
      if (prev && prev.agent === r.agent) {
        const delta = r.seq - (prev.seq + prev.length);
        if (delta !== 0) { header |= 1 << 1; fields.push(delta); signed = true; }
      } else {
        header |= 2 << 1;
        fields.push(at(r.agent), r.seq);
      }
      if (same(r.left, prev ? [prev.agent, prev.seq + prev.length - 1] : null)) { /* implied */ }
      else if (same(r.left, [r.agent, r.seq - 1])) header |= 1 << 3;
      else if (r.left === null) header |= 2 << 3;
      else { header |= 3 << 3; fields.push(at(r.left[0]), r.left[1]); }
      if (same(r.right, next ? [next.agent, next.seq] : null)) { /* implied */ }
      else if (next && same(r.right, next.right)) header |= 1 << 5;
      else if (r.right === null) header |= 2 << 5;
      else { header |= 3 << 5; fields.push(at(r.right[0]), r.right[1]); }
      bytes.push(header);
      writeVarint(bytes, r.length);
      fields.forEach((field, k) => writeVarint(bytes, k === 0 && signed ? (field >= 0 ? field * 2 : -field * 2 - 1) : field));
      if (!r.deleted) text += this.content.get(r.agent).slice(r.seq, r.seq + r.length).join("");
    });
    return { replicas: names, runs: toBase64(bytes), text };
  }

  /** A document typing as `replica` holding `state` (stateJSON's form); throws on anything malformed. */
  static fromState(replica, state) {
    const fail = (why) => { throw new Error(`malformed text state: ${why}`); };
    const doc = new TextDocument(replica);
    const names = state?.replicas;
    if (!Array.isArray(names) || !names.every((n) => typeof n === "string" && REPLICA_RE.test(n)) || new Set(names).size !== names.length
        || typeof state.runs !== "string" || typeof state.text !== "string") fail("not {replicas, runs, text}");
    const reader = new StateReader(fromBase64(state.runs));
    if (reader.byte() !== STATE_VERSION) fail("unknown version");
    const count = reader.varint(Math.min(MAX_CHARACTERS, reader.bytes.length / 2)), chars = Array.from(state.text);
    const id = () => [names[reader.varint(names.length - 1)], reader.varint(MAX_CHARACTERS - 1)];
    const rightCodes = [];
    let total = 0, textOffset = 0;
    for (let i = 0; i < count; i++) {
      const header = reader.byte();
      if (header & 0x80 || (header & 6) === 6) fail("unknown run header");
      const length = reader.varint(MAX_CHARACTERS);
      total += length;
      if (length < 1 || total > MAX_CHARACTERS) fail("an empty run, or too many characters");
      const prev = doc.runs[i - 1];
      let agent, seq;
      const idCode = (header >> 1) & 3;
      if (idCode < 2) {
        if (!prev) fail("the first run names no replica");
        agent = prev.agent;
        seq = prev.seq + prev.length + (idCode === 1 ? reader.signed(MAX_CHARACTERS) : 0);
      } else {
        [agent, seq] = id();
      }
      if (seq < 0 || seq + length > MAX_CHARACTERS) fail("a run's seq is out of range");
      const run = { agent, seq, length, deleted: (header & 1) === 1, left: null, right: null };
      const leftCode = (header >> 3) & 3;
      if (leftCode === 0) run.left = prev ? [prev.agent, prev.seq + prev.length - 1] : null;
      else if (leftCode === 1) { if (seq === 0) fail("no previous character"); run.left = [agent, seq - 1]; }
      else if (leftCode === 3) run.left = id();
      const rightCode = (header >> 5) & 3;
      if (rightCode === 3) run.right = id();
      rightCodes.push(rightCode);
      doc.runs.push(run);
      if (!doc.content.has(agent)) doc.content.set(agent, []);
      const content = doc.content.get(agent);
      for (let k = 0; k < length; k++) {
        if (content[seq + k] !== undefined) fail("a character is listed twice");
        content[seq + k] = run.deleted ? "\uFFFF" : chars[textOffset + k] ?? fail("the text is shorter than its runs");
      }
      if (!run.deleted) textOffset += length;
    }
    if (!reader.atEnd()) fail("bytes after the runs");
    if (textOffset !== chars.length) fail("the text is longer than its runs");
    for (let i = doc.runs.length - 1; i >= 0; i--) {
      const next = doc.runs[i + 1];
      if (rightCodes[i] === 0) doc.runs[i].right = next ? [next.agent, next.seq] : null;
      else if (rightCodes[i] === 1) { if (!next) fail("the last run has no next one"); doc.runs[i].right = next.right; }
    }
    for (const content of doc.content.values()) {
      for (let k = 0; k < content.length; k++) if (content[k] === undefined) fail("a gap");
    }
    for (const r of doc.runs) {
      for (const origin of [r.left, r.right]) if (origin && origin[1] >= doc.have(origin[0])) fail("an origin it lacks");
    }
    return doc;
  }
}

const STATE_VERSION = 1;
const MAX_CHARACTERS = 1 << 24;

function writeVarint(bytes, value) {
  while (value >= 0x80) { bytes.push((value & 0x7f) | 0x80); value = Math.floor(value / 128); }
  bytes.push(value);
}

/** Reads the run table's bytes; every read is bounds-checked. */
class StateReader {
  constructor(bytes) { this.bytes = bytes; this.offset = 0; }
  byte() {
    if (this.offset >= this.bytes.length) throw new Error("malformed text state: the runs end too early");
    return this.bytes[this.offset++];
  }
  varint(max) {
    let value = 0, scale = 1;
    for (;;) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if (!(byte & 0x80)) break;
      scale *= 128;
      if (scale >= 2 ** 35) throw new Error("malformed text state: a varint is too long");
    }
    if (value > max) throw new Error(`malformed text state: a number is above ${max}`);
    return value;
  }
  signed(max) {
    const raw = this.varint(2 * max + 1);
    return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
  }
  atEnd() { return this.offset === this.bytes.length; }
}

function toBase64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.slice(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text) {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw new Error("malformed text state: runs are not base64");
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/**
 * A Scope's string property edited as shared text (Protocol §8.21): local edits go out as operations
 * beside the plain string (through `scope.fragmentHooks`), remote operations and states are merged
 * (through the scope's "changeset" events), and `onChange(changes, isRemote)` hears what changed where.
 * The property's plain value always holds the text, so the rest of the page reads it as before.
 *
 *   const caption = new SharedTextBinding(scope, scope.root, "caption");
 *   caption.insert("Hello", 0); caption.onChange = (changes, isRemote) => render(caption.text);
 */
export class SharedTextBinding {
  constructor(scope, model, key, replica = newReplicaName()) {
    this.scope = scope;
    this.model = model;
    this.key = key;
    this.doc = new TextDocument(replica, typeof model.properties[key] === "string" ? model.properties[key] : "");
    this.unsent = [];   // local operations not yet in a change set
    this.local = [];    // every local operation, merged again after a full state
    this.onChange = null;
    scope.fragmentHooks.push((fragment) => {
      if (fragment.uuid !== this.model.uuid || !(this.key in fragment.properties)) return;
      if (fragment.type === "add") fragment.text = { ...fragment.text, [this.key]: this.doc.stateJSON() };
      else if (this.unsent.length) fragment.text = { ...fragment.text, [this.key]: TextDocument.encode(this.unsent) };
      this.unsent = [];
    });
    scope.on("changeset", ({ fragments, remote, state }) => {
      if (!remote) return;
      for (const fragment of fragments) {
        if (fragment.uuid !== this.model.uuid) continue;
        const member = fragment.text?.[this.key];
        if (!member && !(this.key in (fragment.properties ?? {}))) continue;  // not about this text
        const before = this.doc.text;
        try {
          if (member?.runs) {
            // A full state or an add: the server's text, with this tab's own operations merged back in.
            const doc = TextDocument.fromState(this.doc.replica, member);
            for (const op of this.local) { try { doc.apply(op); } catch { /* depends on what the state lacks */ } }
            this.doc = doc;
          } else if (member) {
            this.doc.applyAll(TextDocument.decode(member));
          } else if (typeof fragment.properties?.[this.key] === "string" && fragment.properties[this.key] !== before) {
            this.doc = new TextDocument(this.doc.replica, fragment.properties[this.key]);  // a plain write
          }
        } catch (error) {
          console.warn("contrail-text:", error);
        }
        this.model.properties[this.key] = this.doc.text;
        if (this.doc.text !== before) this.onChange?.([{ replace: [before, this.doc.text] }], true);
      }
    });
  }

  get text() { return this.doc.text; }

  /** Inserts `text` at `position` (Unicode scalars). */
  insert(text, position) {
    const op = this.doc.insert(text, position);
    if (op) this.record([op], [{ insert: [position, text] }]);
  }

  /** Deletes [start, end). */
  delete(start, end) {
    if (end > start) this.record(this.doc.delete(start, end), [{ delete: [start, end - start] }]);
  }

  /** Makes the text `next` by keeping the common prefix and suffix (what a textarea's input gives). */
  replaceAll(next) {
    const old = Array.from(this.doc.text), now = Array.from(next);
    let prefix = 0;
    while (prefix < old.length && prefix < now.length && old[prefix] === now[prefix]) prefix += 1;
    let suffix = 0;
    while (suffix < old.length - prefix && suffix < now.length - prefix && old[old.length - 1 - suffix] === now[now.length - 1 - suffix]) suffix += 1;
    this.delete(prefix, old.length - suffix);
    this.insert(now.slice(prefix, now.length - suffix).join(""), prefix);
  }

  record(ops, changes) {
    this.unsent.push(...ops);
    this.local.push(...ops);
    this.scope.set(this.model, this.key, this.doc.text);
    this.onChange?.(changes, false);
  }
}
