// The JavaScript client back from offline: N appends to one collection made offline (each its own
// change set), then the time from reconnecting to every change set settled, and the ScopeSync
// messages sent, with coalescing on (ChangeSetBatch in contrail.js) and off (every change set
// alone: the baseline, the same client and server, the same call shape). Not a test: a measurement,
// printed as one line per run (and `--json`).
//
//   swift build -c release --product contrail
//   node --experimental-websocket Tests/JS/fuzz/offline-bench.mjs --contrail .build/release/contrail [--counts 1000,5000] [--json]
import { spawn } from "node:child_process";
import { Client, Scope } from "../../../Sources/ContrailServer/Pages/Assets/contrail.js";

const args = process.argv.slice(2);
const option = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const contrail = option("--contrail", null);
const counts = option("--counts", "1000,5000").split(",").map(Number);
const json = args.includes("--json");
if (!contrail || typeof WebSocket !== "function") { console.error("needs --contrail PATH and a WebSocket in Node (Node 20: --experimental-websocket)"); process.exit(2); }

/** `contrail serve --port 0` as a child process; resolves with its port and a stop function. */
function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(contrail, ["serve", "--host", "127.0.0.1", "--port", "0", "--no-pages", "--max-open-scopes", "1000"], { stdio: ["ignore", "ignore", "pipe"] });
    let text = "";
    child.stderr.on("data", (d) => {
      text += d;
      const match = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (match) resolve({ port: Number(match[1]), stop: () => child.kill("SIGKILL") });
    });
    child.on("exit", (code) => reject(new Error(`contrail serve exited (${code}): ${text}`)));
  });
}

/** Resolves once `condition()` holds (polled every 5 ms); rejects after `ms`. */
async function until(condition, why, ms) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(why);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function run(port, count, coalesce) {
  const gate = { blocked: false, syncs: 0, sockets: [] };
  class Socket extends WebSocket {
    constructor(address) { if (gate.blocked) throw new Error("offline"); super(address); gate.sockets.push(this); }
    send(text) { if (text.includes('"type":"ScopeSync"')) gate.syncs++; super.send(text); }
  }
  const client = new Client(`ws://127.0.0.1:${port}/`, { WebSocket: Socket, coalesce, backoff: { min: 5, max: 20, healthyAfter: 1_000 }, replyTimeout: 600_000 });
  client.on("error", () => {});
  const scope = new Scope(`Offline-${count}-${coalesce}-${Date.now()}`, { rootClass: "Board" });
  try {
    await client.fetch(scope);
    gate.blocked = true;
    for (const ws of gate.sockets) ws.close(4000, "offline");
    await until(() => client.status !== "online", "did not go offline", 10_000);
    const editing = performance.now();
    for (let i = 0; i < count; i++) {
      scope.root.insert("items", scope.create("Item", { n: i }));
      scope.flush();
    }
    const offlineMs = performance.now() - editing;
    const before = gate.syncs;
    const back = performance.now();
    gate.blocked = false;
    await until(() => scope.queue.length === 0 && client.status === "online", "did not settle", 600_000);
    const settleMs = performance.now() - back;
    if ((scope.root.get("items") ?? []).length !== count) throw new Error(`${scope.root.get("items")?.length} items, not ${count}`);
    // The work was done: a fresh fetch holds every item.
    const reader = new Client(`ws://127.0.0.1:${port}/`), fresh = new Scope(scope.name, { rootClass: "Board" });
    await reader.fetch(fresh);
    reader.close();
    if ((fresh.root.get("items") ?? []).length !== count) throw new Error(`the server holds ${fresh.root.get("items")?.length} items, not ${count}`);
    return { count, coalesce, offlineMs, settleMs, messages: gate.syncs - before };
  } finally {
    client.close();
  }
}

const server = await startServer();
const results = [];
try {
  for (const count of counts) {
    const off = await run(server.port, count, false);
    const on = await run(server.port, count, true);
    results.push({ name: `js.offline.${count}`, count, coalesced: on, alone: off, speedup: off.settleMs / on.settleMs });
    if (!json) {
      console.log(`js.offline.${count}: settled ${on.settleMs.toFixed(0)} ms after reconnecting in ${on.messages} messages coalesced, `
        + `${off.settleMs.toFixed(0)} ms in ${off.messages} alone (${(off.settleMs / on.settleMs).toFixed(1)}x); offline edits took ${on.offlineMs.toFixed(0)} / ${off.offlineMs.toFixed(0)} ms`);
    }
  }
} finally {
  server.stop();
}
if (json) console.log(JSON.stringify(results));
process.exit(0);
