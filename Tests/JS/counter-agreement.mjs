// Adds to a SharedCounter through contrail-counter.js against a real server, beside Swift clients, for
// JSCounterAgreementTests.swift:
//   node [--experimental-websocket] Tests/JS/counter-agreement.mjs URL SCOPE DELTAS EXPECTED
// DELTAS: a JSON array of integers added one at a time (a few milliseconds apart); then waits (at most
// 60 s) until nothing is pending and the counter shows EXPECTED, and prints one line
// `RESULT {"value", "plain", "pending"}`. Exit status 1 when it never showed EXPECTED.
import { Client, Scope } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";
import { SharedCounterBinding } from "../../Sources/ContrailServer/Pages/Assets/contrail-counter.js";

const [url, scopeName, deltasText, expectedText] = process.argv.slice(2);
const deltas = JSON.parse(deltasText), expected = Number(expectedText);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const client = new Client(url, { backoff: { min: 1, max: 50 } });
const scope = new Scope(scopeName, { rootClass: "CounterBoard", changeInterval: 5 });
await client.fetch(scope);
const likes = new SharedCounterBinding(scope, scope.root, "likes");
for (const [index, delta] of deltas.entries()) {
  likes.add(delta);
  await pause(index % 3 === 0 ? 0 : 6);
}
const settled = () => scope.queue.length === 0 && scope._pending.size === 0;
const deadline = Date.now() + 60_000;
while (Date.now() < deadline && !(settled() && likes.value === expected)) await pause(20);
console.log(`RESULT ${JSON.stringify({ value: likes.value, plain: scope.root.properties.likes, pending: !settled() })}`);
client.close();
process.exit(likes.value === expected ? 0 : 1);
