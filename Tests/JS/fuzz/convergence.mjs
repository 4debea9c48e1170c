// The JavaScript client's convergence fuzzer: seeded runs of 2–4 contrail.js clients (this Node
// process) and one Swift client (`contrail fuzz peer`, a child process this script drives on stdin) on
// one scope of a real `contrail serve`. Every client reaches the server through a TCP relay of this
// script that cuts the connection, or first drops one direction and then cuts it, or refuses
// connections for longer than the server's session expiry (1 s: the session ends, the client starts
// a new one and resends), while the clients keep editing: inserts, removals, moves within and between two collections, values, references,
// grouped and atomic change sets, and edits the server rejects (a value of the wrong kind, a
// reference to nothing). Then one JS client goes offline and edits on alone (its change sets go
// coalesced when it is back, to a new or a resumed session). Then every relay heals, everyone settles, and the run checks that every
// replica (JS and Swift) equals a fresh fetch, that no reference dangles and no item sits twice, and
// that every acknowledged insert of a JS client is there unless some client took that item out.
//
//   swift build --product contrail
//   node --experimental-websocket Tests/JS/fuzz/convergence.mjs --contrail .build/debug/contrail --seeds 200
//     [--start S] [--parallel P (default 4)] [--ops N (default 60)] [--no-swift] [--no-coalesce (every change set alone)] [--url ws://HOST:PORT/ (a running server)]
//
// Prints each failing seed with what differed and its last operations, then `N passed, M failed`;
// exits 1 when a seed failed. JSConvergenceFuzzTests.swift runs a few seeds in `swift test`.
import { spawn } from "node:child_process";
import net from "node:net";
import { createInterface } from "node:readline";
import { Client, Scope, uuid } from "../../../Sources/ContrailServer/Pages/Assets/contrail.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DEFAULTS = { Shelf: { step: 0, title: "", left: [], right: [], featured: null }, Item: { label: "", count: 0 } };

/** A seeded generator (mulberry32): `rng(n)` is an integer in 0..<n, `rng()` a float in [0, 1). */
export function generator(seed) {
  let a = (seed * 0x9e3779b1) >>> 0;
  const float = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (n) => (n === undefined ? float() : Math.floor(float() * n));
}

/** Pacing between operations (part of the workload: it lets messages interleave with edits). */
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `condition()` holds (polled every 10 ms); rejects with `why` after `ms`. */
async function until(condition, why, ms) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${why} (not within ${ms} ms)`);
    await pause(10);
  }
}

/** `contrail serve --port 0` as a child process (every seed opens a scope of its own); resolves with its port once it listens. */
export function startServer(contrail) {
  return new Promise((resolve, reject) => {
    const child = spawn(contrail, ["serve", "--host", "127.0.0.1", "--port", "0", "--no-pages", "--max-open-scopes", "100000", "--session-expiry", "1"], { stdio: ["ignore", "ignore", "pipe"] });
    let text = "";
    const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error(`contrail serve did not listen: ${text}`)); }, 60_000);
    child.stderr.on("data", (chunk) => {
      text += chunk;
      const match = /listening on ws:\/\/[^:]+:(\d+)\//.exec(text);
      if (match) { clearTimeout(timer); resolve({ port: Number(match[1]), stop: () => child.kill("SIGKILL") }); }
    });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`contrail serve exited (${code}): ${text}`)); });
  });
}

/**
 * A TCP relay in front of the server for one client: `cut()` closes every connection through it;
 * `drop(direction)` makes the current connections lose what goes "up" (to the server) or "down";
 * `heal()` stops both for new connections.
 */
class Relay {
  constructor(upstreamPort) {
    this.upstreamPort = upstreamPort;
    this.pairs = new Set();
    this.downUntil = 0;
    this.server = net.createServer((socket) => this._accept(socket));
  }
  listen() {
    return new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => { this.url = `ws://127.0.0.1:${this.server.address().port}/`; resolve(this); }));
  }
  _accept(socket) {
    if (Date.now() < this.downUntil) { socket.destroy(); return; }
    const upstream = net.connect(this.upstreamPort, "127.0.0.1");
    const pair = { socket, upstream, dropUp: false, dropDown: false };
    this.pairs.add(pair);
    const end = () => { this.pairs.delete(pair); socket.destroy(); upstream.destroy(); };
    socket.on("data", (data) => { if (!pair.dropUp) upstream.write(data); });
    upstream.on("data", (data) => { if (!pair.dropDown) socket.write(data); });
    for (const s of [socket, upstream]) { s.on("close", end); s.on("error", end); }
  }
  cut() { for (const pair of this.pairs) { pair.socket.destroy(); pair.upstream.destroy(); } this.pairs.clear(); }
  /** Cuts and refuses connections for `ms` (longer than the server's session expiry: the session ends). */
  down(ms) { this.downUntil = Date.now() + ms; this.cut(); }
  heal() { this.downUntil = 0; }
  drop(direction) { for (const pair of this.pairs) pair[direction === "up" ? "dropUp" : "dropDown"] = true; }
  close() { this.cut(); this.server.close(); }
}

