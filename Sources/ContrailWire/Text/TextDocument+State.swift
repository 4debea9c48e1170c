/// The encoded state of a `TextDocument` (Protocol §8.21): its runs in document order, each as
/// `[replica, seq, "text", leftReplica, leftSeq, rightReplica, rightSeq]`, a deleted run with its
/// length instead of its text. Deleted text is not stored.
extension TextDocument {
    /// The whole document: `{"replicas":[…],"runs":[…]}`. O(runs).
    public var stateJSON: JSON {
        var table = ReplicaTable()
        var runs: [JSON] = []
        for leaf in leaves {
            for run in leaf.runs {
                let agent = Int(run.agent)
                let body: JSON = run.deleted
                    ? .int(Int64(run.length))
                    : .string(String(String.UnicodeScalarView(content[agent][Int(run.seq)..<Int(run.seq + run.length)])))
                runs.append(.array([
                    .int(table.index(names[agent])), .int(Int64(run.seq)), body,
                    .int(run.leftAgent < 0 ? -1 : table.index(names[Int(run.leftAgent)])), .int(Int64(run.leftSeq)),
                    .int(run.rightAgent < 0 ? -1 : table.index(names[Int(run.rightAgent)])), .int(Int64(run.rightSeq)),
                ]))
            }
        }
        return .object(["replicas": .array(table.names.map { .string($0) }), "runs": .array(runs)])
    }

    /// A document typing as `replica`, holding the encoded `state`: every character once, every
    /// replica's sequence numbers without a gap, every origin a character of the state; throws
    /// `TextError.malformed` otherwise. O(characters).
    public convenience init(replica: String, state: JSON) throws(TextError) {
        self.init(replica: replica)
        let names = try ReplicaTable.names(in: state)
        guard case .array(let entries)? = state["runs"] else { throw .malformed("no runs array") }
        let agents = names.map { agent(named: $0) }
        var runs: [TextRun] = []
        runs.reserveCapacity(entries.count)
        var texts: [[Unicode.Scalar]?] = []
        texts.reserveCapacity(entries.count)
        var lengths = Array(repeating: 0, count: self.names.count)
        var total = 0
        for entry in entries {
            guard case .array(let fields) = entry, fields.count == 7, let id = try ReplicaTable.id(fields, 0, names) else {
                throw .malformed("a run is [replica, seq, text or count, leftReplica, leftSeq, rightReplica, rightSeq]")
            }
            let left = try ReplicaTable.id(fields, 3, names)
            let right = try ReplicaTable.id(fields, 5, names)
            var length = 0
            var text: [Unicode.Scalar]?
            switch fields[2] {
            case .string(let string):
                text = Array(string.unicodeScalars)
                length = text?.count ?? 0
            default:
                guard let count = fields[2].int64Value, count > 0, count <= Int64(Int32.max) else {
                    throw .malformed("a deleted run's length is a positive integer")
                }
                length = Int(count)
            }
            total += length
            guard length > 0, id.seq + length <= Self.maxCharacters, total <= Self.maxCharacters else {
                throw .malformed("an empty run, or more than \(Self.maxCharacters) characters")
            }
            let agent = agents[names.firstIndex(of: id.replica) ?? 0]
            func key(_ id: TextID?) -> (Int32, Int32) {
                guard let id, let index = names.firstIndex(of: id.replica) else { return (-1, 0) }
                return (agents[index], Int32(id.seq))
            }
            let (leftAgent, leftSeq) = key(left)
            let (rightAgent, rightSeq) = key(right)
            runs.append(TextRun(agent: agent, seq: Int32(id.seq), length: Int32(length), deleted: text == nil,
                                leftAgent: leftAgent, leftSeq: leftSeq, rightAgent: rightAgent, rightSeq: rightSeq))
            texts.append(text)
            lengths[Int(agent)] = max(lengths[Int(agent)], id.seq + length)
        }
        // Every character once, without gaps; deleted characters get a placeholder.
        for (agent, length) in lengths.enumerated() {
            content[agent] = Array(repeating: Self.unknownScalar, count: length)
            owner[agent] = Array(repeating: -1, count: length)
        }
        leaves = []
        leavesByID = []
        let chunk = Self.maxRuns / 2
        var start = 0
        while start < runs.count || leaves.isEmpty {
            let slice = Array(runs[start..<min(start + chunk, runs.count)])
            let leaf = TextLeaf(runs: slice, id: Int32(leaves.count), index: leaves.count)
            for (offset, run) in slice.enumerated() {
                let agent = Int(run.agent)
                for seq in Int(run.seq)..<Int(run.seq + run.length) {
                    guard owner[agent][seq] < 0 else { throw .malformed("a character is listed twice") }
                    owner[agent][seq] = leaf.id
                }
                if let text = texts[start + offset] {
                    content[agent].replaceSubrange(Int(run.seq)..<Int(run.seq + run.length), with: text)
                }
            }
            leaves.append(leaf)
            leavesByID.append(leaf)
            start += chunk
        }
        for agentOwners in owner where agentOwners.contains(-1) { throw .malformed("a replica's characters have a gap") }
        for run in runs {
            for (agent, seq) in [(run.leftAgent, run.leftSeq), (run.rightAgent, run.rightSeq)] where agent >= 0 {
                guard Int(seq) < owner[Int(agent)].count else { throw .malformed("an origin is not a character of the state") }
            }
        }
        setCount(leaves.reduce(0) { $0 + $1.visible })
    }
}
