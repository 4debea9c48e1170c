/// The text a `SharedText` handle shares: the document, the local operations not yet recorded in
/// a change set, and the observers of its changes.
final class SharedTextStorage {
    private(set) var document: TextDocument
    /// Local operations since the scope last took them (`takeUnsent`).
    private(set) var unsent: [TextOperation] = []
    /// The text the unsent deletions took away, by the id of each deletion's first character (the
    /// document keeps no deleted text; an undo types this again).
    private var unsentDeleted: [TextID: String] = [:]
    /// The last remote update that could not be applied (it named characters this text lacks).
    private(set) var lastError: TextError?
    /// Characters an undo, redo or revert typed again in place of deleted ones, by the id of the
    /// deleted character: a later toggle of the edit that typed the deleted one takes these away too.
    private var retyped: [TextID: TextID] = [:]
    /// This replica's characters whose insertion the server refused, by seq: it holds them as
    /// deleted characters (a rollback sends them so), so a later rollback does not bring them back.
    private var refused: [Range<Int>] = []
    @MainActor private var list: ObserverList<SharedTextEvent>?

    init(_ document: TextDocument) {
        self.document = document
    }

    @MainActor var observers: ObserverList<SharedTextEvent> {
        if let list { return list }
        let made = ObserverList<SharedTextEvent>()
        list = made
        return made
    }

    /// Local edits made through the handle: kept for the next change set, and told to observers.
    /// `deletedText` is what the deletions among `operations` took away, in their order.
    @MainActor func recordLocal(_ operations: [TextOperation], changes: [TextChange], deletedText: String = "") {
        SharedTextEdit.pair(operations, with: deletedText, into: &unsentDeleted)
        for operation in operations { TextOperation.append(operation, to: &unsent) }
        notify(changes, isRemote: false)
    }

    /// Makes the text `text` as a local edit: the common prefix and suffix stay, the middle is
    /// deleted and typed again (what assigning a whole new `SharedText` to a property does).
    @MainActor func replaceText(with text: String) {
        let before = document.text
        guard text != before, let operations = try? document.replace(with: text) else { return }
        // The deletions took the old text's middle: what is between the common prefix and suffix.
        let old = Array(before.unicodeScalars)
        let deleted = operations.reduce(0) { total, operation in
            if case .delete(_, let count) = operation { return total + count }
            return total
        }
        var prefix = 0
        let new = Array(text.unicodeScalars)
        while prefix < old.count, prefix < new.count, old[prefix] == new[prefix] { prefix += 1 }
        let middle = String(String.UnicodeScalarView(old[prefix..<min(old.count, prefix + deleted)]))
        recordLocal(operations, changes: [.delete(position: 0, count: old.count), .insert(position: 0, text: text)], deletedText: middle)
    }

    /// The local operations not yet in a change set and the text their deletions took away, which
    /// are then forgotten here.
    func takeUnsent() -> (operations: [TextOperation], deleted: [TextID: String]) {
        defer {
            unsent = []
            unsentDeleted = [:]
        }
        return (unsent, unsentDeleted)
    }

    /// Applies `update` (remote operations or state, a plain write, an undo or redo) and tells the
    /// observers what changed.
    @MainActor func absorb(_ update: SharedTextUpdate, isRemote: Bool) {
        var changes: [TextChange] = []
        do throws(TextError) {
            switch update {
            case .plain(let text):
                guard text != document.text else { return }
                changes = [.delete(position: 0, count: document.count), .insert(position: 0, text: text)]
                document = TextDocument(replica: document.replica, initialText: text)
                unsent = []
                unsentDeleted = [:]
            case .operations(let operations):
                for operation in operations { changes += try document.apply(operation) }
            case .state(let state):
                changes = try document.merge(state: state)
            case .toggle(let edit):
                let made = try edit.toggle(document, retyped: &retyped)
                for operation in made.operations { TextOperation.append(operation, to: &unsent) }
                SharedTextEdit.pair(made.operations, with: made.deletedText, into: &unsentDeleted)
                changes = made.changes
            case .rollBack(let edit):
                let made = try edit.rollBack(document, refused: &refused)
                // Among the local operations not yet sent, in this replica's numbering: the server
                // takes a replica's insertions in order only.
                unsent = SharedTextEdit.splice(made.repair, into: unsent)
                changes = made.changes
            }
        } catch {
            lastError = error
        }
        if !changes.isEmpty { notify(changes, isRemote: isRemote) }
    }

    @MainActor private func notify(_ changes: [TextChange], isRemote: Bool) {
        list?.notify(SharedTextEvent(changes: changes, isRemote: isRemote))
    }
}

