// Helpers shared by the Node tests of contrail.js: bounded waits on events, failing the process.

export const fail = (why) => { console.error(`FAIL ${why}`); process.exit(1); };
export const check = (condition, why) => { if (!condition) fail(why); };

/** Resolves when `emitter` emits `type` with an event passing `test`; fails after `ms`. */
export function next(emitter, type, test = () => true, ms = 10_000) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => fail(`no '${type}' event within ${ms} ms`), ms);
    const off = emitter.on(type, (event) => {
      if (!test(event)) return;
      clearTimeout(timer); off(); resolve(event);
    });
  });
}
/** Resolves once `condition()` holds, checked after each event of `types` on `emitter`. */
export async function when(emitter, types, condition, why, ms = 10_000) {
  if (condition()) return;
  await new Promise((resolve) => {
    const timer = setTimeout(() => fail(`${why} (not within ${ms} ms)`), ms);
    const offs = types.map((t) => emitter.on(t, () => {
      if (!condition()) return;
      clearTimeout(timer); offs.forEach((off) => off()); resolve();
    }));
  });
}
export const settled = (scope) => when(scope, ["settled"], () => scope.queue.length === 0 && scope._pending.size === 0, "change sets did not settle");
export const same = (x, y) => JSON.stringify(x) === JSON.stringify(y);
/** An emitter view of several emitters: `on` listens on all of them. */
export const all = (...emitters) => ({ on: (type, fn) => { const offs = emitters.map((e) => e.on(type, fn)); return () => offs.forEach((off) => off()); } });

