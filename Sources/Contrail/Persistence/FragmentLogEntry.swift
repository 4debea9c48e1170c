import Foundation

/// One record of a ``FragmentLog``, decoded: a snapshot, a change set, or a settle marker.
///
/// The payload is JSON: `{"root", "origin"?, "atomic"?, "message"?, "id"?, "seq"?, "compacted"?,
/// "settled"?, "batch"?, "members"?, "versions"?, "chain"?, "fragments"}`, the fragments last so that a reader knows what the record is before
/// it reaches them (`LogReplay` relies on that; this type decodes any key order). A pending change
/// set's record (one with `"seq"`) leaves out what it implies: `"origin"` (it is `local`) and a
/// `"root"` that is nil (the reader keeps the root it has; markers leave it out too); its `"chain"` holds the collections
/// written as chained edits (``CollectionEditChain``). Encoding runs on the log's writer thread, so the type is `Sendable`.
struct FragmentLogEntry: Sendable {
    /// The record kind it is written as.
    var kind = LogRecord.Kind.changeSet
    var root: UUID?
    var fragments: [SyncFragment]
    var message: String?
    var origin = "snapshot"
    var isAtomic = false
    /// The change set's id (kept so a resend after a restart is recognised by the server).
    var changeSetID: UUID?
    /// Set on local change sets that were still syncing when written.
    var sequence: Int?
    /// A pending change set kept by compaction: its values are already in the snapshot.
    var isCompacted = false
    /// A marker: the change sets with these sequence numbers have settled (`"settled"`: one number,
    /// or an array of numbers and `[from, to]` ranges).
    var settled: [ClosedRange<Int>]?
    /// The coalesced message (its id) a pending change set was sent in; on a marker record, with
    /// `members`: the change sets (by sequence) first sent in that message.
    var batch: UUID?
    /// A batch marker: the sequence numbers of the change sets sent together under `batch`.
    var members: [Int]?
    /// The `modelVersion` of each class the record holds whose version is not 0, by class name.
    var versions: [String: Int] = [:]
    /// A pending record's chained edits (``CollectionEditChain``): collections left out of `fragments`.
    var chained: [JSON] = []
    /// Kept in memory for a pending change set, never written: its fragments as its change set
    /// keeps them (``CompactFragments``, collections as edits), `fragments` then being empty. A
    /// compaction rebuilds them from it, so a thousand pending appends to a long list do not each
    /// hold the list.
    var compact: CompactFragments?

    init(kind: LogRecord.Kind = .changeSet, root: UUID?, fragments: [SyncFragment], message: String? = nil,
         origin: String = "snapshot", isAtomic: Bool = false) {
        self.kind = kind
        self.root = root
        self.fragments = fragments
        self.message = message
        self.origin = origin
        self.isAtomic = isAtomic
    }

    /// The record's payload bytes. O(size of the fragments).
    func encoded() -> [UInt8] {
        var writer = JSONWriter(sortedKeys: false, capacity: 128 + fragments.count * 160)
        encode(into: &writer)
        return writer.bytes
    }

    /// Writes the record's payload after what `writer` holds (for an appender that reuses one
    /// buffer: no JSON values are built on the way). O(size of the fragments).
    func encode(into writer: inout JSONWriter) {
        writer.append("{")
        var first = true
        func key(_ name: StaticString) {
            writer.writeKey(name, first: first)
            first = false
        }
        if root != nil || (sequence == nil && settled == nil && members == nil) {
            key("root")
            if let root { writer.writeUUID(root) } else { writer.append("null") }
        }
        if origin != "snapshot", sequence == nil || origin != "local" {
            key("origin")
            writer.writeString(origin)
        }
        if isAtomic {  // absent: false
            key("atomic")
            writer.append("true")
        }
        if let message {
            key("message")
            writer.writeString(message)
        }
        if let changeSetID {
            key("id")
            writer.writeUUID(changeSetID)
        }
        if let sequence {
            key("seq")
            writer.write(.int(Int64(sequence)))
        }
        if isCompacted {
            key("compacted")
            writer.append("true")
        }
        if let settled {
            key("settled")
            let parts = settled.map { range in
                range.count == 1 ? JSON.int(Int64(range.lowerBound)) : .array([.int(Int64(range.lowerBound)), .int(Int64(range.upperBound))])
            }
            writer.write(parts.count == 1 && settled[0].count == 1 ? parts[0] : .array(parts))
        }
        if let batch {
            key("batch")
            writer.writeUUID(batch)
        }
        if let members {
            key("members")
            writer.append("[")
            for (index, member) in members.enumerated() {
                if index > 0 { writer.append(",") }
                writer.write(.int(Int64(member)))
            }
            writer.append("]")
        }
        if !versions.isEmpty {
            key("versions")
            writer.append("{")
            for (index, (name, version)) in versions.enumerated() {
                if index > 0 { writer.append(",") }
                writer.writeString(name)
                writer.append(":")
                writer.write(.int(Int64(version)))
            }
            writer.append("}")
        }
        if !chained.isEmpty {
            key("chain")
            writer.write(.array(chained))
        }
        key("fragments")
        SyncFragment.write(fragments, into: &writer)
        writer.append("}")
    }

