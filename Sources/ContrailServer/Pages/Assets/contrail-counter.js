// contrail-counter.js: the SharedCounter of Protocol §8.21 for the browser. An integer property whose
// increments and decrements merge by summing: a change carries its delta in the fragment's `counter`
// member beside the plain total, the server adds the delta to its total, and the page shows the
// server's total plus the deltas it has not applied yet. Swift: SharedCounter
// (Sources/Contrail/Values/SharedCounter.swift) and ScopeSubscription.rebaseCounter;
// JSCounterAgreementTests.swift runs both against one server.
//
//   import { SharedCounterBinding } from "/contrail-counter.js";
//   const likes = new SharedCounterBinding(scope, scope.root, "likes");
//   likes.add(1); likes.onChange = (value, isRemote) => render(value);

const integer = (value) => (Number.isSafeInteger(value) ? value : 0);

/**
 * A Scope's integer property edited as a shared counter. Only edits through `add` are deltas; a plain
 * `scope.set` of the key still sets the total (what an original peer's write does). A client that
 * never lists deltas (a server without "SharedCounter") sends plain totals: last writer wins.
 */
export class SharedCounterBinding {
  constructor(scope, model, key) {
    this.scope = scope;
    this.model = model;
    this.key = key;
    this.base = integer(model.properties[key]);  // the server's total as last heard
    this.unsent = 0;                              // deltas not yet in a change set
    this.onChange = null;
    scope.fragmentHooks.push((fragment) => {
      if (fragment.uuid !== this.model.uuid || !(this.key in fragment.properties)) return;
      // An add sends the total whole; a change its delta, when the edit was this binding's.
      if (fragment.type === "change" && this.unsent) fragment.counter = { ...fragment.counter, [this.key]: this.unsent };
      this.unsent = 0;
    });
    scope.on("changeset", ({ fragments, remote }) => {
      if (!remote) return;
      let heard = false;
      for (const fragment of fragments) {
        if (fragment.uuid !== this.model.uuid || !(this.key in (fragment.properties ?? {}))) continue;
        this.base = integer(fragment.properties[this.key]);  // a broadcast or a full state carries the server's sum
        heard = true;
      }
      if (heard) this.show(true);
    });
    scope.on("settled", ({ fragments, answers }) => {
      let heard = false;
      fragments.forEach((fragment, i) => {
        if (fragment.uuid !== this.model.uuid || !(this.key in (fragment.properties ?? {})) || answers?.[i]?.error) return;
        // The server's sum after this change set; without one, it took the plain total (a plain
        // write, or a server that does not list "SharedCounter").
        const total = answers?.[i]?.modifications?.[this.key];
        this.base = integer(total === undefined ? fragment.properties[this.key] : total);
        heard = true;
      });
      if (heard || fragments.some((f) => f.uuid === this.model.uuid && f.counter?.[this.key])) this.show(false);
    });
  }

  /** The total shown: the server's plus every delta it has not applied yet. */
  get value() { return integer(this.model.properties[this.key]); }

  /** The deltas of the queued change sets and of edits not yet flushed. */
  pending() {
    let sum = this.unsent;
    for (const entry of this.scope.queue) {
      for (const fragment of entry.fragments) if (fragment.uuid === this.model.uuid) sum += integer(fragment.counter?.[this.key]);
    }
    return sum;
  }

  /** Adds `delta` (an integer; negative subtracts). */
  add(delta) {
    if (!Number.isSafeInteger(delta)) throw new TypeError("a counter delta is an integer");
    if (!delta) return;
    this.unsent += delta;
    this.scope.set(this.model, this.key, this.value + delta);
    this.onChange?.(this.value, false);
  }

  increment() { this.add(1); }
  decrement() { this.add(-1); }

  show(isRemote) {
    const value = this.base + this.pending();
    if (value === this.model.properties[this.key]) return;
    this.model.properties[this.key] = value;
    this.onChange?.(value, isRemote);
  }
}
