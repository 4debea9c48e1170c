import Foundation

/// `ScopeStateChunk` (server → client, sequenced, Contrail extension §8.25): one part of a scope's
/// full state, sent instead of one `ScopeState` to a client that asked for chunks in its
/// `ScopeFetch`, when the state is larger than one chunk. The parts come in order; each names the
/// state's object count (`total`) and how many objects came before it (`offset`); the part whose
/// objects reach `total` is the last, and the state is applied only then, whole.
///
/// ```json
/// {"type":"ScopeStateChunk","index":2,"scopeIndex":0,"rootUUID":"…","total":100000,"offset":0,"fragments":[…]}
/// ```
package struct ScopeStateChunk: Sendable, Equatable {
    /// The wire `type`, also the name a server lists in `extensions` (§8.12).
    package static let typeName = "ScopeStateChunk"

    /// The server's sequence number.
    package var index: Int
    /// The session's handle for the scope.
    package var scopeIndex: Int
    /// The UUID of the server's root object (the same in every part of one state).
    package var rootUUID: UUID
    /// The number of objects (fragments) in the whole state.
    package var total: Int
    /// The number of objects in the parts before this one.
    package var offset: Int
    /// This part's objects, in the state's pre-order (the root first, in the first part).
    package var fragments: [SyncFragment]

    /// Creates the message.
    package init(index: Int, scopeIndex: Int, rootUUID: UUID, total: Int, offset: Int, fragments: [SyncFragment]) {
        self.index = index
        self.scopeIndex = scopeIndex
        self.rootUUID = rootUUID
        self.total = total
        self.offset = offset
        self.fragments = fragments
    }

    /// Decodes and validates the fields; whether the part fits the parts before it (its offset, its
    /// count within `total`) is the receiver's check, so that a bad part is a typed error there.
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
        rootUUID = try fields.rootUUID()
        total = try fields.unsigned("total", "Invalid total")
        offset = try fields.unsigned("offset", "Invalid offset")
        fragments = try fields.syncFragments()
    }

    /// The wire object.
    package var json: JSON {
        [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
            "rootUUID": .string(rootUUID.wireString), "total": .int(Int64(total)), "offset": .int(Int64(offset)),
            "fragments": .array(fragments.map(\.json)),
        ]
    }

    /// One part's fragments as JSON array text, with its offset and count.
    package struct Part: Sendable {
        /// The objects before this part.
        package let offset: Int
        /// The objects in this part.
        package let count: Int
        /// The `fragments` array as JSON text.
        package let text: String
    }

    /// `fragments` cut into parts of at most `maxObjects` objects and about `maxBytes` bytes of
    /// JSON each (a part holds at least one object, so one larger object gets a part of its own).
    /// O(total size).
    package static func parts(of fragments: [SyncFragment], maxObjects: Int, maxBytes: Int) -> [Part] {
        var parts: [Part] = []
        forEachPart(of: fragments, maxObjects: maxObjects, maxBytes: maxBytes) { part in
            parts.append(part)
            return true
        }
        return parts
    }

    /// Cuts `fragments` into parts as ``parts(of:maxObjects:maxBytes:)`` does, handing each to
    /// `body` as soon as it is written (a lazy sequence is read one part ahead at most); stops
    /// when `body` returns false. O(total size).
    package static func forEachPart(of fragments: some Sequence<SyncFragment>, maxObjects: Int, maxBytes: Int,
                                    _ body: (Part) -> Bool) {
        var writer = JSONWriter(sortedKeys: false, capacity: min(maxBytes, 1 << 20) + 1024)
        var start = 0
        var count = 0
        writer.append("[")
        func flush() -> Bool {
            writer.append("]")
            let part = Part(offset: start, count: count, text: writer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
            writer.removeAll()
            writer.append("[")
            start += count
            count = 0
            return body(part)
        }
        for fragment in fragments {
            if count > 0 { writer.append(",") }
            fragment.write(into: &writer)
            count += 1
            if count >= max(1, maxObjects) || writer.count >= maxBytes {
                guard flush() else { return }
            }
        }
        if count > 0 { _ = flush() }
    }
}
