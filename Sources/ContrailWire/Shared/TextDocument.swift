import ContrailSupport

/// Collaborative plain text: a sequence CRDT (Protocol §8.21) in which every character has an id
/// (`TextID`) and the ids of its neighbours when it was typed (its left and right origins). An
/// insertion is placed among concurrent ones by FugueMax's rule (YjsMod in Gentle's reference
/// CRDTs): concurrent runs typed at one spot never interleave, whether typed forwards or backwards,
/// and replicas that applied the same operations, in any causal order, hold the same text.
///
/// Characters typed forward in one go are one run (`TextRun`), so a paragraph costs a few dozen
/// bytes, not one record per character; runs sit in leaves of at most 64, each with its visible
/// length, so finding a position skips whole leaves. A deleted run keeps its ids and origins (other
/// replicas' insertions may be anchored to it) but no text: a deleted run costs its run header,
/// whatever its length, in memory and in the encoded state (the compact encoding of §8.21; nothing
/// is collected). Each leaf holds its visible characters; where each replica's characters are is
/// kept per run, not per character.
///
/// ```swift
/// let a = TextDocument(replica: "a")
/// let b = TextDocument(replica: "b")
/// let hello = try a.insert("hello", at: 0)!
/// _ = try b.apply(hello)
/// let world = try b.insert(" world", at: 5)!
/// _ = try a.apply(world)          // [.insert(position: 5, text: " world")]
/// print(a.text == b.text)         // true
/// ```
///
/// Complexity: a local edit costs O(leaves + 64) in the worst case and O(64) near the previous
/// edit; a remote insertion O(64 + concurrent runs at its spot) plus the position it reports, O(leaves).
/// Not thread-safe: one owner (the main actor, a scope actor) uses it at a time.
public final class TextDocument {
    static let maxRuns = 64
    static let initialReplica = "0"
    /// The most characters (deleted ones included) a decoded state may hold: 16 Mi.
    public static let maxCharacters = 1 << 24

    /// This replica's name: the `replica` of the characters it types.
    public let replica: String
    /// The number of visible characters (Unicode scalars).
    public private(set) var count = 0

    var names: [String] = []
    var agentIndex: [String: Int32] = [:]
    /// Per replica: how many characters it typed (its next seq).
    var lengths: [Int] = []
    /// Per replica: the leaves that hold its characters, as (first seq, leaf id) pairs in seq order,
    /// each covering the seqs up to the next pair's. A run stays in one leaf, so this holds about a
    /// pair per run, not an entry per character.
    var owners: [[(start: Int32, leaf: Int32)]] = []
    var leaves: [TextLeaf] = []
    var leavesByID: [TextLeaf] = []
    private var cacheLeaf = 0
    private var cacheVisible = 0
    private var localAgent: Int32 = 0

    /// An empty document typing as `replica` (see `TextID.isValidReplica`; traps otherwise).
    public init(replica: String) {
        precondition(TextID.isValidReplica(replica), "invalid text replica name '\(replica)'")
        self.replica = replica
        let leaf = TextLeaf(runs: [], id: 0, index: 0)
        leaves = [leaf]
        leavesByID = [leaf]
        localAgent = agent(named: replica)
    }

    /// A document holding `text` typed by the reserved replica `"0"`, so that every replica that
    /// starts from the same initial text starts from the same characters (they merge as one).
    public convenience init(replica: String, initialText: String) {
        self.init(replica: replica)
        guard !initialText.isEmpty else { return }
        let scalars = Array(initialText.unicodeScalars)
        let agent = agent(named: Self.initialReplica)
        insertRun(TextRun(agent: agent, seq: 0, length: Int32(scalars.count), deleted: false, leftAgent: -1, leftSeq: 0,
                          rightAgent: -1, rightSeq: 0), leaf: 0, at: 0, scalars: scalars)
    }

