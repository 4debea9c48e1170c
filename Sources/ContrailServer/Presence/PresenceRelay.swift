import ContrailNATS
import ContrailSupport
import ContrailWire
import Foundation

/// Presence between the servers of a cluster (Protocol §8.20): over NATS core subjects
/// (`ClusterOptions.presenceSubjectPrefix`, one per scope, outside the JetStream stream's subjects),
/// so presence is never stored in the log. A server subscribes to a scope's subject while one of
/// its sessions is in the scope's presence, and asks the others for their peers when it does
/// (`hello`); each server relays its sessions' changes and refreshes them every sweep, and a peer
/// not refreshed for the timeout leaves (``PresenceHub``).
///
/// ```json
/// {"server":"7d0c…","peer":"5c0e…","user":"ada","value":{"name":"Ada"}}
/// {"server":"7d0c…","hello":true}
/// ```
///
/// Calls from the hub return at once: they go, in order, through one queue that a single task
/// works off (publishes when NATS answers; the newest 4,096 are kept while it does not, and the
/// refreshes make up for any dropped). Subscriptions follow the wanted set on each pass.
final class PresenceRelay: Sendable {
    private enum Command: Sendable {
        case publish(subject: String, payload: [UInt8])
        /// Subscribe to the scopes in `wanted` (for `hub`), and to no other.
        case reconcile(wanted: Set<String>, hub: PresenceHub?)
    }

    private struct State {
        /// The scopes the hub has presence in.
        var wanted: Set<String> = []
        weak var hub: PresenceHub?
    }

    /// This server's id in relayed messages (random; its own messages come back and are skipped).
    let serverID = UUID().uuidString.lowercased()
    private let link: ClusterLink
    private let log: ServerLog
    private let prefix: String
    private let state = SanitizerVisibleMutex(State())
    private let commands: AsyncStream<Command>.Continuation
    private let worker: Task<Void, Never>

    init(link: ClusterLink, log: ServerLog) {
        self.link = link
        self.log = log
        prefix = link.options.presenceSubjectPrefix
        let (stream, continuation) = AsyncStream.makeStream(of: Command.self, bufferingPolicy: .bufferingNewest(4_096))
        commands = continuation
        let serverID = serverID
        worker = Task {
            var subscriptions: [String: Task<Void, Never>] = [:]
            for await command in stream {
                guard let connection = try? await link.handles().jetStream.connection else { continue }
                switch command {
                case .publish(let subject, let payload):
                    try? await connection.publish(subject, payload: payload)
                case .reconcile(let wanted, let hub):
                    for (scope, task) in subscriptions where !wanted.contains(scope) {
                        task.cancel()
                        subscriptions[scope] = nil
                    }
                    guard let hub else { continue }
                    for scope in wanted where subscriptions[scope] == nil {
                        let subject = Self.subject(prefix: link.options.presenceSubjectPrefix, scope: scope)
                        guard let subscription = try? await connection.subscribe(subject) else { continue }
                        try? await connection.publish(subject, payload: JSON.object(["server": .string(serverID), "hello": .bool(true)]).serialized())
                        subscriptions[scope] = Task {
                            await Self.receive(subscription, scope: scope, hub: hub, serverID: serverID)
                        }
                    }
                }
            }
            for task in subscriptions.values { task.cancel() }
        }
    }

    private static func subject(prefix: String, scope: String) -> String {
        prefix + "." + (scope.isEmpty ? "_" : ClusterEntry.token(for: scope))
    }

    /// Hands what other servers publish on `subscription` to `hub`, until cancelled.
    private static func receive(_ subscription: NATSSubscription, scope: String, hub: PresenceHub, serverID: String) async {
        for await message in subscription.messages {
            guard let json = try? JSON(parsing: message.payload, limits: JSONLimits(maxBytes: 1 << 20)),
                  case .string(let server)? = json["server"], server != serverID else { continue }
            if json["hello"] == .bool(true) {
                await hub.relayAll(scope: scope)
                continue
            }
            guard let entry = PresencePeers.Entry(json: json) else { continue }
            await hub.relayed(entry, server: server, scope: scope)
        }
        await subscription.unsubscribe()
    }

    /// Starts relaying `scope` for `hub`.
    func join(_ scope: String, hub: PresenceHub) {
        let wanted = state.withLock { state in
            state.wanted.insert(scope)
            state.hub = hub
            return state.wanted
        }
        commands.yield(.reconcile(wanted: wanted, hub: hub))
    }

    /// Stops relaying `scope`.
    func leave(_ scope: String) {
        reconcile { _ = $0.wanted.remove(scope) }
    }

    /// Relays one of this server's peers in `scope` to the other servers.
    func publish(_ entry: PresencePeers.Entry, scope: String) {
        guard case .object(var members) = entry.json else { return }
        members["server"] = .string(serverID)
        commands.yield(.publish(subject: Self.subject(prefix: prefix, scope: scope), payload: JSON.object(members).serialized()))
    }

    /// Makes the subscriptions follow the wanted set again (after a NATS reconnection, say).
    func reconcile() {
        reconcile { _ in }
    }

    private func reconcile(_ change: (inout State) -> Void) {
        let (wanted, hub) = state.withLock { state in
            change(&state)
            return (state.wanted, state.hub)
        }
        commands.yield(.reconcile(wanted: wanted, hub: hub))
    }

    /// Stops relaying anything.
    func stop() async {
        state.withLock { $0.wanted = [] }
        commands.finish()
        worker.cancel()   // what is still queued is ephemeral: the other servers' timeouts cover it
        await worker.value
    }
}
