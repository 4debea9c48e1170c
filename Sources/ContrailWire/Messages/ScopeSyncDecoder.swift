import Foundation

/// Decodes a frame of plain `ScopeSync`s straight from its UTF-8 bytes, without a JSON tree of the
/// envelope and fragments: what a server reads most. Only the `properties` of each fragment are
/// parsed as JSON values (they are kept as such).
///
/// It reads one shape: a `ScopeSync` object, or an array of them, whose members are `type`,
/// `index`, `scopeIndex`, `fragments` and optionally `atomic` and `changeSet`, each once, with
/// fragments of `type`, `uuid`, `clsName` and optionally `properties`, each once, every value
/// valid. For anything else (another message, another member, a repeated one, a value
/// ``ScopeSync/init(json:)`` would reject, malformed JSON) ``decode(_:limits:)`` returns nil and
/// the caller decodes the frame the general way, which then gives the proper error. For every frame
/// it reads, it returns exactly what ``MessageFrame/decodeEach(_:)`` would.
package enum ScopeSyncDecoder {
    /// The syncs `frame` holds, in frame order; nil when it is not of the shape this type reads
    /// (see the type's description). O(frame size).
    package static func decode(_ frame: UnsafeRawBufferPointer, limits: JSONLimits) -> [ScopeSync]? {
        // In a tree, a frame this type accepts is at most 6 deep (array, message, fragments,
        // fragment, properties, a flat array value); its own reading never nests further than that.
        guard frame.count <= limits.maxBytes, limits.maxDepth >= 6 else { return nil }
        var reader = Reader(parser: JSONParser(bytes: frame, limits: limits))
        guard let p = reader.parser.base else { return nil }
        do throws(Reader.Unreadable) {
            reader.skipWhitespace(p)
            let syncs: [ScopeSync]
            if reader.parser.position < reader.parser.count, p[reader.parser.position] == UInt8(ascii: "[") {
                syncs = try reader.elements(p) { reader throws(Reader.Unreadable) in try reader.sync(p) }
            } else {
                syncs = [try reader.sync(p)]
            }
            reader.skipWhitespace(p)
            guard reader.parser.position == reader.parser.count else { return nil }
            return syncs
        } catch {
            return nil
        }
    }

    private struct Reader {
        var parser: JSONParser

        /// The frame is not of the shape this type reads (or not JSON): decode it the general way.
        struct Unreadable: Error {}

        mutating func skipWhitespace(_ p: UnsafePointer<UInt8>) { parser.skipWhitespace(p) }

        /// Whether the next byte is `byte`, taking it if so.
        mutating func consume(_ byte: UInt8, _ p: UnsafePointer<UInt8>) throws(Unreadable) -> Bool {
            guard parser.position < parser.count else { throw Unreadable() }
            guard p[parser.position] == byte else { return false }
            parser.position += 1
            return true
        }

        /// After a member or an element: true at a `,` (taken), false at `closer` (taken).
        mutating func nextElement(closedBy closer: UInt8, _ p: UnsafePointer<UInt8>) throws(Unreadable) -> Bool {
            skipWhitespace(p)
            if try consume(UInt8(ascii: ","), p) { return true }
            guard try consume(closer, p) else { throw Unreadable() }
            return false
        }

        /// The members of an object, `read` called with each key and the parser at its value.
        mutating func members(_ p: UnsafePointer<UInt8>, _ read: (inout Reader, String) throws(Unreadable) -> Void) throws(Unreadable) {
            guard try consume(UInt8(ascii: "{"), p) else { throw Unreadable() }
            skipWhitespace(p)
            if try consume(UInt8(ascii: "}"), p) { return }
            repeat {
                skipWhitespace(p)
                let key: String
                do { key = try parser.parseKey(p) } catch { throw Unreadable() }
                try read(&self, key)
            } while try nextElement(closedBy: UInt8(ascii: "}"), p)
        }

        mutating func value(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> JSON {
            do { return try parser.parseValue(p) } catch { throw Unreadable() }
        }

        mutating func string(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> String {
            guard case .string(let text) = try value(p) else { throw Unreadable() }
            return text
        }

        /// A non-negative integer as `WireFields.unsigned` reads it.
        mutating func unsigned(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> Int {
            guard let number = try value(p).uint64Value, number <= UInt64(Int.max) else { throw Unreadable() }
            return Int(number)
        }

        /// A UUID string: its 36 bytes are read in place when it has no escape (a UUID's never has).
        mutating func uuid(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> UUID {
            let start = parser.position
            if start + 37 < parser.count, p[start] == UInt8(ascii: "\""), p[start + 37] == UInt8(ascii: "\""),
               let uuid = UUID(wireBytes: UnsafeBufferPointer(start: p + start + 1, count: 36)) {
                parser.position += 38
                return uuid
            }
            guard let uuid = UUID(wireString: try string(p)) else { throw Unreadable() }
            return uuid
        }

        /// Marks `member` seen in `seen`; a repeated member is left to the general path (where the
        /// last one wins).
        static func first(_ member: UInt8, _ seen: inout UInt8) throws(Unreadable) {
            guard seen & member == 0 else { throw Unreadable() }
            seen |= member
        }

        mutating func sync(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> ScopeSync {
            var seen: UInt8 = 0
            var index = 0
            var scopeIndex = 0
            var fragments: [SyncFragment] = []
            var atomic: Bool?
            var changeSetID: UUID?
            try members(p) { reader, key throws(Unreadable) in
                switch key {
                case "type":
                    try Reader.first(1, &seen)
                    guard try reader.string(p) == ScopeSync.typeName else { throw Unreadable() }
                case "index":
                    try Reader.first(2, &seen)
                    index = try reader.unsigned(p)
                case "scopeIndex":
                    try Reader.first(4, &seen)
                    scopeIndex = try reader.unsigned(p)
                case "fragments":
                    try Reader.first(8, &seen)
                    fragments = try reader.elements(p) { reader throws(Unreadable) in try reader.fragment(p) }
                case "atomic":
                    try Reader.first(16, &seen)
                    guard case .bool(let flag) = try reader.value(p) else { throw Unreadable() }
                    atomic = flag
                case "changeSet":
                    try Reader.first(32, &seen)
                    changeSetID = try reader.uuid(p)
                default:
                    throw Unreadable()
                }
            }
            guard seen & 15 == 15 else { throw Unreadable() }
            return ScopeSync(index: index, scopeIndex: scopeIndex, fragments: fragments, atomic: atomic, changeSetID: changeSetID)
        }

        /// A fragment's `properties`: an object of values that ``SyncFragment/problem(with:)`` passes,
        /// read member by member into its dictionary (a repeated key: the last wins, as in a tree),
        /// or null. Only a value that is an array is parsed as a tree.
        mutating func properties(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> [String: JSON] {
            guard parser.position < parser.count, p[parser.position] == UInt8(ascii: "{") else {
                guard try value(p) == .null else { throw Unreadable() }
                return [:]
            }
            var properties: [String: JSON] = [:]
            try members(p) { reader, key throws(Unreadable) in
                let value = try reader.value(p)
                guard SyncFragment.problem(with: value) == nil else { throw Unreadable() }
                properties[key] = value
            }
            return properties
        }

        /// The elements of an array, each read by `read` (whitespace before it skipped).
        mutating func elements<Element>(_ p: UnsafePointer<UInt8>, _ read: (inout Reader) throws(Unreadable) -> Element)
            throws(Unreadable) -> [Element]
        {
            guard try consume(UInt8(ascii: "["), p) else { throw Unreadable() }
            skipWhitespace(p)
            var elements: [Element] = []
            if try consume(UInt8(ascii: "]"), p) { return elements }
            repeat {
                skipWhitespace(p)
                elements.append(try read(&self))
            } while try nextElement(closedBy: UInt8(ascii: "]"), p)
            return elements
        }

        mutating func fragment(_ p: UnsafePointer<UInt8>) throws(Unreadable) -> SyncFragment {
            var seen: UInt8 = 0
            var kind = SyncFragment.Kind.change
            var uuid: UUID?
            var className = ""
            var properties: [String: JSON] = [:]
            try members(p) { reader, key throws(Unreadable) in
                switch key {
                case "type":
                    try Reader.first(1, &seen)
                    guard let named = SyncFragment.Kind(rawValue: try reader.string(p)) else { throw Unreadable() }
                    kind = named
                case "uuid":
                    try Reader.first(2, &seen)
                    uuid = try reader.uuid(p)
                case "clsName":
                    try Reader.first(4, &seen)
                    className = try reader.string(p)
                case "properties":
                    try Reader.first(8, &seen)
                    properties = try reader.properties(p)
                default:
                    throw Unreadable()
                }
            }
            guard seen & 7 == 7, let uuid else { throw Unreadable() }
            return SyncFragment(kind: kind, uuid: uuid, className: className, properties: properties)
        }
    }
}