    /// A fresh replica name: 22 random characters.
    public static func newReplicaName() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<22).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }

    /// The visible text. O(characters).
    public var text: String {
        var view = String.UnicodeScalarView()
        for leaf in leaves { view.append(contentsOf: leaf.text) }
        return String(view)
    }

    /// The bytes this document's storage holds, by capacity: its leaves with their runs and visible
    /// characters, and where each replica's runs are. A deleted run costs its run header (32 bytes)
    /// and at most one leaf pair, whatever its length. O(leaves + replicas).
    public var memoryFootprint: Int {
        let leafBytes = leaves.reduce(0) {
            $0 + $1.runs.capacity * MemoryLayout<TextRun>.stride + $1.text.capacity * MemoryLayout<Unicode.Scalar>.stride + 64
        }
        let pairs = owners.reduce(0) { $0 + $1.capacity * MemoryLayout<(start: Int32, leaf: Int32)>.stride }
        return leafBytes + pairs + lengths.capacity * MemoryLayout<Int>.stride + names.reduce(0) { $0 + $1.utf8.count + 48 }
    }

    /// How many runs the document holds, how many of them are deleted, and how many characters
    /// those hold (for `contrail bench text`). O(leaves × 64).
    package var runStatistics: (runs: Int, deletedRuns: Int, deletedCharacters: Int) {
        var result = (runs: 0, deletedRuns: 0, deletedCharacters: 0)
        for leaf in leaves {
            result.runs += leaf.runs.count
            for run in leaf.runs where run.deleted {
                result.deletedRuns += 1
                result.deletedCharacters += Int(run.length)
            }
        }
        return result
    }

    // MARK: - Local edits

    /// Inserts `text` at `position` (in Unicode scalars) as this replica; returns the operation
    /// for the other replicas (nil for empty text).
    @discardableResult
    public func insert(_ text: String, at position: Int) throws(TextError) -> TextOperation? {
        guard position >= 0, position <= count else { throw .outOfRange(position: position, count: count) }
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return nil }
        let me = localAgent
        let seq = Int32(lengths[Int(me)])
        let length = Int32(scalars.count)
        var left: (Int32, Int32) = (-1, 0)
        var right: (Int32, Int32) = (-1, 0)
        var leafIndex = 0
        var runIndex = 0
        if position == 0 {
            if let first = leaves[0].runs.first { right = (first.agent, first.seq) }
        } else {
            let (l, r, offset) = locate(visible: position - 1)
            let run = leaves[l].runs[r]
            left = (run.agent, run.seq + Int32(offset))
            leafIndex = l
            runIndex = r + 1
            if Int32(offset) + 1 < run.length {
                right = (run.agent, run.seq + Int32(offset) + 1)
                splitRun(leaf: l, run: r, at: Int32(offset) + 1)
            } else {
                right = runStart(leaf: l, run: r + 1)
                if run.agent == me, run.seq + run.length == seq, !run.deleted, run.rightAgent == right.0, run.rightSeq == right.1 {
                    extendRun(leaf: l, run: r, with: scalars)
                    return operation(seq: seq, text: text, left: left, right: right)
                }
            }
        }
        insertRun(TextRun(agent: me, seq: seq, length: length, deleted: false, leftAgent: left.0, leftSeq: left.1,
                          rightAgent: right.0, rightSeq: right.1), leaf: leafIndex, at: runIndex, scalars: scalars)
        return operation(seq: seq, text: text, left: left, right: right)
    }

    /// Inserts `text` as this replica right before character `id`, deleted or not, after whatever
    /// stands right before it, deleted or not: where an undo types deleted text again, so it keeps its
    /// place among other deleted characters (at a visible position it would go before all of them).
    /// Returns the operation for the other replicas (nil for empty text); throws
    /// `TextError.unknownCharacter` when this text lacks `id`.
    @discardableResult
    public func insert(_ text: String, before id: TextID) throws(TextError) -> TextOperation? {
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return nil }
        guard case (let l, var r, let offset)? = find(id) else { throw .unknownCharacter(replica: id.replica, seq: id.seq) }
        let seq = Int32(lengths[Int(localAgent)])
        let run = leaves[l].runs[r]
        let right = (run.agent, run.seq + Int32(offset))
        var left: (Int32, Int32) = (-1, 0)
        if offset > 0 {
            left = (run.agent, run.seq + Int32(offset) - 1)
            splitRun(leaf: l, run: r, at: Int32(offset))
            r += 1
        } else if r > 0 {
            let before = leaves[l].runs[r - 1]
            left = (before.agent, before.seq + before.length - 1)
        } else if l > 0, let before = leaves[l - 1].runs.last {
            left = (before.agent, before.seq + before.length - 1)
        }
        insertRun(TextRun(agent: localAgent, seq: seq, length: Int32(scalars.count), deleted: false, leftAgent: left.0, leftSeq: left.1,
                          rightAgent: right.0, rightSeq: right.1), leaf: l, at: r, scalars: scalars)
        return operation(seq: seq, text: text, left: left, right: right)
    }

    /// Deletes the visible characters in `range`; returns the operations for the other replicas
    /// (one per run of consecutive ids).
    @discardableResult
    public func delete(_ range: Range<Int>) throws(TextError) -> [TextOperation] {
        guard range.lowerBound >= 0, range.upperBound <= count else {
            throw .outOfRange(position: range.upperBound, count: count)
        }
        var operations: [TextOperation] = []
        var remaining = range.count
        while remaining > 0 {
            var (l, r, offset) = locate(visible: range.lowerBound)
            if offset > 0 {
                splitRun(leaf: l, run: r, at: Int32(offset))
                r += 1
            }
            let run = leaves[l].runs[r]
            let taken = min(remaining, Int(run.length))
            if taken < Int(run.length) { splitRun(leaf: l, run: r, at: Int32(taken)) }
            markDeleted(leaf: l, run: r)
            TextOperation.append(.delete(id: TextID(replica: names[Int(run.agent)], seq: Int(run.seq)), count: taken), to: &operations)
            remaining -= taken
            mergeAround(leaf: l, run: r)
            checkLeaf(l)
        }
        return operations
    }

    // MARK: - Remote operations

    /// Applies an operation from any replica (this one's included: it is then a no-op) and returns
    /// what changed in the visible text. Idempotent. Throws, changing nothing, when the operation
    /// names characters this document does not hold yet or skips sequence numbers.
    @discardableResult
    public func apply(_ operation: TextOperation) throws(TextError) -> [TextChange] {
        switch operation {
        case .insert(let id, let text, let left, let right):
            return try integrate(id: id, text: text, left: left, right: right)
        case .delete(let id, let count):
            return try remove(id: id, count: count)
        }
    }

    /// Applies operations in order; stops at the first that throws (those before it stay applied).
    @discardableResult
    public func apply(_ operations: [TextOperation]) throws(TextError) -> [TextChange] {
        var changes: [TextChange] = []
        for operation in operations { changes += try apply(operation) }
        return changes
    }

    private func integrate(id: TextID, text: String, left: TextID?, right: TextID?) throws(TextError) -> [TextChange] {
        var scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty, id.seq >= 0, id.seq + scalars.count <= Int(Int32.max) else {
            throw .malformed("an insertion needs text and a seq in range")
        }
        let have = agentIndex[id.replica].map { lengths[Int($0)] } ?? 0
        var seq = id.seq
        var left = left
        if seq + scalars.count <= have { return [] }
        if seq < have {
            scalars.removeFirst(have - seq)
            left = TextID(replica: id.replica, seq: have - 1)
            seq = have
        }
        guard seq == have else { throw .gap(replica: id.replica, expected: have, got: seq) }
        var leftKey: (Int32, Int32) = (-1, 0)
        var start = (leaf: 0, run: 0, offset: 0)
        if let left {
            guard let (l, r, offset) = find(left) else { throw .unknownCharacter(replica: left.replica, seq: left.seq) }
            leftKey = (leaves[l].runs[r].agent, Int32(left.seq))
            start = (l, r, offset + 1)
        }
        var rightKey: (Int32, Int32) = (-1, 0)
        var end: (leaf: Int, run: Int, offset: Int)?
        if let right {
            guard let (l, r, offset) = find(right) else { throw .unknownCharacter(replica: right.replica, seq: right.seq) }
            rightKey = (leaves[l].runs[r].agent, Int32(right.seq))
            end = (l, r, offset)
        }
        let pieces = try concurrentPieces(from: start, to: end)
        // FugueMax: find the destination among the runs inserted concurrently between the origins.
        var destination = 0
        var scanning = false
        var index = 0
        var reachedEnd = true
        while index < pieces.count {
            if !scanning { destination = index }
            let piece = pieces[index]
            if piece.left != leftKey {
                if piece.left.0 >= 0, Self.contains(pieces[..<index], piece.left) {
                    index += 1
                    continue
                }
                reachedEnd = false
                break
            }
            if piece.right == rightKey {
                if Self.precedes(id.replica, names[Int(piece.agent)]) {
                    reachedEnd = false
                    break
                }
                scanning = false
            } else {
                scanning = piece.right.0 >= 0 && Self.contains(pieces[(index + 1)...], piece.right)
            }
            index += 1
        }
        if reachedEnd, !scanning { destination = pieces.count }
        var (l, r, offset): (Int, Int, Int)
        if destination < pieces.count {
            (l, r, offset) = (pieces[destination].leaf, pieces[destination].run, pieces[destination].offset)
        } else if let end {
            (l, r, offset) = end
        } else {
            l = leaves.count - 1
            r = leaves[l].runs.count
            offset = 0
        }
        if offset > 0 {
            splitRun(leaf: l, run: r, at: Int32(offset))
            r += 1
        }
        let agent = agent(named: id.replica)
        let length = Int32(scalars.count)
        let position = visibleStart(ofLeaf: l) + leaves[l].runs[..<r].reduce(0) { $0 + $1.visibleLength }
        if r > 0 {
            let previous = leaves[l].runs[r - 1]
            if previous.agent == agent, previous.seq + previous.length == Int32(seq), !previous.deleted,
               leftKey == (agent, Int32(seq) - 1), previous.rightAgent == rightKey.0, previous.rightSeq == rightKey.1 {
                extendRun(leaf: l, run: r - 1, with: scalars)
                return [.insert(position: position, text: String(String.UnicodeScalarView(scalars)))]
            }
        }
        insertRun(TextRun(agent: agent, seq: Int32(seq), length: length, deleted: false, leftAgent: leftKey.0,
                          leftSeq: leftKey.1, rightAgent: rightKey.0, rightSeq: rightKey.1),
                  leaf: l, at: r, scalars: scalars)
        return [.insert(position: position, text: String(String.UnicodeScalarView(scalars)))]
    }

    /// A stretch of one run between an insertion's origins.
    private struct Piece {
        var leaf: Int
        var run: Int
        var offset: Int
        var agent: Int32
        var seq: Int32
        var length: Int32
        var left: (Int32, Int32)
        var right: (Int32, Int32)
    }

    /// The characters after `start` up to `end` (nil: the end of the text), as pieces of runs.
    private func concurrentPieces(from start: (leaf: Int, run: Int, offset: Int),
                                  to end: (leaf: Int, run: Int, offset: Int)?) throws(TextError) -> [Piece] {
        var pieces: [Piece] = []
        var (l, r, offset) = start
        while true {
            if l < leaves.count, r < leaves[l].runs.count, offset >= Int(leaves[l].runs[r].length) {
                r += 1
                offset = 0
            }
            while l < leaves.count, r >= leaves[l].runs.count {
                l += 1
                r = 0
                offset = 0
            }
            if let end, l == end.leaf, r == end.run, offset == end.offset { return pieces }
            guard l < leaves.count else {
                if end == nil { return pieces }
                throw .malformed("an insertion's right origin is not after its left origin")
            }
            let run = leaves[l].runs[r]
            var length = run.length - Int32(offset)
            if let end, l == end.leaf, r == end.run {
                guard end.offset > offset else { throw .malformed("an insertion's right origin is not after its left origin") }
                length = Int32(end.offset - offset)
            }
            let left = offset > 0 ? (run.agent, run.seq + Int32(offset) - 1) : (run.leftAgent, run.leftSeq)
            pieces.append(Piece(leaf: l, run: r, offset: offset, agent: run.agent, seq: run.seq + Int32(offset), length: length,
                                left: left, right: (run.rightAgent, run.rightSeq)))
            offset += Int(length)
            if offset >= Int(run.length) {
                r += 1
                offset = 0
            }
        }
    }

    private static func contains(_ pieces: ArraySlice<Piece>, _ id: (Int32, Int32)) -> Bool {
        pieces.contains { $0.agent == id.0 && id.1 >= $0.seq && id.1 < $0.seq + $0.length }
    }

    /// The order of replica names that breaks ties: byte order of their ASCII names.
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    private func remove(id: TextID, count: Int) throws(TextError) -> [TextChange] {
        guard count > 0, id.seq >= 0 else { throw .malformed("a deletion needs a positive count") }
        guard let agent = agentIndex[id.replica], id.seq + count <= lengths[Int(agent)] else {
            throw .unknownCharacter(replica: id.replica, seq: id.seq + count - 1)
        }
        var changes: [TextChange] = []
        var seq = id.seq
        var remaining = count
        while remaining > 0 {
            guard let (l, r, offset) = find(TextID(replica: id.replica, seq: seq)) else {
                throw .unknownCharacter(replica: id.replica, seq: seq)
            }
            let run = leaves[l].runs[r]
            let taken = min(remaining, Int(run.length) - offset)
            if !run.deleted {
                var target = r
                if offset > 0 {
                    splitRun(leaf: l, run: r, at: Int32(offset))
                    target += 1
                }
                if taken < Int(leaves[l].runs[target].length) { splitRun(leaf: l, run: target, at: Int32(taken)) }
                let position = visibleStart(ofLeaf: l) + leaves[l].runs[..<target].reduce(0) { $0 + $1.visibleLength }
                markDeleted(leaf: l, run: target)
                if case .delete(let last, let lastCount)? = changes.last, last == position {
                    changes[changes.count - 1] = .delete(position: position, count: lastCount + taken)
                } else {
                    changes.append(.delete(position: position, count: taken))
                }
                mergeAround(leaf: l, run: target)
                checkLeaf(l)
            }
            seq += taken
            remaining -= taken
        }
        return changes
    }

    /// Makes deleted characters `id.seq ..< id.seq + text.count` of `id.replica` visible again with
    /// `text` (one scalar each; the document keeps no deleted text), skipping those already visible:
    /// how a replica takes back its own deletion that the server refused, so the characters keep
    /// the ids the server holds them under. Only for a deletion no other replica has seen (elsewhere
    /// it is not undone). Returns what changed; throws `TextError.unknownCharacter`, changing
    /// nothing, when this text lacks one of them. O(count / run length × 64 + leaves).
    @discardableResult
    package func undelete(_ id: TextID, text: String) throws(TextError) -> [TextChange] {
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return [] }
        guard contains(id), contains(TextID(replica: id.replica, seq: id.seq + scalars.count - 1)) else {
            throw .unknownCharacter(replica: id.replica, seq: id.seq)
        }
        var changes: [TextChange] = []
        var seq = id.seq
        while seq < id.seq + scalars.count {
            guard let (l, found, offset) = find(TextID(replica: id.replica, seq: seq)) else {
                throw .unknownCharacter(replica: id.replica, seq: seq)
            }
            var r = found
            let taken = min(id.seq + scalars.count - seq, Int(leaves[l].runs[r].length) - offset)
            if leaves[l].runs[r].deleted {
                if offset > 0 {
                    splitRun(leaf: l, run: r, at: Int32(offset))
                    r += 1
                }
                if taken < Int(leaves[l].runs[r].length) { splitRun(leaf: l, run: r, at: Int32(taken)) }
                let leaf = leaves[l]
                let piece = scalars[(seq - id.seq)..<(seq - id.seq + taken)]
                let start = textOffset(leaf, before: r)
                let position = visibleStart(ofLeaf: l) + start
                leaf.text.insert(contentsOf: piece, at: start)
                leaf.runs[r].deleted = false
                adjustVisible(leaf: l, by: taken)
                mergeAround(leaf: l, run: r)
                changes.append(.insert(position: position, text: String(String.UnicodeScalarView(piece))))
            }
            seq += taken
        }
        return changes
    }

    // MARK: - Cursors

    /// A cursor at `position` that follows its character across remote edits.
    public func cursor(at position: Int) throws(TextError) -> TextCursor {
        guard position >= 0, position <= count else { throw .outOfRange(position: position, count: count) }
        if position == count { return TextCursor(before: nil) }
        let (l, r, offset) = locate(visible: position)
        let run = leaves[l].runs[r]
        return TextCursor(before: TextID(replica: names[Int(run.agent)], seq: Int(run.seq) + offset))
    }

    /// Where `cursor` stands now: before its character, or where it was when deleted; nil when
    /// this document does not hold the character. O(leaves + 64).
    public func position(of cursor: TextCursor) -> Int? {
        guard let id = cursor.id else { return count }
        guard let (l, r, offset) = find(id) else { return nil }
        let run = leaves[l].runs[r]
        return visibleStart(ofLeaf: l) + leaves[l].runs[..<r].reduce(0) { $0 + $1.visibleLength } + (run.deleted ? 0 : offset)
    }

    /// Whether this document holds character `id` (visible or deleted).
    public func contains(_ id: TextID) -> Bool {
        guard let agent = agentIndex[id.replica] else { return false }
        return id.seq >= 0 && id.seq < lengths[Int(agent)]
    }

    /// The visible characters in `range` (empty when it is outside the text): what deleting it
    /// takes away, for an undo to type again. O(leaves + range).
    package func text(in range: Range<Int>) -> String {
        guard !range.isEmpty, range.lowerBound >= 0, range.upperBound <= count else { return "" }
        var (l, _, _) = locate(visible: range.lowerBound)
        var start = range.lowerBound - visibleStart(ofLeaf: l)
        var view = String.UnicodeScalarView()
        var remaining = range.count
        while remaining > 0, l < leaves.count {
            let text = leaves[l].text
            let taken = min(remaining, text.count - start)
            view.append(contentsOf: text[start..<(start + taken)])
            remaining -= taken
            l += 1
            start = 0
        }
        return String(view)
    }

    /// The visible characters among ids `id.seq ..< id.seq + count` of `id.replica`, as runs of
    /// consecutive ids (what deleting them again would name). O(count / run length × 64).
    public func visibleRuns(_ id: TextID, count: Int) -> [(id: TextID, count: Int)] {
        guard let agent = agentIndex[id.replica] else { return [] }
        var result: [(id: TextID, count: Int)] = []
        var seq = id.seq
        let end = min(id.seq + count, lengths[Int(agent)])
        while seq < end, let (l, r, offset) = find(TextID(replica: id.replica, seq: seq)) {
            let run = leaves[l].runs[r]
            let taken = min(end - seq, Int(run.length) - offset)
            if !run.deleted {
                if let last = result.last, last.id.seq + last.count == seq {
                    result[result.count - 1].count += taken
                } else {
                    result.append((TextID(replica: id.replica, seq: seq), taken))
                }
            }
            seq += taken
        }
        return result
    }

    /// The characters among ids `id.seq ..< id.seq + count` of `id.replica`, deleted or not, as runs
    /// of consecutive ids that stand together in the text, each with a key that sorts runs in text
    /// order (valid until the next edit). O(count / run length × 64).
    public func runsInOrder(_ id: TextID, count: Int) -> [(id: TextID, count: Int, order: [Int])] {
        guard let agent = agentIndex[id.replica] else { return [] }
        var result: [(id: TextID, count: Int, order: [Int])] = []
        var seq = id.seq
        let end = min(id.seq + count, lengths[Int(agent)])
        while seq < end, let (l, r, offset) = find(TextID(replica: id.replica, seq: seq)) {
            let taken = min(end - seq, Int(leaves[l].runs[r].length) - offset)
            result.append((TextID(replica: id.replica, seq: seq), taken, [l, r, offset]))
            seq += taken
        }
        return result.sorted { $0.order.lexicographicallyPrecedes($1.order) }
    }

    // MARK: - Internals

    /// What a deleted character a merged state brings in is typed as, before it is deleted.
    static let unknownScalar: Unicode.Scalar = "\u{FFFF}"

    func agent(named name: String) -> Int32 {
        if let index = agentIndex[name] { return index }
        let index = Int32(names.count)
        names.append(name)
        agentIndex[name] = index
        lengths.append(0)
        owners.append([])
        return index
    }

    func setCount(_ value: Int) {
        count = value
    }

    private func operation(seq: Int32, text: String, left: (Int32, Int32), right: (Int32, Int32)) -> TextOperation {
        .insert(id: TextID(replica: replica, seq: Int(seq)), text: text,
                left: left.0 < 0 ? nil : TextID(replica: names[Int(left.0)], seq: Int(left.1)),
                right: right.0 < 0 ? nil : TextID(replica: names[Int(right.0)], seq: Int(right.1)))
    }

    /// The leaf, run and offset of visible character `position` (< count).
    private func locate(visible position: Int) -> (Int, Int, Int) {
        while cacheLeaf > 0, position < cacheVisible {
            cacheLeaf -= 1
            cacheVisible -= leaves[cacheLeaf].visible
        }
        while cacheLeaf < leaves.count - 1, position >= cacheVisible + leaves[cacheLeaf].visible {
            cacheVisible += leaves[cacheLeaf].visible
            cacheLeaf += 1
        }
        var rest = position - cacheVisible
        let found: (Int, Int)? = leaves[cacheLeaf].runs.withUnsafeBufferPointer { runs in
            for index in runs.indices where !runs[index].deleted {
                let length = Int(runs[index].length)
                if rest < length { return (index, rest) }
                rest -= length
            }
            return nil
        }
        guard let found else { preconditionFailure("text position \(position) not found in a document of \(count)") }
        return (cacheLeaf, found.0, found.1)
    }

    /// The visible characters before leaf `index`, moving the cache there.
    private func visibleStart(ofLeaf index: Int) -> Int {
        while cacheLeaf > index {
            cacheLeaf -= 1
            cacheVisible -= leaves[cacheLeaf].visible
        }
        while cacheLeaf < index {
            cacheVisible += leaves[cacheLeaf].visible
            cacheLeaf += 1
        }
        return cacheVisible
    }

    /// The leaf, run and offset of character `id`, or nil.
    private func find(_ id: TextID) -> (Int, Int, Int)? {
        guard let agent = agentIndex[id.replica], id.seq >= 0, id.seq < lengths[Int(agent)] else { return nil }
        let leaf = leavesByID[Int(leafID(agent: Int(agent), seq: Int32(id.seq)))]
        let seq = Int32(id.seq)
        for (index, run) in leaf.runs.enumerated() where run.agent == agent && seq >= run.seq && seq < run.seq + run.length {
            return (leaf.index, index, Int(seq - run.seq))
        }
        return nil
    }

    /// The id of the first character at or after run `run` of leaf `leaf`; (-1, 0) at the end.
    private func runStart(leaf: Int, run: Int) -> (Int32, Int32) {
        var l = leaf
        var r = run
        while l < leaves.count {
            if r < leaves[l].runs.count { return (leaves[l].runs[r].agent, leaves[l].runs[r].seq) }
            l += 1
            r = 0
        }
        return (-1, 0)
    }

    private func adjustVisible(leaf: Int, by delta: Int) {
        leaves[leaf].visible += delta
        count += delta
        if leaf < cacheLeaf { cacheVisible += delta }
    }

    /// The id of the leaf that holds character `seq` of replica `agent` (which it holds). O(log runs).
    private func leafID(agent: Int, seq: Int32) -> Int32 {
        owners[agent].withUnsafeBufferPointer { pairs in
            pairs[max(0, pairs.partitioningIndex { $0.start > seq } - 1)].leaf
        }
    }

    /// Records `count` new characters of `agent`, its next ones from `seq`, in `leaf`.
    private func noteCharacters(agent: Int32, seq: Int32, count: Int, leaf: TextLeaf) {
        let index = Int(agent)
        assert(Int(seq) == lengths[index], "a replica's characters are added in seq order")
        lengths[index] += count
        if owners[index].last?.leaf != leaf.id { owners[index].append((seq, leaf.id)) }
    }

    /// The visible characters of leaf `leaf` before its run `run`: where that run's text starts.
    private func textOffset(_ leaf: TextLeaf, before run: Int) -> Int {
        leaf.runs.withUnsafeBufferPointer { runs in
            var offset = 0
            for index in 0..<run where !runs[index].deleted { offset += Int(runs[index].length) }
            return offset
        }
    }

    private func insertRun(_ run: TextRun, leaf: Int, at index: Int, scalars: [Unicode.Scalar]) {
        let target = leaves[leaf]
        if !run.deleted { target.text.insert(contentsOf: scalars, at: textOffset(target, before: index)) }
        target.runs.insert(run, at: index)
        noteCharacters(agent: run.agent, seq: run.seq, count: Int(run.length), leaf: target)
        adjustVisible(leaf: leaf, by: run.visibleLength)
        checkLeaf(leaf)
    }

    /// Types `scalars` at the end of visible run `run` of leaf `l` (they continue it).
    private func extendRun(leaf l: Int, run r: Int, with scalars: [Unicode.Scalar]) {
        let leaf = leaves[l]
        leaf.text.insert(contentsOf: scalars, at: textOffset(leaf, before: r + 1))
        let run = leaf.runs[r]
        leaf.runs[r].length += Int32(scalars.count)
        noteCharacters(agent: run.agent, seq: run.seq + run.length, count: scalars.count, leaf: leaf)
        adjustVisible(leaf: l, by: scalars.count)
    }

    /// Deletes visible run `r` of leaf `l`: it keeps its ids and origins, its text goes.
    private func markDeleted(leaf l: Int, run r: Int) {
        let leaf = leaves[l]
        let start = textOffset(leaf, before: r)
        let length = Int(leaf.runs[r].length)
        leaf.text.removeSubrange(start..<(start + length))
        // An array keeps its capacity: a leaf that lost most of its text gives the memory back.
        if leaf.text.capacity > 256, leaf.text.count < leaf.text.capacity / 4 {
            var smaller: [Unicode.Scalar] = []
            smaller.reserveCapacity(leaf.text.count * 2)
            smaller.append(contentsOf: leaf.text)
            leaf.text = smaller
        }
        leaf.runs[r].deleted = true
        adjustVisible(leaf: l, by: -length)
    }

    private func splitRun(leaf: Int, run: Int, at offset: Int32) {
        let tail = leaves[leaf].runs[run].split(at: offset)
        leaves[leaf].runs.insert(tail, at: run + 1)
    }

    private func mergeAround(leaf: Int, run: Int) {
        let runs = leaves[leaf]
        if run + 1 < runs.runs.count, runs.runs[run].isContinued(by: runs.runs[run + 1]) {
            runs.runs[run].length += runs.runs[run + 1].length
            runs.runs.remove(at: run + 1)
        }
        if run > 0, runs.runs[run - 1].isContinued(by: runs.runs[run]) {
            runs.runs[run - 1].length += runs.runs[run].length
            runs.runs.remove(at: run)
        }
    }

    /// Splits leaf `index` in two when it holds more than `maxRuns` runs.
    private func checkLeaf(_ index: Int) {
        let leaf = leaves[index]
        guard leaf.runs.count > Self.maxRuns else { return }
        let half = leaf.runs.count / 2
        let cut = textOffset(leaf, before: half)
        let tail = TextLeaf(runs: Array(leaf.runs[half...]), id: Int32(leavesByID.count), index: index + 1, text: Array(leaf.text[cut...]))
        leaf.runs.removeSubrange(half...)
        leaf.text.removeSubrange(cut...)
        leaf.visible -= tail.visible
        leavesByID.append(tail)
        leaves.insert(tail, at: index + 1)
        for later in (index + 2)..<leaves.count { leaves[later].index = later }
        reassign(tail.runs, to: tail.id)
        if cacheLeaf > index { cacheLeaf += 1 }
    }

    /// Records that the characters of `runs` are now in leaf `leaf`: each replica's pairs are
    /// rebuilt in one pass over them and the runs' ranges. O(pairs of those replicas + runs log runs).
    private func reassign(_ runs: [TextRun], to leaf: Int32) {
        var ranges: [Int32: [(start: Int32, end: Int32)]] = [:]
        for run in runs { ranges[run.agent, default: []].append((run.seq, run.seq + run.length)) }
        for (agent, unsorted) in ranges {
            let moved = unsorted.sorted { $0.start < $1.start }
            let old = owners[Int(agent)]
            let end = Int32(lengths[Int(agent)])
            var result: [(start: Int32, leaf: Int32)] = []
            result.reserveCapacity(old.count + 2 * moved.count)
            var pair = 0
            var range = 0
            var point: Int32 = 0
            while point < end {
                while pair + 1 < old.count, old[pair + 1].start <= point { pair += 1 }
                while range < moved.count, moved[range].end <= point { range += 1 }
                let inside = range < moved.count && moved[range].start <= point
                let owner = inside ? leaf : old[pair].leaf
                if result.last?.leaf != owner { result.append((point, owner)) }
                var next = end
                if pair + 1 < old.count { next = min(next, old[pair + 1].start) }
                if range < moved.count { next = min(next, inside ? moved[range].end : moved[range].start) }
                point = next
            }
            owners[Int(agent)] = result
        }
    }
}
