import Contrail

/// Where two scope states (in `Scope.stateJSON()`'s shape) differ, one line per difference.
enum StateDifference {
    /// `state` (`Scope.stateJSON()`'s shape) with every property whose value is `null` left out.
    static func withoutNulls(_ state: JSON) -> JSON {
        guard case .object(var members) = state, case .object(let objects)? = members["objects"] else { return state }
        members["objects"] = .object(objects.mapValues { object in
            guard case .object(var fields) = object, case .object(let properties)? = fields["properties"] else { return object }
            fields["properties"] = .object(properties.filter { $0.value != .null })
            return .object(fields)
        })
        return .object(members)
    }

    static func describe(_ mine: JSON, _ theirs: JSON) -> String {
        var lines: [String] = []
        if mine["root"] != theirs["root"] { lines.append("root: \(mine["root"] ?? .null) vs \(theirs["root"] ?? .null)") }
        let left = mine["objects"]?.objectValue ?? [:]
        let right = theirs["objects"]?.objectValue ?? [:]
        for uuid in Set(left.keys).union(right.keys).sorted() {
            guard let a = left[uuid], let b = right[uuid] else {
                let only = left[uuid] ?? right[uuid]
                lines.append("\(uuid) (\(only?["clsName"] ?? .null)): only in \(left[uuid] == nil ? "the reference" : "this replica")")
                continue
            }
            let keys = Set((a["properties"]?.objectValue ?? [:]).keys).union((b["properties"]?.objectValue ?? [:]).keys)
            for key in keys.sorted() where a["properties"]?[key] != b["properties"]?[key] {
                lines.append("\(uuid).\(key): \(a["properties"]?[key].map { "\($0)" } ?? "none") vs \(b["properties"]?[key].map { "\($0)" } ?? "none")")
            }
        }
        return lines.prefix(20).joined(separator: "\n")
    }

    /// Where a replica's state (`replica`) disagrees with the server's (`server`): the same objects,
    /// and every value the server holds equal. Nil when they agree.
    static func serverMismatch(_ server: JSON, _ replica: JSON) -> String? {
        var lines: [String] = []
        if server["root"] != replica["root"] { lines.append("root: \(server["root"] ?? .null) vs \(replica["root"] ?? .null)") }
        let held = server["objects"]?.objectValue ?? [:]
        let shown = replica["objects"]?.objectValue ?? [:]
        for uuid in Set(held.keys).symmetricDifference(shown.keys).sorted() {
            lines.append("\(uuid): only \(held[uuid] == nil ? "the replica" : "the server") has it")
        }
        for (uuid, object) in held.sorted(by: { $0.key < $1.key }) {
            guard let mine = shown[uuid] else { continue }
            for (key, value) in (object["properties"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key })
            where mine["properties"]?[key] != value {
                lines.append("\(uuid).\(key): server \(value) vs replica \(mine["properties"]?[key].map { "\($0)" } ?? "none")")
            }
        }
        return lines.isEmpty ? nil : lines.prefix(20).joined(separator: "\n")
    }
}
