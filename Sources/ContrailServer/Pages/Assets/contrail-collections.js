// contrail-collections.js: collection edits as operations (Protocol §8.24), for contrail.js. A
// collection sent with its base (§8.4) goes, to a server that lists the `collectionOps` extension,
// as an edit of that base: the elements removed, and each inserted or moved element with its anchor
// (the element right before it in the new value), in new-value order, plus the base's length and
// digest. The same encoding as Swift's CollectionEdit (Sources/ContrailWire/Messages/CollectionEdit.swift),
// rule for rule; JSCollectionEditAgreementTests checks that both write the same edits.

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Strings already found to be UUIDs: a collection's elements are tested on every edit of it, and a
// Set lookup of a string the engine has hashed before costs far less than the pattern. Bounded:
// emptied when it reaches this size.
const knownUUIDs = new Set();
const KNOWN_UUIDS_LIMIT = 1 << 20;

/** Whether `value` is a lowercase UUID string (Protocol §3.3's references). O(1) amortised. */
export function isUUID(value) {
  if (typeof value !== "string") return false;
  if (knownUUIDs.has(value)) return true;
  if (value.length !== 36 || !UUID_RE.test(value)) return false;
  if (knownUUIDs.size >= KNOWN_UUIDS_LIMIT) knownUUIDs.clear();
  knownUUIDs.add(value);
  return true;
}

/** The extension name a server lists when it takes collection edits. */
export const COLLECTION_OPS = "collectionOps";

/**
 * The common elements of base and next in a longest run whose relative order the edit kept (a
 * longest increasing subsequence of base positions). Swift: CollectionMerge.stableElements.
 */
export function stableElements(base, next, nextSet) {
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

/**
 * The digest of a list of UUIDs, as 16 hex digits: FNV-1a over 64-bit words, each UUID's 16 bytes
 * read as two little-endian words. Swift: CollectionEdit.digest(of:).
 */
export function collectionDigest(list) {
  // The 64-bit hash as four 16-bit limbs, least significant first (plain numbers: no BigInt per
  // element). FNV's prime is 2^40 + 0x1b3, so a product's limbs are h·0x1b3 plus h shifted by 40 bits.
  let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2;
  for (const id of list) {
    for (let half = 0; half < 16; half += 8) {
      // Little-endian: each 16-bit limb is two bytes, the first one lowest.
      h0 ^= uuidByte(id, half) | (uuidByte(id, half + 1) << 8);
      h1 ^= uuidByte(id, half + 2) | (uuidByte(id, half + 3) << 8);
      h2 ^= uuidByte(id, half + 4) | (uuidByte(id, half + 5) << 8);
      h3 ^= uuidByte(id, half + 6) | (uuidByte(id, half + 7) << 8);
      const r0 = h0 * 0x1b3;
      const r1 = h1 * 0x1b3 + Math.floor(r0 / 0x10000);
      const r2 = h2 * 0x1b3 + h0 * 0x100 + Math.floor(r1 / 0x10000);
      const r3 = h3 * 0x1b3 + h1 * 0x100 + Math.floor(r2 / 0x10000);
      h0 = r0 % 0x10000; h1 = r1 % 0x10000; h2 = r2 % 0x10000; h3 = r3 % 0x10000;
    }
  }
  return [h3, h2, h1, h0].map((limb) => limb.toString(16).padStart(4, "0")).join("");
}

// Where the hex digits of a UUID's bytes sit in its string (its dashes skipped).
const HEX_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const nibble = (code) => (code <= 57 ? code - 48 : code - 87);  // '0'-'9', 'a'-'f'

/** Byte `index` (0–15) of the lowercase UUID string `id`. */
function uuidByte(id, index) {
  const at = HEX_AT[index];
  return (nibble(id.charCodeAt(at)) << 4) | nibble(id.charCodeAt(at + 1));
}

/**
 * The edit base → next in its wire form, or null when a list holds an element twice or a
 * non-UUID. Swift: CollectionEdit.init(base:new:).
 */
export function collectionEdit(base, next) {
  const baseSet = new Set(base), nextSet = new Set(next);
  if (baseSet.size !== base.length || nextSet.size !== next.length) return null;
  if (!base.every(isUUID) || !next.every(isUUID)) return null;
  const stable = stableElements(base, next, nextSet);
  const edit = { n: base.length, digest: collectionDigest(base) };
  const remove = base.filter((e) => !nextSet.has(e));
  const place = [];
  next.forEach((e, i) => {
    if (stable.has(e)) return;
    const placement = [e, i > 0 ? next[i - 1] : null];
    if (baseSet.has(e)) placement.push(1);
    place.push(placement);
  });
  if (remove.length) edit.remove = remove;
  if (place.length) edit.place = place;
  return edit;
}

/**
 * `fragment` with each collection that has a base sent as an edit of it, where that is the shorter
 * form (a new object; the fragment is not changed). Swift: SyncFragment.withCollectionEdits().
 */
export function withCollectionEdits(fragment) {
  if (fragment.type !== "change" || !fragment.bases) return fragment;
  let result = null;
  for (const [key, base] of Object.entries(fragment.bases)) {
    const next = fragment.properties?.[key];
    if (!Array.isArray(next) || !Array.isArray(base)) continue;
    const edit = collectionEdit(base, next);
    if (!edit || 2 * ((edit.remove?.length ?? 0) + (edit.place?.length ?? 0)) >= base.length + next.length) continue;
    result ??= { ...fragment, properties: { ...fragment.properties }, bases: { ...fragment.bases }, collectionOps: { ...fragment.collectionOps } };
    delete result.properties[key];
    delete result.bases[key];
    result.collectionOps[key] = edit;
  }
  if (!result) return fragment;
  if (!Object.keys(result.bases).length) delete result.bases;
  return result;
}
