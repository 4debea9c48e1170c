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

test("garbage states are refused with an Error, never anything worse", () => {
  const a = new TextDocument("a");
  a.insert("hello brave new world", 0);
  a.delete(2, 9);
  a.insert("!", 3);
  const state = a.stateJSON();
  const valid = Array.from(atob(state.runs), (c) => c.charCodeAt(0));
  let seed = 27;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
  let refused = 0;
  for (let round = 0; round < 2000; round++) {
    let bytes = valid.slice();
    if (round % 3 === 0) bytes = Array.from({ length: random() % 24 }, () => random() % 256);
    else for (let k = 0; k <= random() % 3 && bytes.length; k++) {
      const at = random() % bytes.length;
      if (round % 2) bytes[at] = random() % 256; else bytes.splice(at);
    }
    const text = state.text.slice(0, random() % 30);
    try {
      const doc = TextDocument.fromState("z", { replicas: ["a", "b"], runs: btoa(String.fromCharCode(...bytes)), text });
      assert.equal(TextDocument.fromState("y", doc.stateJSON()).text, doc.text);
    } catch (error) {
      assert.ok(error instanceof Error && /malformed text state/.test(error.message), `unexpected ${error}`);
      refused += 1;
    }
  }
  assert.ok(refused > 1500, `most garbage is refused (${refused})`);
  assert.throws(() => TextDocument.fromState("z", { replicas: ["a"], runs: "!!!!", text: "" }), /malformed/);
  assert.throws(() => TextDocument.fromState("z", { replicas: ["a"], runs: [[0, 0, "x", -1, 0, -1, 0]] }), /malformed/);
  assert.equal(TextDocument.fromState("z", state).text, a.text, "positive control");
});
