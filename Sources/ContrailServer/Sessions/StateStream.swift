import ContrailWire
import Synchronization

/// A scope's full state on its way to one session in parts (`ScopeStateChunk`, Protocol §8.25):
/// the parts not yet numbered. Its ``SessionOutbox`` numbers the next part only while the
/// unacknowledged bytes leave room for it (``SessionOutbox/streamBudget``), so the resend buffer
/// holds a window of parts, never the whole state.
///
/// Either complete from the start (a small scope's cached parts, shared by every session that
/// fetched the same state), or *produced*: a big scope's parts are encoded off the scope's actor
/// from a snapshot of its store while the first ones are already on the wire
/// (``SessionOutbox/supply(_:total:finished:to:)`` appends them as they come, in order).
struct StateStream: Sendable {
    /// Tells produced streams apart, so that a producer's parts reach its own stream only.
    struct ID: Hashable, Sendable {
        private static let next = Atomic<Int>(1)
        private let value: Int
        /// A new, unique identity.
        init() { value = Self.next.add(1, ordering: .relaxed).oldValue }
    }

    /// The session's handle for the scope.
    let scopeIndex: Int
    /// The server root's UUID, lower case.
    let rootUUID: String
    /// The stream's identity.
    let id: ID
    /// The objects in the whole state (0 until a produced stream's first part came).
    private(set) var total: Int
    /// The parts still to be numbered, in order (of a produced stream: those encoded so far).
    private(set) var remaining: ArraySlice<ScopeStateChunk.Part>
    /// Whether every part is in `remaining` or already taken (false while a producer still encodes).
    private(set) var isComplete: Bool

    /// A complete stream of `parts`.
    init(scopeIndex: Int, rootUUID: String, parts: [ScopeStateChunk.Part]) {
        self.scopeIndex = scopeIndex
        self.rootUUID = rootUUID
        self.id = ID()
        self.total = parts.last.map { $0.offset + $0.count } ?? 0
        self.remaining = parts[...]
        self.isComplete = true
    }

    /// A stream whose parts a producer supplies later, under `id`.
    init(scopeIndex: Int, rootUUID: String, producedAs id: ID) {
        self.scopeIndex = scopeIndex
        self.rootUUID = rootUUID
        self.id = id
        self.total = 0
        self.remaining = []
        self.isComplete = false
    }

    /// The next part as a message numbered `index`, without taking it; nil when none is ready.
    func next(index: Int) -> OutgoingMessage? {
        remaining.first.map { .scopeStateChunk(index: index, scopeIndex: scopeIndex, rootUUID: rootUUID, total: total, part: $0) }
    }

    /// Takes the next part (after ``next(index:)`` named it).
    mutating func advance() {
        remaining = remaining.dropFirst()
    }

    /// Appends a produced part of a state of `total` objects; `finished`: it was the last.
    mutating func append(_ part: ScopeStateChunk.Part?, total: Int, finished: Bool) {
        assert(!isComplete, "only a produced stream takes parts")
        self.total = total
        if let part { remaining.append(part) }
        isComplete = finished
    }
}
