/// One edit of a `TextDocument` as it travels between replicas (Protocol §8.21): an insertion of a
/// run of characters with consecutive ids between two neighbours, or a deletion of a run of ids.
/// Operations are idempotent (applying one twice changes nothing) and commute once each one's
/// dependencies are there, so replicas that applied the same set hold the same text.
public enum TextOperation: Hashable, Sendable {
    /// `text` typed by `id.replica`, its characters numbered from `id.seq`, placed after `left`
    /// (nil: the start) and before `right` (nil: the end), its neighbours when it was typed.
    case insert(id: TextID, text: String, left: TextID?, right: TextID?)
    /// The characters `id.seq ..< id.seq + count` of `id.replica` were deleted.
    case delete(id: TextID, count: Int)

    /// Appends `operation` to `operations`, merged into the last one when it continues it (typing
    /// forward, or deleting a run of consecutive ids), so a burst of keystrokes is one operation.
    public static func append(_ operation: TextOperation, to operations: inout [TextOperation]) {
        guard let last = operations.last else {
            operations.append(operation)
            return
        }
        switch (last, operation) {
        case (.insert(let id, let text, let left, let right), .insert(let nextID, let nextText, let nextLeft, let nextRight)):
            let count = text.unicodeScalars.count
            if nextID.replica == id.replica, nextID.seq == id.seq + count, nextRight == right,
               nextLeft == TextID(replica: id.replica, seq: id.seq + count - 1) {
                operations[operations.count - 1] = .insert(id: id, text: text + nextText, left: left, right: right)
                return
            }
        case (.delete(let id, let count), .delete(let nextID, let nextCount)):
            if nextID.replica == id.replica, nextID.seq == id.seq + count {
                operations[operations.count - 1] = .delete(id: id, count: count + nextCount)
                return
            }
        default:
            break
        }
        operations.append(operation)
    }

    /// The wire form of a list of operations: replica names once in `replicas`, then each
    /// insertion as `[replica, seq, "text", leftReplica, leftSeq, rightReplica, rightSeq]` (a
    /// replica index of -1 for no neighbour) and each deletion as `[replica, seq, count]`.
    ///
    /// ```json
    /// {"replicas":["a1","b2"],"ops":[[0,0,"hello",-1,0,-1,0],[1,3,2]]}
    /// ```
    public static func json(_ operations: [TextOperation]) -> JSON {
        var table = ReplicaTable()
        var encoded: [JSON] = []
        encoded.reserveCapacity(operations.count)
        for operation in operations {
            switch operation {
            case .insert(let id, let text, let left, let right):
                encoded.append(.array([
                    .int(table.index(id.replica)), .int(Int64(id.seq)), .string(text),
                    .int(left.map { table.index($0.replica) } ?? -1), .int(Int64(left?.seq ?? 0)),
                    .int(right.map { table.index($0.replica) } ?? -1), .int(Int64(right?.seq ?? 0)),
                ]))
            case .delete(let id, let count):
                encoded.append(.array([.int(table.index(id.replica)), .int(Int64(id.seq)), .int(Int64(count))]))
            }
        }
        return .object(["replicas": .array(table.names.map { .string($0) }), "ops": .array(encoded)])
    }

    /// Decodes ``json(_:)``, checking every member; throws `TextError.malformed` otherwise.
    /// O(operations).
    public static func decode(_ json: JSON) throws(TextError) -> [TextOperation] {
        let names = try ReplicaTable.names(in: json)
        guard case .array(let entries)? = json["ops"] else { throw .malformed("no ops array") }
        var operations: [TextOperation] = []
        operations.reserveCapacity(entries.count)
        for entry in entries {
            guard case .array(let fields) = entry else { throw .malformed("an operation is not an array") }
            let id = try ReplicaTable.id(fields, 0, names)
            if fields.count == 3 {
                guard let id, let count = fields[2].int64Value, count > 0, count <= Int64(Int32.max) else {
                    throw .malformed("a deletion is [replica, seq, count]")
                }
                operations.append(.delete(id: id, count: Int(count)))
            } else if fields.count == 7, case .string(let text) = fields[2], !text.isEmpty, let id {
                operations.append(.insert(id: id, text: text, left: try ReplicaTable.id(fields, 3, names),
                                          right: try ReplicaTable.id(fields, 5, names)))
            } else {
                throw .malformed("an insertion is [replica, seq, text, leftReplica, leftSeq, rightReplica, rightSeq]")
            }
        }
        return operations
    }
}

/// Replica names of an encoded list, each once, in order of first use.
struct ReplicaTable {
    private(set) var names: [String] = []
    private var indices: [String: Int64] = [:]

    mutating func index(_ name: String) -> Int64 {
        if let index = indices[name] { return index }
        let index = Int64(names.count)
        names.append(name)
        indices[name] = index
        return index
    }

    /// The `replicas` member: valid names (`TextID.isValidReplica`), none twice.
    static func names(in json: JSON) throws(TextError) -> [String] {
        guard case .array(let values)? = json["replicas"] else { throw .malformed("no replicas array") }
        var names: [String] = []
        names.reserveCapacity(values.count)
        for value in values {
            guard case .string(let name) = value, TextID.isValidReplica(name) else {
                throw .malformed("a replica name is 1–64 characters of A-Z a-z 0-9 _ -")
            }
            names.append(name)
        }
        guard Set(names).count == names.count else { throw .malformed("a replica is listed twice") }
        return names
    }

    /// The id at `fields[at]` (replica index) and `fields[at + 1]` (seq); nil for index -1.
    static func id(_ fields: [JSON], _ at: Int, _ names: [String]) throws(TextError) -> TextID? {
        guard fields.count > at + 1, let replica = fields[at].int64Value, let seq = fields[at + 1].int64Value,
              seq >= 0, seq <= Int64(Int32.max), replica >= -1, replica < Int64(names.count)
        else { throw .malformed("a character id is a replica index and a seq") }
        return replica < 0 ? nil : TextID(replica: names[Int(replica)], seq: Int(seq))
    }
}
