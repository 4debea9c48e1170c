// contrail-text.js on its own (Protocol §8.21): edits, concurrent merges without interleaving,
// encodings and cursors. JSTextAgreementTests.swift checks it against Swift's TextDocument.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TextDocument } from "../../Sources/ContrailServer/Pages/Assets/contrail-text.js";

test("edits reach another replica as operations, idempotently", () => {
  const a = new TextDocument("a"), b = new TextDocument("b");
  const ops = [a.insert("hello", 0), a.insert(" world", 5)];
  assert.deepEqual(b.applyAll(TextDocument.decode(TextDocument.encode(ops))), [{ insert: [0, "hello"] }, { insert: [5, " world"] }]);
  assert.deepEqual(b.applyAll(ops), [], "applying twice changes nothing");
  const del = b.delete(0, 6);
  assert.deepEqual(a.applyAll(del), [{ delete: [0, 6] }]);
  assert.equal(a.text, "world");
  assert.equal(b.text, "world");
});

test("concurrent runs at one spot do not interleave", () => {
  const a = new TextDocument("a"), b = new TextDocument("b");
  const base = a.insert("[]", 0);
  b.apply(base);
  const fromA = [...Array.from("alpha")].map((c, i) => a.insert(c, 1 + i));
  const fromB = [...Array.from("bravo")].map((c, i) => b.insert(c, 1 + i));
  a.applyAll(fromB);
  b.applyAll(fromA);
  assert.equal(a.text, b.text);
  assert.equal(a.text, "[alphabravo]");
});

test("states round-trip and cursors follow their character", () => {
  const a = new TextDocument("a");
  a.insert("hello world", 0);
  a.delete(0, 6);
  const copy = TextDocument.fromState("c", JSON.parse(JSON.stringify(a.stateJSON())));
  assert.equal(copy.text, "world");
  const cursor = a.cursor(2);
  copy.apply(a.insert("big ", 0));
  assert.equal(a.positionOf(cursor), 6);
  assert.throws(() => TextDocument.decode({ replicas: ["a b"], ops: [] }));
  assert.throws(() => a.apply({ insert: { id: ["z", 3], text: "x", left: null, right: null } }));
});