/// What observers of a `SharedText` are told.
struct SharedTextEvent {
    var changes: [TextChange]
    var isRemote: Bool
}

/// What storing a decoded or replayed `SharedText` does to the text it is stored over.
enum SharedTextUpdate {
    /// A plain string from a peer without operations: the text becomes it (as the initial text).
    case plain(String)
    /// Operations of a remote change.
    case operations([TextOperation])
    /// A whole state (an `add`, a full state, a log snapshot), merged in.
    case state(JSON)
    /// An undo or redo of a local change set's edit.
    case toggle(SharedTextEdit)
    /// A revert of a local change set's edit that the server refused or that was never sent
    /// (`SharedTextEdit.rollBack`).
    case rollBack(SharedTextEdit)

    /// Whether it edits the text it is stored over even when it comes from the same handle.
    var isEdit: Bool {
        switch self {
        case .toggle, .rollBack: return true
        case .plain, .operations, .state: return false
        }
    }

    /// Whether the change comes from elsewhere (observers are told so).
    var isRemote: Bool { !isEdit }
}

/// The edit a local change set made to a `SharedText`, for undo, redo and revert: each toggle
/// applies the inverse of what the last one (or the edit itself) did, as new local operations —
/// inserted characters are deleted, deleted ones are typed again where they were. It keeps the text
/// its deletions took away (the document does not), so undo history, not the text, holds it.
final class SharedTextEdit {
    private var current: [TextOperation]
    /// The text each deletion of `current` took away, by the id of its first character.
    private var deleted: [TextID: String]
    /// The operations the change set sent and the text their deletions took away (`current` changes
    /// with each toggle): what a refusal rolls back.
    private let sent: [TextOperation]
    private let sentDeleted: [TextID: String]

    init(_ operations: [TextOperation], deleted: [TextID: String]) {
        current = operations
        self.deleted = deleted
        sent = operations
        sentDeleted = deleted
    }

    /// Whether the change set deleted text: rolling it back types that text again under the ids the
    /// server holds it by, which another replica may have deleted meanwhile (the scope is fetched
    /// again then).
    var sentDeletions: Bool {
        sent.contains { if case .delete = $0 { return true } else { return false } }
    }

    /// Records in `texts` the text each deletion of `operations` took away: `text` holds them all,
    /// in order.
    static func pair(_ operations: [TextOperation], with text: String, into texts: inout [TextID: String]) {
        var rest = Substring.UnicodeScalarView(text.unicodeScalars)
        for case .delete(let id, let count) in operations where rest.count >= count {
            texts[id] = String(String.UnicodeScalarView(rest.prefix(count)))
            rest = rest.dropFirst(count)
        }
    }

    /// The text characters `id.seq ..< id.seq + count` had, from the deletions that took them; nil
    /// when some were not deleted by this edit.
    private static func text(_ id: TextID, count: Int, in deleted: [TextID: String]) -> String? {
        var view = String.UnicodeScalarView()
        var seq = id.seq
        while seq < id.seq + count {
            guard let piece = deleted[TextID(replica: id.replica, seq: seq)] else { return nil }
            view.append(contentsOf: piece.unicodeScalars)
            seq += piece.unicodeScalars.count
        }
        return view.count == count ? String(view) : nil
    }

