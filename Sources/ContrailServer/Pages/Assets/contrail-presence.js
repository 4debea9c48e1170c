// Presence (Protocol §8.20) for the browser client: each page publishes one small JSON value per
// scope (a name, a pointer, a selection) and sees the other sessions' values as they join, change
// and leave. Nothing of it is recorded: no change set, no log. Swift: ScopePresence and
// Session+Presence (Sources/Contrail/Presence, Sources/Contrail/Sync/Session+Presence.swift).
//
//   import { presence } from "/contrail-presence.js";
//   const here = presence(client, scope);
//   here.publish({ name: "Ada", pointer: [120, 48] });
//   here.on("join", ({ peer }) => …); here.on("change", …); here.on("leave", …);
//   for (const peer of here.peers.values()) draw(peer.user ?? peer.id, peer.value);
import { Emitter } from "./contrail.js";

/** The extension's name in SessionCreateReply.extensions and the message's wire type. */
export const PRESENCE = "Presence";

const byScope = new WeakMap();
const positive = (n) => (Number.isInteger(n) && n > 0 ? n : null);

/** The presence of `scope` fetched (or to be fetched) through `client`: one object per scope. */
export function presence(client, scope) {
  let here = byScope.get(scope);
  if (!here) {
    here = new ScopePresence(client, scope);
    byScope.set(scope, here);
  }
  return here;
}

/** Thrown by `publish` for a value longer than the server relays (Swift: PresenceError.valueTooLarge). */
export class PresenceTooLarge extends Error {
  constructor(bytes, limit) {
    super(`presence value of ${bytes} bytes is over the limit of ${limit} bytes`);
    this.bytes = bytes;
    this.limit = limit;
  }
}

export class ScopePresence extends Emitter {
  constructor(client, scope) {
    super();
    this.client = client;
    this.scope = scope;
    /** This page's value; null: none. */
    this.value = null;
    /** The other sessions with a value, by peer id: {id, user, value}. */
    this.peers = new Map();
    this._sentAt = -Infinity;
    this._timer = null;
    client.on("presence", (m) => { if (m.scopeIndex === scope._scopeIndex && m.scopeIndex !== null) this._apply(m); });
    client.on("attached", (attached) => { if (attached === scope) this._send(true); });
    client.on("status", (status) => {
      if (status === "online") this._send(true);   // a resume: the server forgot the old connection's presence
      else this._apply({ peers: [], replace: true }); // offline: nobody is known to be here
    });
  }

  /** The server's advertised limits (Protocol §8.19), or the defaults. */
  get maxValueBytes() { return positive(this.client.serverLimits?.maxPresenceBytes) ?? 4096; }
  get updatesPerSecond() { return positive(this.client.serverLimits?.presenceUpdatesPerSecond) ?? 10; }

  /** Publishes `value` (any JSON); throws PresenceTooLarge past the server's limit. */
  publish(value) {
    const bytes = new TextEncoder().encode(JSON.stringify(value ?? null)).length;
    if (bytes > this.maxValueBytes) throw new PresenceTooLarge(bytes, this.maxValueBytes);
    this.value = value ?? null;
    this._send(false);
  }

  /** Withdraws this page's value: the others see it leave. */
  clear() { this.publish(null); }

  /** Sends the value now, or (throttled) once the interval since the last send has passed: latest wins. */
  _send(subscribing) {
    const client = this.client;
    const scopeIndex = this.scope._scopeIndex;
    if (!client.extensions?.has(PRESENCE) || client.status !== "online" || scopeIndex === null || scopeIndex === undefined) return;
    const interval = 1000 / Math.max(1, this.updatesPerSecond);
    const now = performance.now();
    if (!subscribing && now - this._sentAt < interval) {
      if (this._timer === null) this._timer = setTimeout(() => { this._timer = null; this._send(false); }, interval - (now - this._sentAt));
      return;
    }
    clearTimeout(this._timer);
    this._timer = null;
    this._sentAt = now;
    client.sendUnsequenced({ type: PRESENCE, index: 0, scopeIndex, value: this.value });
  }

  /** A PresencePeers message: peers with a value joined or changed, those with null left. */
  _apply(m) {
    const seen = new Set();
    const events = [];
    for (const entry of Array.isArray(m.peers) ? m.peers : []) {
      if (!entry || typeof entry.peer !== "string") continue;
      seen.add(entry.peer);
      const old = this.peers.get(entry.peer);
      if (entry.value === null || entry.value === undefined) {
        if (old) { this.peers.delete(entry.peer); events.push(["leave", old]); }
        continue;
      }
      const peer = { id: entry.peer, user: typeof entry.user === "string" ? entry.user : null, value: entry.value };
      this.peers.set(entry.peer, peer);
      if (!old) events.push(["join", peer]);
      else if (JSON.stringify(old.value) !== JSON.stringify(peer.value) || old.user !== peer.user) events.push(["change", peer]);
    }
    if (m.replace === true) {
      for (const [id, old] of this.peers) if (!seen.has(id)) { this.peers.delete(id); events.push(["leave", old]); }
    }
    for (const [type, peer] of events) this.emit(type, { peer });
  }
}