/** A Swift client (`contrail fuzz peer`) driven line by line. */
class SwiftPeer {
  constructor(contrail, url, scope, seed, unlinked) {
    this.child = spawn(contrail, ["fuzz", "peer", "--url", url, "--scope", scope, "--seed", String(seed)], { stdio: ["pipe", "pipe", "pipe"] });
    this.waiters = [];
    this.output = [];
    this.exited = false;
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      if (line.startsWith("unlinked ")) { unlinked.add(line.slice(9)); return; }
      this.output.push(line);
      const waiter = this.waiters.shift();
      waiter?.(line);
    });
    this.child.stderr.on("data", (d) => this.output.push(`stderr: ${d}`));
    this.child.stdin.on("error", () => {});
    this.child.on("exit", (code) => { this.exited = true; for (const w of this.waiters.splice(0)) w(`exit ${code}`); });
  }
  /** The next line the peer prints (after sending `command`, when given), within `ms`. */
  answer(command, ms = 30_000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the Swift peer did not answer '${command ?? "ready"}' within ${ms} ms`)), ms);
      this.waiters.push((line) => { clearTimeout(timer); resolve(line); });
      if (command) this.send(command);
    });
  }
  send(command) { if (!this.exited) this.child.stdin.write(`${command}\n`); }
  stop() { this.send("quit"); setTimeout(() => this.child.kill("SIGKILL"), 2_000).unref(); }
}

/** A fragment in a line: type, short uuid, values with short uuids. */
const brief = (f) => `${f.type} ${f.uuid?.slice(0, 8)} ${JSON.stringify(f.properties ?? {}).replace(/"([0-9a-f]{8})-[0-9a-f-]{27}"/g, "$1")}${f.bases ? ` bases ${JSON.stringify(f.bases).replace(/"([0-9a-f]{8})-[0-9a-f-]{27}"/g, "$1")}` : ""}`;

/** A state as comparable JSON: defaults filled in, nulls dropped, keys sorted. */
function canonical(state) {
  const objects = {};
  for (const id of Object.keys(state.objects).sort()) {
    const { clsName, properties } = state.objects[id];
    const filled = { ...(DEFAULTS[clsName] ?? {}), ...properties };
    const kept = {};
    for (const key of Object.keys(filled).sort()) if (filled[key] !== null && filled[key] !== undefined) kept[key] = filled[key];
    objects[id] = { clsName, properties: kept };
  }
  return JSON.stringify({ root: state.root, objects });
}

/** What is wrong with a state on its own: dangling references, an item twice or in both collections. */
function defects(state) {
  const found = [];
  for (const [id, { properties }] of Object.entries(state.objects)) {
    for (const [key, value] of Object.entries(properties)) {
      for (const ref of (Array.isArray(value) ? value : [value])) {
        if (typeof ref === "string" && UUID_RE.test(ref) && !state.objects[ref]) found.push(`${id}.${key} names missing ${ref}`);
      }
    }
  }
  const root = state.objects[state.root]?.properties ?? {};
  const items = [...(root.left ?? []), ...(root.right ?? [])];
  if (new Set(items).size !== items.length) found.push(`an item sits twice in left/right: ${JSON.stringify(root)}`);
  return found;
}

/** One seeded run; resolves with {seed, ok, problems, log}. */
export async function runSeed(seed, { port, contrail, swift = true, ops = 60, coalesce = true }) {
  const rng = generator(seed);
  const name = `JSFuzz-${seed}-${uuid().slice(0, 8)}`;
  const log = [];
  const trace = [];
  const problems = [];
  const unlinked = new Set();       // items some client took out of a collection (removed or moved)
  const acked = new Map();          // item uuid → the op that inserted it, once its change set was accepted
  const relays = [], clients = [], scopes = [];
  let peer = null;
  const jsCount = 2 + rng(3);
  try {
    for (let i = 0; i < jsCount; i++) {
      const relay = await new Relay(port).listen();
      const client = new Client(relay.url, { pingInterval: 300, replyTimeout: 2_000, connectTimeout: 1_000, backoff: { min: 5, max: 80 }, coalesce });
      const scope = new Scope(name, { rootClass: "Shelf", changeInterval: rng(6) });
      const inserted = new Map();
      scope._fuzzInserted = inserted;
      // The trace: what each replica sent, received and settled (printed for a lost insert).
      scope.on("changeset", ({ fragments, remote, state }) => trace.push(`${i} ${remote ? (state ? "state" : "remote") : "sent"}: ${fragments.map(brief).join(", ")}`));
      scope.on("settled", ({ fragments, rejected }) => trace.push(`${i} settled ${fragments.map(brief).join(", ")}${rejected.length ? ` rejected ${rejected.map((r) => r.fragment.uuid.slice(0, 8)).join(",")}` : ""}`));
      scope.on("settled", ({ fragments, rejected }) => {
        const refused = new Set(rejected.map((r) => r.fragment.uuid));
        if (refused.has(scope.root.uuid)) return;
        for (const f of fragments) if (f.type === "add" && inserted.has(f.uuid) && !refused.has(f.uuid)) acked.set(f.uuid, inserted.get(f.uuid));
      });
      relays.push(relay); clients.push(client); scopes.push(scope);
    }
    await Promise.all(clients.map((c, i) => c.fetch(scopes[i])));
    if (swift) {
      const relay = await new Relay(port).listen();
      relays.push(relay);
      peer = new SwiftPeer(contrail, relay.url, name, seed, unlinked);
      const ready = await peer.answer(null, 60_000);
      if (ready !== "ready") throw new Error(`the Swift peer did not start: ${ready} ${peer.output.join(" | ")}`);
    }

    // Random operations.
    const items = (scope, key) => scope.root.get(key) ?? [];
    const pick = (list) => list[rng(list.length)];
    const side = () => (rng(2) ? "left" : "right");
    const edit = (c, scope) => {
      const key = side(), list = items(scope, key), other = key === "left" ? "right" : "left";
      const r = rng(100);
      if (r < 30) {
        const item = scope.create("Item", { label: `js ${c} ${rng(1000)}`, count: 0 });
        scope.root.insert(key, item, rng(list.length + 1));
        scope._fuzzInserted.set(item.uuid, `client ${c} inserted ${item.uuid.slice(0, 8)} into ${key}`);
        log.push(`${c}: insert ${item.uuid.slice(0, 8)} into ${key}`);
      } else if (r < 42 && list.length) {
        const id = pick(list);
        unlinked.add(id);
        scope.root.remove(key, scope.object(id));
        log.push(`${c}: remove ${id.slice(0, 8)} from ${key}`);
      } else if (r < 54 && list.length > 1) {
        const moved = list.slice(), [id] = moved.splice(rng(moved.length), 1);
        moved.splice(rng(moved.length + 1), 0, id);
        scope.root.set(key, moved);
        log.push(`${c}: move ${id.slice(0, 8)} within ${key}`);
      } else if (r < 66 && list.length) {
        const id = pick(list);
        unlinked.add(id);
        scope.root.set(key, list.filter((x) => x !== id));
        const target = items(scope, other).slice();
        target.splice(rng(target.length + 1), 0, id);
        scope.root.set(other, target);
        log.push(`${c}: move ${id.slice(0, 8)} from ${key} to ${other}`);
      } else if (r < 80 && list.length) {
        const item = scope.object(pick(list));
        if (rng(2)) item.set("label", `js ${c} ${rng(1000)}`); else item.set("count", (item.get("count") ?? 0) + 1);
        log.push(`${c}: set a value of ${item.uuid.slice(0, 8)}`);
      } else if (r < 88) {
        const all = [...items(scope, "left"), ...items(scope, "right")];
        const target = all.length && rng(3) ? pick(all) : null;
        scope.root.set("featured", target);
        log.push(`${c}: featured = ${target?.slice(0, 8) ?? null}`);
      } else if (r < 94) {
        if (rng(2)) scope.root.set("title", `js ${c} ${rng(1000)}`); else scope.root.set("step", (scope.root.get("step") ?? 0) + 1);
        log.push(`${c}: set a value of the root`);
      } else {
        // An edit the server rejects: a number where Item.label holds strings, or a reference to nothing.
        const all = [...items(scope, "left"), ...items(scope, "right")].filter((id) => scope.objects.has(id));
        if (all.length && rng(2)) { scope.object(pick(all)).set("label", 404); log.push(`${c}: label = 404 (rejected)`); }
        else { scope.root.set("featured", uuid()); log.push(`${c}: featured = nothing (rejected)`); }
      }
    };
    for (let step = 0; step < ops; step++) {
      const r = rng(100);
      const c = rng(jsCount), scope = scopes[c];
      if (r < 45) edit(c, scope);
      else if (r < 60) { const n = 2 + rng(3); log.push(`${c}: grouped ${n}`); scope.modify(() => { for (let k = 0; k < n; k++) edit(c, scope); }); }
      else if (r < 70) { const n = 1 + rng(3); log.push(`${c}: atomic ${n}`); scope.modify(() => { for (let k = 0; k < n; k++) edit(c, scope); }, { atomic: true }); }
      else if (r < 80 && peer) { const command = `${rng(3) ? "edit" : "atomic"} ${1 + rng(3)}`; log.push(`swift: ${command}`); peer.send(command); }
      else if (r < 88) {
        const relay = pick(relays), how = rng(12);
        if (how === 0) { const ms = 1_500 + rng(1_000); relay.down(ms); log.push(`relay ${relays.indexOf(relay)} down ${ms} ms (its session expires)`); }
        else if (how < 5) { relay.cut(); log.push(`cut relay ${relays.indexOf(relay)}`); }
        else {
          const direction = how < 9 ? "up" : "down";
          relay.drop(direction);
          log.push(`drop ${direction} on relay ${relays.indexOf(relay)}`);
          setTimeout(() => relay.cut(), 5 + rng(60));
        }
      }
      await pause(rng(8));
    }

    // Offline: one JS client loses its connection (for longer than the session expiry, or only until
    // it reconnects and resumes) and edits on alone, each edit a change set of its own, some grouped
    // or atomic, while the others edit too; back online, its change sets go coalesced
    // (ChangeSetBatch in contrail.js) to a new or resumed session.
    {
      const away = rng(jsCount), scope = scopes[away], expires = rng(2) === 0;
      // The edits start as the client sees its connection end (a cut one reconnects within ms).
      const offline = clients[away].status !== "online" ? null : new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`client ${away} did not go offline`)), 5_000);
        const off = clients[away].on("status", (status) => { if (status === "offline") { clearTimeout(timer); off(); resolve(); } });
      });
      if (expires) relays[away].down(1_300 + rng(400)); else relays[away].cut();
      log.push(`offline phase: client ${away} ${expires ? "down (its session expires)" : "cut"}`);
      await offline;
      for (let k = 10 + rng(30); k > 0; k--) {
        const r = rng(10);
        if (r < 7) { edit(away, scope); scope.flush(); }
        else if (r < 9) { log.push(`${away}: grouped 2`); scope.modify(() => { edit(away, scope); edit(away, scope); }); }
        else { log.push(`${away}: atomic 2`); scope.modify(() => { edit(away, scope); edit(away, scope); }, { atomic: true }); }
        if (rng(4) === 0) { const c = (away + 1 + rng(jsCount - 1)) % jsCount; if (c !== away) edit(c, scopes[c]); }
      }
      if (expires) await pause(1_800);
    }

    // Settle: every relay passes everything again, every edit goes out and is answered.
    log.push("settle");
    await pause(80);  // the last delayed cuts happen
    for (const relay of relays) relay.heal();
    // Settling checks convergence, not recovery from timeouts: on a loaded machine a 1 s connect
    // timeout can fail every attempt (two suites at once left clients "connecting" for 30 s), so
    // from here the clients get the library's default patience.
    for (const client of clients) { client.connectTimeout = 15_000; client.replyTimeout = 20_000; }
    for (const scope of scopes) scope.flush();
    const quiet = () => clients.every((c, i) => c.status === "online" && scopes[i].queue.length === 0 && scopes[i]._pending.size === 0 && !scopes[i]._refetching);
    const where = () => clients.map((c, i) => `${i}: ${c.status}, ${scopes[i].queue.length} queued (${scopes[i].queue.map((e) => e.index).join(",")}), ${scopes[i]._pending.size} pending${scopes[i]._refetching ? ", refetching" : ""}, unacked ${c._unacked.map((m) => m.type + m.index).join(",")}`).join("; ");
    try { await until(quiet, "the JS clients did not settle", 60_000); } catch (error) { throw new Error(`${error.message}: ${where()}`); }
    if (peer) {
      const settled = await peer.answer("settle", 40_000);
      if (settled !== "settled") throw new Error(`the Swift peer did not settle: ${settled}`);
    }
    await until(quiet, "the JS clients did not settle after the Swift peer", 60_000);

    // A fresh fetch is the server's state; every replica must come to equal it.
    const fresh = new Scope(name, { rootClass: "Shelf" }), reader = new Client(`ws://127.0.0.1:${port}/`);
    try {
      await reader.fetch(fresh);
      const expected = fresh.stateJSON();
      problems.push(...defects(expected).map((d) => `server: ${d}`));
      const want = canonical(expected);
      let swiftState = null;
      const swiftEqual = async () => {
        if (!peer) return true;
        const line = await peer.answer("state");
        swiftState = line.startsWith("state ") ? JSON.parse(line.slice(6)) : line;
        return typeof swiftState === "object" && canonical(swiftState) === want;
      };
      const deadline = Date.now() + 10_000;
      while (!(scopes.every((s) => canonical(s.stateJSON()) === want) && (await swiftEqual()))) {
        if (Date.now() > deadline) {
          scopes.forEach((s, i) => { if (canonical(s.stateJSON()) !== want) problems.push(`JS replica ${i} differs from a fresh fetch:\n    replica ${canonical(s.stateJSON())}\n    fetch   ${want}`); });
          if (peer && (typeof swiftState !== "object" || canonical(swiftState) !== want)) problems.push(`the Swift replica differs from a fresh fetch:\n    replica ${typeof swiftState === "object" ? canonical(swiftState) : swiftState}\n    fetch   ${want}`);
          break;
        }
        await pause(20);
      }
      const root = expected.objects[expected.root]?.properties ?? {};
      const present = new Set([...(root.left ?? []), ...(root.right ?? [])]);
      for (const [id, what] of acked) {
        if (present.has(id) || unlinked.has(id)) continue;
        problems.push(`acknowledged insert lost: ${what}; its history: ${log.filter((line) => line.includes(id.slice(0, 8))).join("; ")}`);
        problems.push(`  trace of ${id.slice(0, 8)}:\n    ${trace.filter((line) => line.includes(id.slice(0, 8))).join("\n    ")}`);
      }
    } finally {
      reader.close();
    }
  } catch (error) {
    problems.push(`error: ${error.message}`);
  } finally {
    for (const client of clients) client.close();
    for (const relay of relays) relay.close();
    peer?.stop();
  }
  return { seed, ok: problems.length === 0, problems, log, swiftOutput: peer?.output ?? [] };
}

