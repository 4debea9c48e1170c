// Session expiry: the server ends sessions idle for a second, and this client pings only every minute,
// so the server closes with 4097, the client opens a new session, fetches again, and an edit made while
// the session was gone still goes out. Needs a server whose sessions expire after about a second:
//   CONTRAIL_TEST_EXPIRY_URL=ws://127.0.0.1:PORT/ node --experimental-websocket --test Tests/JS/
// (PagesNodeTests.swift starts one; without the variable this test is skipped with the reason).
// CONTRAIL_TEST_EXPIRY_SCOPE names the scope.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, Scope, uuid } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { needsServer, next, settled } from "./harness.mjs";

const reason = needsServer("CONTRAIL_TEST_EXPIRY_URL", "a Contrail server whose sessions expire after a second");

test("a client whose session expired starts a new one and sends its edit", { skip: reason, timeout: 60_000 }, async (t) => {
  const a = new Client(process.env.CONTRAIL_TEST_EXPIRY_URL, { pingInterval: 60_000, backoff: { min: 20, max: 200 } });
  t.after(() => a.close());
  const sa = new Scope(process.env.CONTRAIL_TEST_EXPIRY_SCOPE || `Expiring-${uuid()}`, { rootClass: "Canvas" });
  await a.fetch(sa);
  const firstToken = a._token;
  assert.ok(typeof firstToken === "string" && firstToken.length >= 40, "a session token");
  await next(a, "status", (s) => s === "offline", 15_000);
  assert.equal(a._token, null, "the expired session is dropped");
  sa.root.set("name", "after-expiry");
  await next(a, "status", (s) => s === "online", 15_000);
  assert.ok(a._token !== null && a._token !== firstToken, "a new session");
  await settled(sa);
  assert.equal(sa.root.get("name"), "after-expiry", "the edit survives");
});
