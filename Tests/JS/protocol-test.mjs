// contrail.js against a real ContrailServer: two clients on one fresh scope, step by step (session,
// fetch, change sets with replies, pending keys, collection merges, atomic rejection, resume with
// resend, acknowledgements, removal). Needs a server with pages:
//   CONTRAIL_TEST_URL=ws://127.0.0.1:PORT/ node --experimental-websocket --test Tests/JS/
// (PagesNodeTests.swift starts one; without the variable this test is skipped with the reason).
// CONTRAIL_TEST_SCOPE names the scope; CONTRAIL_TEST_STATE, when set, is a file path where both
// replicas' final states are written as JSON {a, b}, for the Swift side to compare with the server's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { needsServer, next, when, settled, all, ticks, steps } from "./harness.mjs";

const wsURL = process.env.CONTRAIL_TEST_URL;

test("two clients keep one scope in step through a server", { skip: needsServer("CONTRAIL_TEST_URL", "a Contrail server with pages"), timeout: 60_000 }, async (t) => {
  const httpURL = wsURL.replace(/^ws/, "http").replace(/\/$/, "");
  const scopeName = process.env.CONTRAIL_TEST_SCOPE || `NodeCanvas-${uuid()}`;
  const step = steps(t);
  const a = new Client(wsURL), b = new Client(wsURL);
  const sa = new Scope(scopeName, { rootClass: "Canvas" }), sb = new Scope(scopeName, { rootClass: "Canvas" });
  t.after(() => { a.close(); b.close(); });
  let shape, s2, s3;

  await step("fetch", async () => {
    // Session create and fetch: both clients see the same (empty) canvas with the server's root.
    await a.fetch(sa);
    await b.fetch(sb);
    assert.equal(`${a.status}/${b.status}`, "online/online");
    assert.equal(sa.root.uuid, sb.root.uuid, "both replicas take over the server's root UUID");
  });

  await step("early-edit", async () => {
    // An edit made before the fetch completes waits for the full state (the root takes the server's
    // UUID) and then goes out.
    const c = new Client(wsURL), sc = new Scope(scopeName, { rootClass: "Canvas" });
    try {
      const fetching = c.fetch(sc);
      sc.root.set("name", "early");
      const seen = next(sb, "change", (e) => e.key === "name" && e.value === "early");
      await fetching;
      await seen;
      await settled(sc);
    } finally {
      c.close();
    }
  });

  await step("add", async () => {
    // An add in one change set (modify) reaches the other client as an attached object.
    sa.modify(() => {
      shape = sa.create("Shape", { x: 10, y: 20, width: 100, height: 80, color: 0x3498dbff });
      sa.root.insert("shapes", shape);
    });
    assert.ok(sa.queue.length === 1 && sa.queue[0].fragments.length === 2, "modify makes one change set with add + change");
    await next(sb, "attach", (e) => e.model.uuid === shape.uuid);
    assert.equal(sb.object(shape.uuid).get("x"), 10, "remote add carries its properties");
    await settled(sa);
  });

  await step("pending-key", async () => {
    // A pending key is never overwritten by a remote value; both end with the server's value.
    sb.object(shape.uuid).set("x", 200);
    shape.set("x", 100);
    sb.flush(); sa.flush();
    await settled(sa); await settled(sb);
    await when(all(sa, sb), ["change"], () => sa.object(shape.uuid).get("x") === sb.object(shape.uuid).get("x"), "x converges");
  });

  await step("merge-inserts", async () => {
    // Concurrent inserts into one collection both survive (bases + server merge + modifications).
    sa.modify(() => { s2 = sa.create("Shape", { x: 1, y: 1, width: 10, height: 10, color: 0xe74c3cff }); sa.root.insert("shapes", s2); });
    sb.modify(() => { s3 = sb.create("Shape", { x: 2, y: 2, width: 10, height: 10, color: 0x2ecc71ff }); sb.root.insert("shapes", s3); });
    assert.ok(sa.queue.at(-1).fragments.some((f) => f.bases?.shapes), "a collection change carries its base");
    await settled(sa); await settled(sb);
    const bothHold = (s) => { const ids = s.root.get("shapes"); return ids.length === 3 && ids.includes(s2.uuid) && ids.includes(s3.uuid); };
    await when(sa, ["change", "attach"], () => bothHold(sa), "a keeps both inserts");
    await when(sb, ["change", "attach"], () => bothHold(sb), "b keeps both inserts");
    await when(all(sa, sb), ["change"], () => JSON.stringify(sa.root.get("shapes")) === JSON.stringify(sb.root.get("shapes")), "same order on both");
  });

  await step("atomic", async () => {
    // One bad fragment (x as a string, the server learnt x is a number) rejects the whole change
    // set, and both edits are reverted locally.
    const nameBefore = sa.root.get("name") ?? null;
    sa.modify(() => { sa.root.set("name", "atomic"); shape.set("x", "not a number"); }, { atomic: true });
    const result = await next(sa, "settled");
    assert.equal(result.rejected.length, 2, "atomic change set rejected whole");
    assert.equal(sa.root.get("name") ?? null, nameBefore, "rejected name reverted");
    assert.equal(typeof shape.get("x"), "number", "rejected x reverted");
  });

  await step("resume", async () => {
    // The socket drops, an edit made meanwhile goes out after the token resume and the resend
    // exchange; no new session is made.
    const overview = async () => (await (await fetch(`${httpURL}/api/overview`)).json());
    const sessionsBefore = (await overview()).sessions;
    const resumed = next(a, "status", (s) => s === "resuming");
    a._ws.close();
    shape.set("color", 0x9b59b6ff);
    await resumed;
    await next(a, "status", (s) => s === "online");
    await next(sb, "change", (e) => e.model.uuid === shape.uuid && e.key === "color" && e.value === 0x9b59b6ff);
    await settled(sa);
    assert.equal((await overview()).sessions, sessionsBefore, "a resume makes no new session");
  });

  await step("ack", async () => {
    // Keep-alive and acknowledgements: the server's pings prune what the client keeps for resend.
    await when(ticks(20), ["tick"], () => a._unacked.length === 0 && b._unacked.length === 0, "server pings acknowledge everything", 5_000);
  });

  await step("remove", async () => {
    // Removal by orphaning: dropping a shape from the collection detaches it on the other side.
    const gone = next(sb, "detach", (e) => e.model.uuid === s2.uuid);
    sa.modify(() => sa.root.remove("shapes", s2));
    await gone;
    await settled(sa);
  });

  if (process.env.CONTRAIL_TEST_STATE) {
    await writeFile(process.env.CONTRAIL_TEST_STATE, JSON.stringify({ a: sa.stateJSON(), b: sb.stateJSON() }));
  }
});