    /// Decodes the payload of the record at `offset`. Throws ``FragmentLogError/badRecord(offset:reason:)``
    /// for anything that is not an entry. O(payload size).
    init(kind: LogRecord.Kind, payload: UnsafeRawBufferPointer, offset: Int) throws(FragmentLogError) {
        let json: JSON
        do { json = try JSON(parsing: payload) } catch {
            throw .badRecord(offset: offset, reason: "\(error)")
        }
        guard case .array(let items)? = json["fragments"] else {
            throw .badRecord(offset: offset, reason: "no fragments")
        }
        var fragments: [SyncFragment] = []
        fragments.reserveCapacity(items.count)
        for item in items {
            do { fragments.append(try SyncFragment(json: item)) } catch {
                throw .badRecord(offset: offset, reason: "\(error)")
            }
        }
        self.init(kind: kind, root: json["root"]?.stringValue.flatMap(UUID.init(wireString:)), fragments: fragments,
                  message: json["message"]?.stringValue, origin: json["origin"]?.stringValue ?? (json["seq"] != nil ? "local" : "snapshot"),
                  isAtomic: json["atomic"]?.boolValue ?? false)
        changeSetID = json["id"]?.stringValue.flatMap(UUID.init(wireString:))
        sequence = json["seq"]?.int64Value.map(Int.init)
        chained = json["chain"]?.arrayValue ?? []
        isCompacted = json["compacted"]?.boolValue ?? false
        settled = try json["settled"].map { value throws(FragmentLogError) in try Self.ranges(in: value, offset: offset) }
        batch = json["batch"]?.stringValue.flatMap(UUID.init(wireString:))
        members = json["members"]?.arrayValue.map { $0.compactMap { $0.int64Value.map(Int.init) } }
        versions = Self.versions(from: json["versions"] ?? .null)
    }

    /// The sequence numbers a marker's `"settled"` member names: a number, or an array of numbers
    /// and `[from, to]` ranges (from ≤ to).
    private static func ranges(in json: JSON, offset: Int) throws(FragmentLogError) -> [ClosedRange<Int>] {
        func number(_ json: JSON) -> Int? { json.int64Value.flatMap { Int(exactly: $0) } }
        if let single = number(json) { return [single...single] }
        guard case .array(let parts) = json else { throw .badRecord(offset: offset, reason: "invalid settled") }
        var ranges: [ClosedRange<Int>] = []
        ranges.reserveCapacity(parts.count)
        for part in parts {
            if let single = number(part) {
                ranges.append(single...single)
            } else if case .array(let bounds) = part, bounds.count == 2, let from = number(bounds[0]), let to = number(bounds[1]), from <= to {
                ranges.append(from...to)
            } else {
                throw .badRecord(offset: offset, reason: "invalid settled")
            }
        }
        return ranges
    }

    /// `sequences` as ranges of consecutive numbers, in ascending order. O(n log n).
    static func ranges(of sequences: [Int]) -> [ClosedRange<Int>] {
        var ranges: [ClosedRange<Int>] = []
        for sequence in sequences.sorted() {
            if let last = ranges.last, last.upperBound + 1 >= sequence {
                ranges[ranges.count - 1] = last.lowerBound...max(last.upperBound, sequence)
            } else {
                ranges.append(sequence...sequence)
            }
        }
        return ranges
    }

    /// The versions a record's `"versions"` member names (members that are not integers are ignored).
    static func versions(from json: JSON) -> [String: Int] {
        guard case .object(let members) = json else { return [:] }
        return members.compactMapValues { $0.int64Value.map(Int.init) }
    }
}
