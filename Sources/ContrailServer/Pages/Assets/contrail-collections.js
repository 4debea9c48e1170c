// contrail-collections.js: collection edits as operations (Protocol §8.24), for contrail.js. A
// collection sent with its base (§8.4) goes, to a server that lists the `collectionOps` extension,
// as an edit of that base: the elements removed, and each inserted or moved element with its anchor
// (the element right before it in the new value), in new-value order, plus the base's length and
// digest. The same encoding as Swift's CollectionEdit (Sources/ContrailWire/Messages/CollectionEdit.swift),
// rule for rule; JSCollectionEditAgreementTests checks that both write the same edits.

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MASK = (1n << 64n) - 1n;
const PRIME = 0x100000001b3n;

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
  let hash = 0xcbf29ce484222325n;
  for (const id of list) {
    const hex = id.replace(/-/g, "");
    for (const half of [hex.slice(0, 16), hex.slice(16)]) {
      let word = "";
      for (let i = 14; i >= 0; i -= 2) word += half.slice(i, i + 2);
      hash = ((hash ^ BigInt(`0x${word}`)) * PRIME) & MASK;
    }
  }
  return hash.toString(16).padStart(16, "0");
}

/**
 * The edit base → next in its wire form, or null when a list holds an element twice or a
 * non-UUID. Swift: CollectionEdit.init(base:new:).
 */
export function collectionEdit(base, next) {
  const baseSet = new Set(base), nextSet = new Set(next);
  if (baseSet.size !== base.length || nextSet.size !== next.length) return null;
  if (!base.every((e) => UUID_RE.test(e)) || !next.every((e) => UUID_RE.test(e))) return null;
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