async function main(argv) {
  const options = { seeds: 20, start: 1, parallel: 4, ops: 60, swift: true, contrail: null, url: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i], value = () => argv[++i];
    if (flag === "--seeds") options.seeds = Number(value());
    else if (flag === "--start") options.start = Number(value());
    else if (flag === "--parallel") options.parallel = Number(value());
    else if (flag === "--ops") options.ops = Number(value());
    else if (flag === "--contrail") options.contrail = value();
    else if (flag === "--url") options.url = value();
    else if (flag === "--no-swift") options.swift = false;
    else if (flag === "--no-coalesce") options.coalesce = false;
    else { console.error(`unknown argument ${flag}`); process.exit(2); }
  }
  if (typeof WebSocket !== "function") { console.error("needs a WebSocket in Node (Node 22, or Node 20 with --experimental-websocket)"); process.exit(2); }
  if (!options.contrail && (options.swift || !options.url)) { console.error("needs --contrail PATH (the contrail executable: it serves and runs the Swift peer)"); process.exit(2); }
  let server = null, port;
  if (options.url) port = Number(new URL(options.url).port);
  else { server = await startServer(options.contrail); port = server.port; }
  const started = Date.now();
  let passed = 0, failed = 0, next = options.start;
  const end = options.start + options.seeds;
  const worker = async () => {
    while (next < end) {
      const seed = next++;
      const result = await runSeed(seed, { port, contrail: options.contrail, swift: options.swift, ops: options.ops, coalesce: options.coalesce });
      if (result.ok) { passed++; continue; }
      failed++;
      console.log(`seed ${seed} FAILED:\n  ${result.problems.join("\n  ")}\n  last operations: ${result.log.slice(-25).join("; ")}`);
      if (result.swiftOutput.length) console.log(`  Swift peer: ${result.swiftOutput.slice(-5).map((line) => line.slice(0, 300)).join(" | ")}`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.parallel) }, worker));
  server?.stop();
  console.log(`seeds ${options.start}..<${end} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2));