    /// Applies the inverse of what the edit (or its last toggle) did to `document`, as new local
    /// operations: its insertions are deleted, together with what later toggles typed again in their
    /// place (`retyped`); its deletions are typed again, except of characters it typed itself (they
    /// were not there before it). Records what it types again in `retyped`. O(characters of the edit).
    func toggle(_ document: TextDocument, retyped: inout [TextID: TextID]) throws(TextError)
        -> (operations: [TextOperation], changes: [TextChange], deletedText: String) {
        var operations: [TextOperation] = []
        var changes: [TextChange] = []
        var taken = ""
        var made: [TextID: String] = [:]
        let typedHere = current.compactMap { operation -> (id: TextID, count: Int)? in
            guard case .insert(let id, let text, _, _) = operation else { return nil }
            return (id, text.unicodeScalars.count)
        }
        var retype: [(id: TextID, scalars: [Unicode.Scalar])] = []
        for operation in current.reversed() {
            switch operation {
            case .insert(let id, let text, _, _):
                let count = text.unicodeScalars.count
                // Right to left, so the positions found first stay valid.
                let runs = ([(id, count)] + Self.replacements(of: id, count: count, in: retyped)).flatMap { start, length in
                    Self.visibleStretches(start, count: length, in: document)
                }.sorted { $0.position > $1.position }
                for run in runs {
                    let range = run.position..<(run.position + run.count)
                    let removed = document.text(in: range)
                    let deletions = try document.delete(range)
                    operations += deletions
                    taken += removed
                    SharedTextEdit.pair(deletions, with: removed, into: &made)
                    changes.append(.delete(position: run.position, count: run.count))
                }
            case .delete(let id, let count):
                guard let text = Self.text(id, count: count, in: deleted) else { continue }
                let scalars = Array(text.unicodeScalars)
                for (offset, length) in Self.pieces(of: id, count: count, outside: typedHere) {
                    let piece = TextID(replica: id.replica, seq: id.seq + offset)
                    retype.append((piece, Array(scalars[offset..<(offset + length)])))
                }
            }
        }
        // Deleted characters are typed again right before where they stood (among other deleted
        // characters between the same two visible ones, not before all of them), after the
        // deletions above.
        let segments = retype.flatMap { piece, scalars in
            document.runsInOrder(piece, count: scalars.count).map { run in
                (id: run.id, order: run.order, scalars: scalars[(run.id.seq - piece.seq)..<(run.id.seq - piece.seq + run.count)])
            }
        }.sorted { $0.order.lexicographicallyPrecedes($1.order) }
        for segment in segments {
            let text = String(String.UnicodeScalarView(segment.scalars))
            guard let position = document.position(of: TextCursor(before: segment.id)),
                  let inserted = try document.insert(text, before: segment.id) else { continue }
            if case .insert(let new, _, _, _) = inserted {
                for index in 0..<segment.scalars.count {
                    retyped[TextID(replica: segment.id.replica, seq: segment.id.seq + index)] = TextID(replica: new.replica, seq: new.seq + index)
                }
            }
            operations.append(inserted)
            changes.append(.insert(position: position, text: text))
        }
        current = operations
        deleted = made
        return (operations, changes, taken)
    }

    /// `repair` put into `operations` before the first operation that needs it: an insertion later
    /// in the repaired replica's numbering, or one that names a repaired character. Operations
    /// before that (the repair of an earlier refusal, say, numbered below it) keep their place, so
    /// the server gets the replica's insertions in order. O(operations + repair).
    static func splice(_ repair: [TextOperation], into operations: [TextOperation]) -> [TextOperation] {
        var ranges: [(replica: String, seqs: Range<Int>)] = []
        for case .insert(let id, let text, _, _) in repair { ranges.append((id.replica, id.seq..<(id.seq + text.unicodeScalars.count))) }
        guard let replica = ranges.first?.replica else { return repair + operations }
        let top = ranges.map(\.seqs.upperBound).max() ?? 0
        let names = { (id: TextID?) -> Bool in
            guard let id, id.replica == replica else { return false }
            return ranges.contains { $0.seqs.contains(id.seq) }
        }
        let cut = operations.firstIndex { operation in
            switch operation {
            case .insert(let id, _, let left, let right):
                return (id.replica == replica && id.seq >= top) || names(left) || names(right)
            case .delete(let id, let count):
                return id.replica == replica && ranges.contains { $0.seqs.overlaps(id.seq..<(id.seq + count)) }
            }
        } ?? operations.endIndex
        var result = Array(operations[..<cut])
        for operation in repair + operations[cut...] { TextOperation.append(operation, to: &result) }
        return result
    }

    /// What a repair types as the text of the characters it sends deleted (a noncharacter, which
    /// no one types, so a refused repair is told from a refused edit).
    static let placeholder: Unicode.Scalar = "\u{FFFF}"

    /// Takes back the edit the server refused (or that was never sent): the replica's text becomes
    /// what the server holds plus the edits still pending. Its characters are deleted here, and the
    /// server is given their ids as deleted characters (`repair`), since each replica numbers its
    /// insertions without gaps and the server refuses a gap; the characters it deleted come back
    /// under their own ids (the
    /// server never deleted them), except those of insertions refused before (`refused`, which
    /// this adds its own to: the server holds them deleted). The edit is spent: undo and redo of it
    /// do nothing afterwards. O(characters of the edit × 64).
    func rollBack(_ document: TextDocument, refused: inout [Range<Int>]) throws(TextError)
        -> (repair: [TextOperation], changes: [TextChange]) {
        var changes: [TextChange] = []
        let typedHere = sent.compactMap { operation -> (id: TextID, count: Int)? in
            guard case .insert(let id, let text, _, _) = operation else { return nil }
            return (id, text.unicodeScalars.count)
        }
        // Right to left, so the positions found first stay valid.
        let runs = typedHere.flatMap { id, count in Self.visibleStretches(id, count: count, in: document) }
            .sorted { $0.position > $1.position }
        for run in runs {
            try document.delete(run.position..<(run.position + run.count))
            changes.append(.delete(position: run.position, count: run.count))
        }
        for case .delete(let id, let count) in sent {
            guard let text = Self.text(id, count: count, in: sentDeleted) else { continue }
            let scalars = Array(text.unicodeScalars)
            for (offset, length) in Self.pieces(of: id, count: count, outside: typedHere + Self.ranges(refused, of: id.replica, mine: document.replica)) {
                let piece = String(String.UnicodeScalarView(scalars[offset..<(offset + length)]))
                changes += try document.undelete(TextID(replica: id.replica, seq: id.seq + offset), text: piece)
            }
        }
        for (id, count) in typedHere where id.replica == document.replica { refused.append(id.seq..<(id.seq + count)) }
        current = []
        deleted = [:]
        return (repair, changes)
    }

