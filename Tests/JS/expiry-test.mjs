// Session expiry under Node (run by PagesNodeTests.swift):
//   node --experimental-websocket expiry-test.mjs <contrail.js path> <ws url> <scope name>
// The server ends sessions idle for a second, and this client pings only every minute: the server
// closes with 4097, the client opens a new session, fetches again, and an edit made while the
// session was gone still goes out. Prints "ok expiry" and "STATE <json>"; failures exit non-zero.
import { pathToFileURL } from "node:url";
import { fail, check, next, settled } from "./harness.mjs";

const [modulePath, wsURL, scopeName] = process.argv.slice(2);
const { Client, Scope } = await import(pathToFileURL(modulePath).href);
setTimeout(() => fail("timed out after 60 s"), 60_000).unref();

const a = new Client(wsURL, { pingInterval: 60_000, backoff: { min: 20, max: 200 } });
const sa = new Scope(scopeName, { rootClass: "Canvas" });
await a.fetch(sa);
const firstToken = a._token;
check(typeof firstToken === "string" && firstToken.length >= 40, "a session token");
await next(a, "status", (s) => s === "offline", 15_000);
check(a._token === null, "the expired session is dropped");
sa.root.set("name", "after-expiry");
await next(a, "status", (s) => s === "online", 15_000);
check(a._token !== null && a._token !== firstToken, "a new session");
await settled(sa);
check(sa.root.get("name") === "after-expiry", "the edit survives");
console.log("ok expiry");
console.log(`STATE ${JSON.stringify(sa.stateJSON())}`);
a.close();
process.exit(0);
