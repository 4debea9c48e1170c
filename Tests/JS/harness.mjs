// Helpers shared by the Node tests of contrail.js (`node --test Tests/JS/`): bounded waits on events,
// and where the tests that need a running Contrail server find it.
//
// The tests import the client from the source tree, the file the server embeds and serves byte for
// byte (PagesAssetTests.swift checks that): Sources/ContrailServer/Pages/Assets/contrail.js.

/**
 * Why a test that needs a server cannot run here (a skip reason), or false when it can: the server's
 * WebSocket URL comes from the environment variable `variable` (PagesNodeTests.swift starts the
 * servers and sets it), and Node must have a WebSocket (Node 22, or Node 20 with
 * --experimental-websocket).
 */
export function needsServer(variable, what) {
  if (!process.env[variable]) return `needs ${what}: set ${variable}=ws://HOST:PORT/ (PagesNodeTests.swift does)`;
  if (typeof globalThis.WebSocket !== "function") return "needs a WebSocket in Node (Node 22, or Node 20 with --experimental-websocket)";
  return false;
}

/** Resolves when `emitter` emits `type` with an event passing `test`; rejects after `ms`. */
export function next(emitter, type, test = () => true, ms = 10_000) {
  return new Promise((resolve, reject) => {
    const off = emitter.on(type, (event) => {
      if (!test(event)) return;
      clearTimeout(timer); off(); resolve(event);
    });
    const timer = setTimeout(() => { off(); reject(new Error(`no '${type}' event within ${ms} ms`)); }, ms);
  });
}

/** Resolves once `condition()` holds, checked now and after each event of `types` on `emitter`; rejects after `ms`. */
export async function when(emitter, types, condition, why, ms = 10_000) {
  if (condition()) return;
  await new Promise((resolve, reject) => {
    const offs = types.map((t) => emitter.on(t, () => {
      if (!condition()) return;
      clearTimeout(timer); offs.forEach((off) => off()); resolve();
    }));
    const timer = setTimeout(() => { offs.forEach((off) => off()); reject(new Error(`${why} (not within ${ms} ms)`)); }, ms);
  });
}

/** Resolves once `scope` has no change set queued or edit pending. */
export const settled = (scope) => when(scope, ["settled"], () => scope.queue.length === 0 && scope._pending.size === 0, "change sets did not settle");

/** An emitter view of several emitters: `on` listens on all of them. */
export const all = (...emitters) => ({ on: (type, fn) => { const offs = emitters.map((e) => e.on(type, fn)); return () => offs.forEach((off) => off()); } });

/** An emitter that emits "tick" every `ms` milliseconds while someone listens (to poll a condition with `when`). */
export const ticks = (ms = 20) => ({ on: (type, fn) => { const i = setInterval(fn, ms); return () => clearInterval(i); } });

/**
 * Runs the steps of one scenario as subtests of `t`, in order: `step(name, fn)`. A step after a
 * failed one is skipped (it would fail for the same reason) instead of run.
 */
export function steps(t) {
  let failed = null;
  return (name, fn) => t.test(name, { skip: failed ? `step '${failed}' failed` : false }, async () => {
    try { await fn(); } catch (error) { failed = name; throw error; }
  });
}

/** A WebSocket the test drives: `open()`, `receive(message)`, `drop(code)`; what the client sent is in `sent`. */
export class ScriptedSocket {
  static made = [];
  constructor(url) { this.url = url; this.readyState = 0; this.sent = []; this.closed = null; ScriptedSocket.made.push(this); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close(code, reason) { this.readyState = 3; this.closed = { code, reason }; }
  open() { this.readyState = 1; this.onopen?.(); }
  receive(...messages) { this.onmessage?.({ data: JSON.stringify(messages.length === 1 ? messages[0] : messages) }); }
  drop(code, reason = "") { this.readyState = 3; this.onclose?.({ code, reason }); }
}
