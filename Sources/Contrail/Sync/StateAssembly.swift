import Foundation

/// A scope's full state arriving in parts (`ScopeStateChunk`, Protocol §8.25): the parts' objects,
/// decoded as they come (never more than one part of undecoded text), and the change sets of the
/// scope that arrived meanwhile, which follow the state. Checks every part against the first: same
/// root and total, exactly the next offset; anything else is a typed error
/// (`SyncError.invalidState`) and the state is refused whole. The new objects of each part are
/// made ready as it comes (``PreparedState``), while the next part is on its way; the scope
/// changes only when the state is applied, whole.
///
/// A class, so that the growing array of objects has one owner and each part is appended in place:
/// as a value held in an enum case, every part copied the objects before it (quadratic in parts).
/// Used on the main actor only (a `ScopeSubscription`'s).
@MainActor
final class StateAssembly {
    /// Where a subscription's incoming state stands.
    enum Phase {
        /// Parts are arriving.
        case receiving(StateAssembly)
        /// A part was refused: the rest of that state is dropped until a new one starts (offset 0).
        case refused
    }

    let rootUUID: UUID
    let total: Int
    /// The scope the state is for.
    let scope: Scope
    /// The objects made ready so far.
    private(set) var prepared: PreparedState
    private(set) var fragments: [SyncFragment] = []
    /// `ScopeSync` fragments of the scope that arrived during the state, in order.
    private(set) var heldSyncs: [[SyncFragment]] = []

    /// Starts a state with its first part.
    init(first chunk: ScopeStateChunk, for scope: Scope) throws(SyncError) {
        guard chunk.offset == 0 else {
            throw .invalidState("a state's part at offset \(chunk.offset) came with no part before it")
        }
        rootUUID = chunk.rootUUID
        total = chunk.total
        self.scope = scope
        prepared = PreparedState(count: min(total, 1 << 20))
        fragments.reserveCapacity(min(total, 1 << 20))
        try take(chunk)
    }

    /// Objects received so far.
    var received: Int { fragments.count }

    /// Whether every object of the state has arrived.
    var isComplete: Bool { fragments.count == total }

    /// Takes the next part and prepares its objects. O(part).
    func take(_ chunk: ScopeStateChunk) throws(SyncError) {
        guard chunk.rootUUID == rootUUID, chunk.total == total else {
            throw .invalidState("a state's part names root \(chunk.rootUUID.wireString) of \(chunk.total) objects, "
                + "not root \(rootUUID.wireString) of \(total)")
        }
        guard chunk.offset == fragments.count else {
            throw .invalidState("a state's part at offset \(chunk.offset) came after \(fragments.count) objects")
        }
        guard !chunk.fragments.isEmpty, chunk.fragments.count <= total - fragments.count else {
            throw .invalidState("a state's part of \(chunk.fragments.count) objects at offset \(chunk.offset) does not fit its total of \(total)")
        }
        fragments.append(contentsOf: chunk.fragments)
        prepared.prepare(chunk.fragments, offset: chunk.offset, in: scope)
    }

    /// Keeps a change set of the scope that arrived during the state, to apply after it.
    func hold(_ sync: [SyncFragment]) {
        heldSyncs.append(sync)
    }

    /// The whole state, once complete.
    func state(index: Int, scopeIndex: Int) -> ScopeState {
        ScopeState(index: index, scopeIndex: scopeIndex, rootUUID: rootUUID, fragments: fragments)
    }
}
