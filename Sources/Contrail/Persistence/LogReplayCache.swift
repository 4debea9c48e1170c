import Foundation

/// What restoring one record of a log learns that the records after it can use: the scope's
/// objects by UUID, in a ``UUIDTable`` (no `Hasher` per lookup). One per `FragmentLog.attach`.
///
/// An entry is only a hint: it is used while the object is still attached to the scope under
/// that UUID (a record may detach it, or the root may take over another UUID), otherwise the
/// scope is asked again. So the answer is always the scope's own.
@MainActor
final class LogReplayCache {
    let scope: Scope
    /// Only touched on the main actor, never while another access to it is under way: no dynamic
    /// exclusivity check is needed (it was one per lookup).
    @exclusivity(unchecked) private var members = UUIDTable<ModelObject>()

    init(scope: Scope) {
        self.scope = scope
    }

    /// The scope's object with `uuid`, if it holds one. Amortised O(1).
    func object(for uuid: UUID) -> ModelObject? {
        if let cached = members[uuid], let tracking = cached._tracking, tracking.host === scope, tracking.uuid == uuid {
            return cached
        }
        guard let found = scope.object(for: uuid) else { return nil }
        members.update(found, for: uuid)
        return found
    }
}
