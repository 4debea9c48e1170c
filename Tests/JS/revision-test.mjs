// Named revisions from the browser client (Protocol §8.26): `scope.markRevision(label)` resolves to the
// sequence number of the scope's last change set, after the edits made before the call; a label in use,
// an invalid label and a server that does not list MarkRevision reject with a typed Error.
//   CONTRAIL_TEST_URL=ws://… (a server with a data directory, which lists MarkRevision) and
//   CONTRAIL_TEST_EXPIRY_URL=ws://… (one in memory, which does not) node --experimental-websocket --test Tests/JS/
// (PagesNodeTests.swift starts both; without them this test is skipped with the reason).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { needsServer, settled } from "./harness.mjs";

const reason = needsServer("CONTRAIL_TEST_URL", "a Contrail server with history") || needsServer("CONTRAIL_TEST_EXPIRY_URL", "a Contrail server without history");

/** The promise's rejection (fails when it resolves). */
async function refusal(promise) {
  try { await promise; } catch (error) { return error; }
  assert.fail("expected a rejection");
}

test("scope.markRevision names the state after the edits made before it", { skip: reason, timeout: 60_000 }, async (t) => {
  const a = new Client(process.env.CONTRAIL_TEST_URL);
  t.after(() => a.close());
  const scope = new Scope(`NodeRevisions-${uuid()}`, { rootClass: "Canvas" });
  await a.fetch(scope);
  assert.ok(a.extensions.has("MarkRevision"), "a server with a data directory lists MarkRevision");

  scope.root.set("name", "first");
  const v1 = await scope.markRevision("v1");
  assert.ok(Number.isInteger(v1) && v1 >= 1, `a sequence number: ${v1}`);
  await settled(scope);
  scope.root.set("name", "second");
  const v2 = await scope.markRevision("v2");
  assert.ok(v2 > v1, `the second edit is in v2 and not in v1: ${v1} < ${v2}`);

  const taken = await refusal(scope.markRevision("v1"));
  assert.equal(taken.type, "revision-exists");
  assert.match(taken.message, /v1/);
  const invalid = await refusal(scope.markRevision(""));
  assert.equal(invalid.type, "invalid-revision");
  const numeric = await refusal(scope.markRevision("42"));
  assert.equal(numeric.type, "invalid-revision");
  // Control: the session goes on, and a new label is taken.
  assert.equal(await scope.markRevision("v3"), v2);

  // Another client sees the revision's state through the same server: the label was taken once.
  const b = new Client(process.env.CONTRAIL_TEST_URL);
  t.after(() => b.close());
  const other = new Scope(scope.name, { rootClass: "Canvas" });
  await b.fetch(other);
  assert.equal(other.root.get("name"), "second");
  assert.equal((await refusal(other.markRevision("v2"))).type, "revision-exists");

  // A scope not fetched is refused before anything is sent.
  assert.equal((await refusal(new Scope("Unfetched").markRevision("x"))).type, "not-fetched");

  // A server without history does not list MarkRevision: rejected without a message sent.
  const c = new Client(process.env.CONTRAIL_TEST_EXPIRY_URL);
  t.after(() => c.close());
  const plain = new Scope(`NodePlain-${uuid()}`, { rootClass: "Canvas" });
  await c.fetch(plain);
  assert.ok(!c.extensions.has("MarkRevision"));
  const sentBefore = c._outIndex;
  const unavailable = await refusal(plain.markRevision("v1"));
  assert.equal(unavailable.type, "extension-unavailable");
  assert.match(unavailable.message, /MarkRevision/);
  assert.equal(c._outIndex, sentBefore, "nothing was sent");
});
