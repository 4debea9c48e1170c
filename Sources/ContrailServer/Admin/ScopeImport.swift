import ContrailWire
import Foundation

/// An imported scope state (the shape ``ContrailServer/exportScope(_:)`` gives) as one atomic
/// change set against the scope's current state, and that change set applied through the scope's
/// own path: validated like a client's, logged, acknowledged once durable and broadcast to every
/// subscribed session.
enum ScopeImport {
    /// The fragments that bring `current` to `state`: an `add` of every object it lacks, a `change`
    /// of every object that differs (with `null` for the properties the import does not name), the
    /// root first, then the objects in the order the root reaches them. O(objects). The import's root becomes the scope's root (its UUID is rewritten wherever a
    /// value names it); objects not reachable from the root are left out, as the scope would collect them.
    static func fragments(importing state: JSON, over current: ScopeStore) throws(AdminError) -> [SyncFragment] {
        guard case .object = state else { throw .invalidState("not a JSON object") }
        guard case .string(let rootText)? = state["root"], let root = UUID(wireString: rootText) else {
            throw .invalidState("no \"root\" UUID")
        }
        guard case .object(let members)? = state["objects"] else { throw .invalidState("no \"objects\" object") }
        guard let rootObject = members[rootText] ?? members.first(where: { UUID(wireString: $0.key) == root })?.value,
              case .string(let rootClass)? = rootObject["clsName"], !rootClass.isEmpty else {
            throw .invalidState("the root object is not among \"objects\", or has no \"clsName\"")
        }
        let remapped = root == current.rootUUID ? state : rewrite(state, root: root, as: current.rootUUID)
        guard let imported = ScopeStore(snapshot: remapped) else {
            throw .invalidState("every object needs a UUID key, a \"clsName\" string and a \"properties\" object")
        }
        // Reachability by value: a state carries no property kinds, so a string (or array element)
        // naming an object of the import is a reference (the rule the server applies to values).
        var order = [imported.rootUUID]
        var seen: Set<UUID> = [imported.rootUUID]
        var next = 0
        while next < order.count {
            let properties = imported.objects[order[next]]?.properties ?? [:]
            next += 1
            for value in properties.values {
                for uuid in referencedUUIDs(value) where imported.objects[uuid] != nil && seen.insert(uuid).inserted {
                    order.append(uuid)
                }
            }
        }
        return order.compactMap { uuid -> SyncFragment? in
            guard let object = imported.objects[uuid] else { return nil }
            guard let before = current.objects[uuid] else {
                return SyncFragment(kind: .add, uuid: uuid, className: object.className, properties: object.properties)
            }
            guard before != object else { return nil }
            var properties = object.properties
            for key in before.properties.keys where properties[key] == nil { properties[key] = .null }
            return SyncFragment(kind: .change, uuid: uuid, className: object.className, properties: properties)
        }
    }

    /// The UUIDs a property value names: a string in UUID form, or such strings in an array.
    private static func referencedUUIDs(_ value: JSON) -> [UUID] {
        switch value {
        case .string(let text) where text.utf8.count == 36: UUID(wireString: text).map { [$0] } ?? []
        case .array(let elements): elements.flatMap(referencedUUIDs)
        default: []
        }
    }

    /// `json` with every string naming `root` (as a UUID) replaced by `replacement`'s. O(size).
    private static func rewrite(_ json: JSON, root: UUID, as replacement: UUID) -> JSON {
        switch json {
        case .string(let text) where text.utf8.count == 36 && UUID(wireString: text) == root:
            return .string(replacement.wireString)
        case .array(let elements):
            return .array(elements.map { rewrite($0, root: root, as: replacement) })
        case .object(let members):
            var result: [String: JSON] = [:]
            for (key, value) in members {
                let newKey = key.utf8.count == 36 && UUID(wireString: key) == root ? replacement.wireString : key
                result[newKey] = rewrite(value, root: root, as: replacement)
            }
            return .object(result)
        default:
            return json
        }
    }

    /// Applies `fragments` to `scope` as one atomic change set from the server itself (an outbox of
    /// its own, subscribed to nothing, so every subscribed session gets the broadcast) and returns
    /// the fragments' errors once the reply comes (after the record is durable).
    /// `identity`: whose change set the history records; `origin`: what clients that ask for origins
    /// are told (§8.22).
    static func apply(_ fragments: [SyncFragment], to scope: any HostedScope, identity: SessionIdentity = .unrestricted,
                      origin: String = #"{"admin":"import"}"#) async throws(AdminError) -> [String] {
        let outbox = SessionOutbox(limitBytes: Int.max / 2, origin: origin) { _ in }
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let generation = outbox.attach({ wake.yield() }, resumed: false)
        let message = ScopeSync(index: 1, scopeIndex: 0, fragments: fragments, atomic: true, changeSetID: UUID())
        await scope.sync(message, from: outbox, identity: identity, received: nil)
        // A stopping server answers nothing: give up after a generous bound.
        let timeout = Task {
            try? await Task.sleep(for: .seconds(120))
            wake.finish()
        }
        defer { timeout.cancel() }
        for await _ in wakes {
            for pending in outbox.takePending(generation: generation) {
                if let reply = pending.syncReply {
                    return reply.fragmentReplies.compactMap { $0.error?.message }
                }
            }
        }
        throw .stopped
    }
}
