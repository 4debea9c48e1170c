/// A run of characters of a `TextDocument` with consecutive ids, typed forward in one go: character
/// `k > 0` has character `k - 1` of the run as its left origin, and every character has the run's
/// right origin. Agents are indices into the document's replica table; -1 means none.
struct TextRun {
    var agent: Int32
    var seq: Int32
    var length: Int32
    var deleted: Bool
    var leftAgent: Int32
    var leftSeq: Int32
    var rightAgent: Int32
    var rightSeq: Int32

    var visibleLength: Int { deleted ? 0 : Int(length) }

    /// The run from character `offset` on; `self` keeps the characters before it.
    mutating func split(at offset: Int32) -> TextRun {
        var tail = self
        tail.seq = seq + offset
        tail.length = length - offset
        tail.leftAgent = agent
        tail.leftSeq = seq + offset - 1
        length = offset
        return tail
    }

    /// Whether `next` continues this run (so the two can be one run).
    func isContinued(by next: TextRun) -> Bool {
        next.agent == agent && next.seq == seq + length && next.deleted == deleted && next.leftAgent == agent
            && next.leftSeq == seq + length - 1 && next.rightAgent == rightAgent && next.rightSeq == rightSeq
    }
}

/// A leaf of the run list: up to `TextDocument.maxRuns` runs, with their visible characters.
final class TextLeaf {
    var runs: [TextRun]
    /// The visible characters of `runs`, in order (a deleted run has none).
    var text: [Unicode.Scalar]
    var visible: Int
    /// Stable number (index into `TextDocument.leavesByID`), stored per character for id lookups.
    let id: Int32
    /// Current position in `TextDocument.leaves`.
    var index: Int

    init(runs: [TextRun], id: Int32, index: Int, text: [Unicode.Scalar] = []) {
        self.runs = runs
        self.text = text
        self.visible = runs.reduce(0) { $0 + $1.visibleLength }
        self.id = id
        self.index = index
    }
}
