/// The encoded state of a `TextDocument` (Protocol §8.21): its runs in document order, each as
/// `[replica, seq, "text", leftReplica, leftSeq, rightReplica, rightSeq]`, a deleted run with its
/// length instead of its text. Deleted text is not stored.
extension TextDocument {
    /// The whole document: `{"replicas":[…],"runs":[…]}`. A run's origins are left out when they
    /// are its neighbours in the document (the left one the previous run's last character, the right
    /// one the next run's first character, or the end): `[replica, seq, text]` when both are,
    /// `[replica, seq, text, leftReplica, leftSeq]` when only the right one is. O(runs).
    public var stateJSON: JSON {
        var table = ReplicaTable()
        var runs: [JSON] = []
        let all = leaves.flatMap(\.runs)
        for (index, run) in all.enumerated() {
            let agent = Int(run.agent)
            let body: JSON = run.deleted
                ? .int(Int64(run.length))
                : .string(String(String.UnicodeScalarView(content[agent][Int(run.seq)..<Int(run.seq + run.length)])))
            var fields: [JSON] = [.int(table.index(names[agent])), .int(Int64(run.seq)), body]
            let previous = index > 0 ? all[index - 1] : nil
            let next = index + 1 < all.count ? all[index + 1] : nil
            let impliedLeft = previous.map { ($0.agent, $0.seq + $0.length - 1) } ?? (-1, 0)
            let impliedRight = next.map { ($0.agent, $0.seq) } ?? (-1, 0)
            let leftImplied = impliedLeft == (run.leftAgent, run.leftSeq)
            let rightImplied = impliedRight == (run.rightAgent, run.rightSeq)
            if !leftImplied || !rightImplied {
                fields += [.int(run.leftAgent < 0 ? -1 : table.index(names[Int(run.leftAgent)])), .int(Int64(run.leftSeq))]
            }
            if !rightImplied {
                fields += [.int(run.rightAgent < 0 ? -1 : table.index(names[Int(run.rightAgent)])), .int(Int64(run.rightSeq))]
            }
            runs.append(.array(fields))
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
        var implied: [(left: Bool, right: Bool)] = []
        for entry in entries {
            guard case .array(let fields) = entry, [3, 5, 7].contains(fields.count), let id = try ReplicaTable.id(fields, 0, names) else {
                throw .malformed("a run is [replica, seq, text or count(, leftReplica, leftSeq(, rightReplica, rightSeq))]")
            }
            let left = fields.count >= 5 ? try ReplicaTable.id(fields, 3, names) : nil
            let right = fields.count == 7 ? try ReplicaTable.id(fields, 5, names) : nil
            implied.append((left: fields.count < 5, right: fields.count < 7))
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
        // Origins left out are the neighbours in the document.
        for index in runs.indices {
            if implied[index].left, index > 0 {
                (runs[index].leftAgent, runs[index].leftSeq) = (runs[index - 1].agent, runs[index - 1].seq + runs[index - 1].length - 1)
            }
            if implied[index].right, index + 1 < runs.count {
                (runs[index].rightAgent, runs[index].rightSeq) = (runs[index + 1].agent, runs[index + 1].seq)
            }
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

extension TextDocument {
    /// Replaces the visible text with `newText` as this replica: keeps the longest common prefix
    /// and suffix, deletes the middle and inserts the new middle. Returns the operations. O(n).
    public func replace(with newText: String) throws(TextError) -> [TextOperation] {
        let old = Array(text.unicodeScalars)
        let new = Array(newText.unicodeScalars)
        var prefix = 0
        while prefix < old.count, prefix < new.count, old[prefix] == new[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < old.count - prefix, suffix < new.count - prefix, old[old.count - 1 - suffix] == new[new.count - 1 - suffix] {
            suffix += 1
        }
        var operations = try delete(prefix..<(old.count - suffix))
        let middle = String(String.UnicodeScalarView(new[prefix..<(new.count - suffix)]))
        if let insert = try insert(middle, at: prefix) { operations.append(insert) }
        return operations
    }
}

extension TextDocument {
    /// Merges an encoded state into this document, as if every operation that made it had been
    /// applied here: characters this document lacks are integrated (each once its origins and its
    /// replica's earlier characters are here), deletions are applied, and what only this document
    /// holds stays. Returns what changed. Characters deleted in `state` and unknown here are kept
    /// as deleted placeholders. O(runs × 64 + characters).
    @discardableResult
    public func merge(state: JSON) throws(TextError) -> [TextChange] {
        let incoming = try TextDocument(replica: replica, state: state)
        var waiting: [TextID: [Int]] = [:]
        var ready: [Int] = []
        var runs: [(id: TextID, text: String, left: TextID?, right: TextID?, deleted: Bool, count: Int)] = []
        for leaf in incoming.leaves {
            for run in leaf.runs {
                let agent = Int(run.agent)
                let scalars = incoming.content[agent][Int(run.seq)..<Int(run.seq + run.length)]
                runs.append((TextID(replica: incoming.names[agent], seq: Int(run.seq)), String(String.UnicodeScalarView(scalars)),
                             run.leftAgent < 0 ? nil : TextID(replica: incoming.names[Int(run.leftAgent)], seq: Int(run.leftSeq)),
                             run.rightAgent < 0 ? nil : TextID(replica: incoming.names[Int(run.rightAgent)], seq: Int(run.rightSeq)),
                             run.deleted, Int(run.length)))
            }
        }
        var applied = Set<TextID>()
        func missing(_ index: Int) -> TextID? {
            let run = runs[index]
            let previous = run.id.seq > 0 ? TextID(replica: run.id.replica, seq: run.id.seq - 1) : nil
            for dependency in [previous, run.left, run.right] {
                guard let dependency else { continue }
                if !contains(dependency) { return dependency }
            }
            return nil
        }
        for index in runs.indices {
            if let dependency = missing(index) { waiting[dependency, default: []].append(index) } else { ready.append(index) }
        }
        var changes: [TextChange] = []
        while let index = ready.popLast() {
            let run = runs[index]
            guard applied.insert(run.id).inserted else { continue }
            changes += try apply(.insert(id: run.id, text: run.text, left: run.left, right: run.right))
            // Wake the runs waiting for a character of this one.
            for seq in run.id.seq..<(run.id.seq + run.count) {
                guard let woken = waiting.removeValue(forKey: TextID(replica: run.id.replica, seq: seq)) else { continue }
                for other in woken {
                    if let dependency = missing(other) { waiting[dependency, default: []].append(other) } else { ready.append(other) }
                }
            }
        }
        guard waiting.isEmpty else {
            let first = waiting.keys.first ?? TextID(replica: replica, seq: 0)
            throw .unknownCharacter(replica: first.replica, seq: first.seq)
        }
        for run in runs where run.deleted { changes += try apply(.delete(id: run.id, count: run.count)) }
        return changes
    }
}