    /// What gives the server the ids of the characters the change set typed, as deleted characters:
    /// each insertion again, its text replaced by placeholders (the server keeps no deleted text, and
    /// refused text is not passed on), then deletions of them all. Idempotent where the server holds
    /// them already. Empty when the change set was such a repair itself: refused again (a single
    /// insertion over the server's message limit), it is not sent once more. O(operations).
    var repair: [TextOperation] {
        var operations: [TextOperation] = []
        var deletions: [TextOperation] = []
        let isRepair = sent.allSatisfy { operation in
            guard case .insert(_, let text, _, _) = operation else { return true }
            return text.unicodeScalars.allSatisfy { $0 == Self.placeholder }
        }
        guard !isRepair else { return [] }
        for case .insert(let id, let text, let left, let right) in sent {
            let count = text.unicodeScalars.count
            let placeholder = String(repeating: Character(Self.placeholder), count: count)
            TextOperation.append(.insert(id: id, text: placeholder, left: left, right: right), to: &operations)
            TextOperation.append(.delete(id: id, count: count), to: &deletions)
        }
        return operations + deletions
    }

    /// Where the visible characters among ids `id.seq ..< id.seq + count` stand, as stretches that are
    /// together in the text: consecutive ids need not be (text typed between two of them later).
    private static func visibleStretches(_ id: TextID, count: Int, in document: TextDocument) -> [(count: Int, position: Int)] {
        document.runsInOrder(id, count: count).flatMap { piece in
            // A piece lies in one run of the document: all of it visible or none.
            document.visibleRuns(piece.id, count: piece.count).compactMap { run in
                document.position(of: TextCursor(before: run.id)).map { (count: run.count, position: $0) }
            }
        }
    }

    /// `ranges` (of this replica's own characters, `mine`) as (id, count) pairs when `replica` is it.
    private static func ranges(_ ranges: [Range<Int>], of replica: String, mine: String) -> [(id: TextID, count: Int)] {
        replica == mine ? ranges.map { (TextID(replica: mine, seq: $0.lowerBound), $0.count) } : []
    }

    /// The characters typed again in place of characters `id.seq ..< id.seq + count` (followed
    /// through every later replacement), as runs of one character each. Empty when none were.
    private static func replacements(of id: TextID, count: Int, in retyped: [TextID: TextID]) -> [(TextID, Int)] {
        guard !retyped.isEmpty else { return [] }
        var found: [(TextID, Int)] = []
        for seq in id.seq..<(id.seq + count) {
            var character = TextID(replica: id.replica, seq: seq)
            var replaced = false
            while let next = retyped[character] {
                character = next
                replaced = true
            }
            if replaced { found.append((character, 1)) }
        }
        return found
    }

    /// The parts of characters `id.seq ..< id.seq + count` that none of `typed` inserted, as
    /// (offset from `id`, length), in order.
    private static func pieces(of id: TextID, count: Int, outside typed: [(id: TextID, count: Int)]) -> [(Int, Int)] {
        let mine = typed.filter { $0.id.replica == id.replica }
        guard !mine.isEmpty else { return [(0, count)] }
        var pieces: [(Int, Int)] = []
        var start: Int?
        for offset in 0..<count {
            let seq = id.seq + offset
            let isMine = mine.contains { seq >= $0.id.seq && seq < $0.id.seq + $0.count }
            if isMine, let begun = start {
                pieces.append((begun, offset - begun))
                start = nil
            } else if !isMine, start == nil {
                start = offset
            }
        }
        if let begun = start { pieces.append((begun, count - begun)) }
        return pieces
    }
}
