import Foundation

/// The encoded state of a `TextDocument` (Protocol §8.21), version 1: the visible text once, as a
/// string, and a table of runs in document order, as base64 of varints, in which a run usually costs
/// 2–4 bytes: its id, length and origins are mostly implied by its neighbours. A deleted run is
/// its id, length and origins: deleted text is not stored.
extension TextDocument {
    /// The version byte that starts the run table.
    static let stateVersion: UInt8 = 1

    /// The whole document: `{"replicas":[names],"runs":"base64","text":"visible text"}`. Each run
    /// is a header byte (bit 0: deleted; bits 1–2: its id continues the previous run's (0), is the
    /// previous run's replica at a seq delta (1) or is explicit (2); bits 3–4: its left origin is
    /// the previous run's last character or the start (0), its own seq - 1 (1), the start (2) or
    /// explicit (3); bits 5–6: its right origin is the next run's first character or the end (0),
    /// the next run's right origin (1), the end (2) or explicit (3)), its length, then the fields
    /// its codes need: the seq delta (zigzag) or the replica index and seq, the left origin's
    /// replica index and seq, the right origin's. Runs that continue each other are written as one
    /// and every code is the first that fits, so two documents with the same characters encode to
    /// the same bytes, whatever their histories. O(runs + characters).
    public var stateJSON: JSON {
        var table = ReplicaTable()
        var bytes = TextStateBytes()
        // Runs that continue each other are one (how a document holds them depends on its history).
        var all: [TextRun] = []
        for leaf in leaves {
            for run in leaf.runs {
                if let last = all.last, last.isContinued(by: run) { all[all.count - 1].length += run.length } else { all.append(run) }
            }
        }
        bytes.write(byte: Self.stateVersion)
        bytes.write(varint: all.count)
        for (index, run) in all.enumerated() {
            let previous = index > 0 ? all[index - 1] : nil
            let next = index + 1 < all.count ? all[index + 1] : nil
            var fields: [Int] = []
            var header: UInt8 = run.deleted ? 1 : 0
            if let previous, previous.agent == run.agent {
                let delta = Int(run.seq) - Int(previous.seq + previous.length)
                if delta != 0 {
                    header |= 1 << 1
                    fields.append(delta)
                }
            } else {
                header |= 2 << 1
                fields += [Int(table.index(names[Int(run.agent)])), Int(run.seq)]
            }
            let left = (run.leftAgent, run.leftSeq)
            if left == (previous.map { ($0.agent, $0.seq + $0.length - 1) } ?? (-1, 0)) {
            } else if left == (run.agent, run.seq - 1) {
                header |= 1 << 3
            } else if run.leftAgent < 0 {
                header |= 2 << 3
            } else {
                header |= 3 << 3
                fields += [Int(table.index(names[Int(run.leftAgent)])), Int(run.leftSeq)]
            }
            let right = (run.rightAgent, run.rightSeq)
            if right == (next.map { ($0.agent, $0.seq) } ?? (-1, 0)) {
            } else if let next, right == (next.rightAgent, next.rightSeq) {
                header |= 1 << 5
            } else if run.rightAgent < 0 {
                header |= 2 << 5
            } else {
                header |= 3 << 5
                fields += [Int(table.index(names[Int(run.rightAgent)])), Int(run.rightSeq)]
            }
            bytes.write(byte: header)
            bytes.write(varint: Int(run.length))
            for (offset, field) in fields.enumerated() {
                if offset == 0, header & 0b110 == 1 << 1 { bytes.write(signed: field) } else { bytes.write(varint: field) }
            }
        }
        return .object([
            "replicas": .array(table.names.map { .string($0) }),
            "runs": .string(Data(bytes.bytes).base64EncodedString()),
            "text": .string(text),
        ])
    }

