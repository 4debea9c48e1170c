import Foundation

/// One record of a ``FragmentLog``, decoded: a snapshot, a change set, or a settle marker.
///
/// The payload is JSON: `{"root", "origin"?, "atomic"?, "message"?, "id"?, "seq"?, "compacted"?,
/// "settled"?, "batch"?, "members"?, "versions"?, "fragments"}`, the fragments last so that a reader knows what the record is before
/// it reaches them (`LogReplay` relies on that; this type decodes any key order). Encoding runs on the log's writer thread, so the type is `Sendable`.
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
    /// A marker: the change set with this sequence number has settled.
    var settled: Int?
    /// The coalesced message (its id) a pending change set was sent in; on a marker record, with
    /// `members`: the change sets (by sequence) first sent in that message.
    var batch: UUID?
    /// A batch marker: the sequence numbers of the change sets sent together under `batch`.
    var members: [Int]?
    /// The `modelVersion` of each class the record holds whose version is not 0, by class name.
    var versions: [String: Int] = [:]

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
        writer.writeKey("root", first: true)
        if let root { writer.writeUUID(root) } else { writer.append("null") }
        if origin != "snapshot" {
            writer.writeKey("origin")
            writer.writeString(origin)
            if isAtomic {  // absent: false
                writer.writeKey("atomic")
                writer.append("true")
            }
        }
        if let message {
            writer.writeKey("message")
            writer.writeString(message)
        }
        if let changeSetID {
            writer.writeKey("id")
            writer.writeUUID(changeSetID)
        }
        if let sequence {
            writer.writeKey("seq")
            writer.write(.int(Int64(sequence)))
        }
        if isCompacted {
            writer.writeKey("compacted")
            writer.append("true")
        }
        if let settled {
            writer.writeKey("settled")
            writer.write(.int(Int64(settled)))
        }
        if let batch {
            writer.writeKey("batch")
            writer.writeUUID(batch)
        }
        if let members {
            writer.writeKey("members")
            writer.append("[")
            for (index, member) in members.enumerated() {
                if index > 0 { writer.append(",") }
                writer.write(.int(Int64(member)))
            }
            writer.append("]")
        }
        if !versions.isEmpty {
            writer.writeKey("versions")
            writer.append("{")
            for (index, (name, version)) in versions.enumerated() {
                if index > 0 { writer.append(",") }
                writer.writeString(name)
                writer.append(":")
                writer.write(.int(Int64(version)))
            }
            writer.append("}")
        }
        writer.writeKey("fragments")
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
                  message: json["message"]?.stringValue, origin: json["origin"]?.stringValue ?? "snapshot",
                  isAtomic: json["atomic"]?.boolValue ?? false)
        changeSetID = json["id"]?.stringValue.flatMap(UUID.init(wireString:))
        sequence = json["seq"]?.int64Value.map(Int.init)
        isCompacted = json["compacted"]?.boolValue ?? false
        settled = json["settled"]?.int64Value.map(Int.init)
        batch = json["batch"]?.stringValue.flatMap(UUID.init(wireString:))
        members = json["members"]?.arrayValue.map { $0.compactMap { $0.int64Value.map(Int.init) } }
        versions = Self.versions(from: json["versions"] ?? .null)
    }

    /// The versions a record's `"versions"` member names (members that are not integers are ignored).
    static func versions(from json: JSON) -> [String: Int] {
        guard case .object(let members) = json else { return [:] }
        return members.compactMapValues { $0.int64Value.map(Int.init) }
    }
}
