// Protocol test of contrail.js under Node (run by PagesNodeTests.swift):
//   node --experimental-websocket protocol-test.mjs <contrail.js path> <ws url> <http url> <scope name>
// Two clients on one fresh scope against a real ContrailServer. Prints "ok <step>" per step and, at the
// end, one line "STATE <json>" with both replicas' states for the Swift side to compare with the
// server's. Any failure exits non-zero with the reason.
import { pathToFileURL } from "node:url";
import { fail, check, next, when, settled, same, all } from "./harness.mjs";

const [modulePath, wsURL, httpURL, scopeName] = process.argv.slice(2);
const { Client, Scope, mergeCollection } = await import(pathToFileURL(modulePath).href);
setTimeout(() => fail("timed out after 60 s"), 60_000).unref();

// 0. The merge is Swift's CollectionMerge: [a] → [a, b] applied to [a, c] gives [a, c, b].
check(same(mergeCollection(["a"], ["a", "b"], ["a", "c"]), ["a", "c", "b"]), "collection merge order");
check(same(mergeCollection(["a", "b"], ["b"], ["a", "b", "c"]), ["b", "c"]), "collection merge removal");
console.log("ok merge");

// 1. Session create and fetch: both clients see the same (empty) canvas with the server's root.
const a = new Client(wsURL), b = new Client(wsURL);
const sa = new Scope(scopeName, { rootClass: "Canvas" }), sb = new Scope(scopeName, { rootClass: "Canvas" });
await a.fetch(sa);
await b.fetch(sb);
check(a.status === "online" && b.status === "online", `status ${a.status}/${b.status}`);
check(sa.root.uuid === sb.root.uuid, "both replicas take over the server's root UUID");
console.log("ok fetch");

// 1b. An edit made before the fetch completes waits for the full state (the root takes the server's
//     UUID) and then goes out.
const c = new Client(wsURL), sc = new Scope(scopeName, { rootClass: "Canvas" });
const fetching = c.fetch(sc);
sc.root.set("name", "early");
const seen = next(sb, "change", (e) => e.key === "name" && e.value === "early");
await fetching;
await seen;
await settled(sc);
c.close();
console.log("ok early-edit");

// 2. An add in one change set (modify) reaches the other client as an attached object.
let shape;
sa.modify(() => {
  shape = sa.create("Shape", { x: 10, y: 20, width: 100, height: 80, color: 0x3498dbff });
  sa.root.insert("shapes", shape);
});
check(sa.queue.length === 1 && sa.queue[0].fragments.length === 2, "modify makes one change set with add + change");
await next(sb, "attach", (e) => e.model.uuid === shape.uuid);
check(sb.object(shape.uuid).get("x") === 10, "remote add carries its properties");
await settled(sa);
console.log("ok add");

// 3. A pending key is never overwritten by a remote value; both end with the server's value.
const sbShape = sb.object(shape.uuid);
sbShape.set("x", 200);
shape.set("x", 100);
sb.flush(); sa.flush();
await settled(sa); await settled(sb);
await when(all(sa, sb), ["change"], () => sa.object(shape.uuid).get("x") === sb.object(shape.uuid).get("x"), "x converges");
console.log("ok pending-key");

// 4. Concurrent inserts into one collection both survive (bases + server merge + modifications).
let s2, s3;
sa.modify(() => { s2 = sa.create("Shape", { x: 1, y: 1, width: 10, height: 10, color: 0xe74c3cff }); sa.root.insert("shapes", s2); });
sb.modify(() => { s3 = sb.create("Shape", { x: 2, y: 2, width: 10, height: 10, color: 0x2ecc71ff }); sb.root.insert("shapes", s3); });
check(sa.queue.at(-1).fragments.some((f) => f.bases?.shapes), "a collection change carries its base");
await settled(sa); await settled(sb);
const bothHold = (s) => { const ids = s.root.get("shapes"); return ids.length === 3 && ids.includes(s2.uuid) && ids.includes(s3.uuid); };
await when(sa, ["change", "attach"], () => bothHold(sa), "a keeps both inserts");
await when(sb, ["change", "attach"], () => bothHold(sb), "b keeps both inserts");
await when(all(sa, sb), ["change"], () => same(sa.root.get("shapes"), sb.root.get("shapes")), "same order on both");
console.log("ok merge-inserts");

// 5. Atomic: one bad fragment (x as a string, the server learnt x is a number) rejects the whole
//    change set, and both edits are reverted locally.
const nameBefore = sa.root.get("name") ?? null;
sa.modify(() => { sa.root.set("name", "atomic"); shape.set("x", "not a number"); }, { atomic: true });
const result = await next(sa, "settled");
check(result.rejected.length === 2, `atomic change set rejected whole (${result.rejected.length} rejected)`);
check((sa.root.get("name") ?? null) === nameBefore && typeof shape.get("x") === "number", "rejected edits reverted");
console.log("ok atomic");

// 6. Resume: the socket drops, an edit made meanwhile goes out after the token resume and the
//    resend exchange; no new session is made.
const overview = async () => (await (await fetch(`${httpURL}/api/overview`)).json());
const sessionsBefore = (await overview()).sessions;
const resumed = next(a, "status", (s) => s === "resuming");
a._ws.close();
shape.set("color", 0x9b59b6ff);
await resumed;
await next(a, "status", (s) => s === "online");
await next(sb, "change", (e) => e.model.uuid === shape.uuid && e.key === "color" && e.value === 0x9b59b6ff);
await settled(sa);
check((await overview()).sessions === sessionsBefore, "a resume makes no new session");
console.log("ok resume");

// 7. Keep-alive and acknowledgements: the server's pings prune what the client keeps for resend.
await when({ on: (t, fn) => { const i = setInterval(fn, 20); return () => clearInterval(i); } }, ["tick"],
  () => a._unacked.length === 0 && b._unacked.length === 0, "server pings acknowledge everything", 5_000);
console.log("ok ack");

// 8. Removal by orphaning: dropping a shape from the collection detaches it on the other side.
const gone = next(sb, "detach", (e) => e.model.uuid === s2.uuid);
sa.modify(() => sa.root.remove("shapes", s2));
await gone;
await settled(sa);
console.log("ok remove");

console.log(`STATE ${JSON.stringify({ a: sa.stateJSON(), b: sb.stateJSON() })}`);
a.close(); b.close();
process.exit(0);