    /// A document typing as `replica`, holding the encoded `state`: every character once, every
    /// replica's sequence numbers without a gap, every origin a character of the state, the text
    /// as long as the visible runs; throws `TextError.malformed` otherwise (at most
    /// `maxCharacters` characters are read). O(characters).
    public convenience init(replica: String, state: JSON) throws(TextError) {
        self.init(replica: replica)
        let names = try ReplicaTable.names(in: state)
        guard case .string(let encoded)? = state["runs"], case .string(let visible)? = state["text"],
              let data = Data(base64Encoded: encoded)
        else { throw .malformed("a text state is {replicas, runs: base64, text}") }
        var bytes = TextStateBytes(reading: Array(data))
        guard try bytes.readByte() == Self.stateVersion else { throw .malformed("an unknown text state version") }
        let limit = Self.maxCharacters
        // A run takes at least two bytes: a count beyond that is refused before anything is reserved.
        let runCount = try bytes.readVarint(max: min(limit, data.count / 2))
        let agents = names.map { agent(named: $0) }
        func id(_ bytes: inout TextStateBytes) throws(TextError) -> (Int32, Int32) {
            let index = try bytes.readVarint(max: names.count - 1)
            return (agents[index], Int32(try bytes.readVarint(max: limit - 1)))
        }
        let scalars = Array(visible.unicodeScalars)
        var runs: [TextRun] = []
        runs.reserveCapacity(runCount)
        var rightCodes: [UInt8] = []
        rightCodes.reserveCapacity(runCount)
        var total = 0
        for _ in 0..<runCount {
            let header = try bytes.readByte()
            guard header & 0x80 == 0, header & 0b110 != 0b110 else { throw .malformed("a text state's run header is unknown") }
            let length = try bytes.readVarint(max: limit)
            total += length
            guard length > 0, total <= limit else { throw .malformed("an empty run, or more than \(limit) characters") }
            let previous = runs.last
            let agent: Int32
            let seq: Int
            switch (header >> 1) & 3 {
            case 0, 1:
                guard let previous else { throw .malformed("the first run of a text state names no replica") }
                agent = previous.agent
                seq = Int(previous.seq + previous.length) + ((header >> 1) & 3 == 1 ? try bytes.readSigned(max: limit) : 0)
            default:
                let explicit = try id(&bytes)
                (agent, seq) = (explicit.0, Int(explicit.1))
            }
            guard seq >= 0, seq + length <= limit else { throw .malformed("a run's seq is out of range") }
            var run = TextRun(agent: agent, seq: Int32(seq), length: Int32(length), deleted: header & 1 == 1,
                              leftAgent: -1, leftSeq: 0, rightAgent: -1, rightSeq: 0)
            switch (header >> 3) & 3 {
            case 0: if let previous { (run.leftAgent, run.leftSeq) = (previous.agent, previous.seq + previous.length - 1) }
            case 1:
                guard seq > 0 else { throw .malformed("the first character of a replica has no previous one") }
                (run.leftAgent, run.leftSeq) = (agent, Int32(seq - 1))
            case 2: break
            default: (run.leftAgent, run.leftSeq) = try id(&bytes)
            }
            let rightCode = (header >> 5) & 3
            if rightCode == 3 { (run.rightAgent, run.rightSeq) = try id(&bytes) }
            rightCodes.append(rightCode)
            runs.append(run)
        }
        guard bytes.isAtEnd else { throw .malformed("bytes after a text state's runs") }
        // Right origins implied by the next run, from the last run back.
        for index in runs.indices.reversed() {
            let next = index + 1 < runs.count ? runs[index + 1] : nil
            switch rightCodes[index] {
            case 0: if let next { (runs[index].rightAgent, runs[index].rightSeq) = (next.agent, next.seq) }
            case 1:
                guard let next else { throw .malformed("the last run cannot take the next run's right origin") }
                (runs[index].rightAgent, runs[index].rightSeq) = (next.rightAgent, next.rightSeq)
            default: break
            }
        }
        guard runs.reduce(0, { $0 + $1.visibleLength }) == scalars.count else {
            throw .malformed("a text state's text is not as long as its visible runs")
        }
        // Every character once, without gaps: checked per run, so a deleted run costs nothing per character.
        leaves = []
        leavesByID = []
        let chunk = Self.maxRuns / 2
        var start = 0
        var textStart = 0
        var placed = Array(repeating: [(seq: Int32, length: Int32, leaf: Int32)](), count: self.names.count)
        while start < runs.count || leaves.isEmpty {
            let slice = Array(runs[start..<min(start + chunk, runs.count)])
            let visible = slice.reduce(0) { $0 + $1.visibleLength }
            let leaf = TextLeaf(runs: slice, id: Int32(leaves.count), index: leaves.count,
                                text: Array(scalars[textStart..<(textStart + visible)]))
            textStart += visible
            for run in slice { placed[Int(run.agent)].append((run.seq, run.length, leaf.id)) }
            leaves.append(leaf)
            leavesByID.append(leaf)
            start += chunk
        }
        for (agent, unsorted) in placed.enumerated() {
            var next: Int32 = 0
            var pairs: [(start: Int32, leaf: Int32)] = []
            for item in unsorted.sorted(by: { $0.seq < $1.seq }) {
                guard item.seq == next else { throw .malformed(item.seq < next ? "a character is listed twice" : "a replica's characters have a gap") }
                if pairs.last?.leaf != item.leaf { pairs.append((item.seq, item.leaf)) }
                next += item.length
            }
            owners[agent] = pairs
            lengths[agent] = Int(next)
        }
        for run in runs {
            for (agent, seq) in [(run.leftAgent, run.leftSeq), (run.rightAgent, run.rightSeq)] where agent >= 0 {
                guard Int(seq) < lengths[Int(agent)] else { throw .malformed("an origin is not a character of the state") }
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
            var offset = 0
            for run in leaf.runs {
                let agent = Int(run.agent)
                let length = Int(run.length)
                // A deleted character's text is not in the state: a placeholder, deleted again below.
                let scalars = run.deleted ? Array(repeating: Self.unknownScalar, count: length) : Array(leaf.text[offset..<(offset + length)])
                if !run.deleted { offset += length }
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
