/// The text a `SharedText` handle shares: the document, the local operations not yet recorded in
/// a change set, and the observers of its changes.
final class SharedTextStorage {
    private(set) var document: TextDocument
    /// Local operations since the scope last took them (`takeUnsent`).
    private(set) var unsent: [TextOperation] = []
    /// The last remote update that could not be applied (it named characters this text lacks).
    private(set) var lastError: TextError?
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
    @MainActor func recordLocal(_ operations: [TextOperation], changes: [TextChange]) {
        for operation in operations { TextOperation.append(operation, to: &unsent) }
        notify(changes, isRemote: false)
    }

    /// Makes the text `text` as a local edit: the common prefix and suffix stay, the middle is
    /// deleted and typed again (what assigning a whole new `SharedText` to a property does).
    @MainActor func replaceText(with text: String) {
        let before = document.text
        guard text != before, let operations = try? document.replace(with: text) else { return }
        recordLocal(operations, changes: [.delete(position: 0, count: before.unicodeScalars.count), .insert(position: 0, text: text)])
    }

    /// The local operations not yet in a change set, which are then forgotten here.
    func takeUnsent() -> [TextOperation] {
        defer { unsent = [] }
        return unsent
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
            case .operations(let operations):
                for operation in operations { changes += try document.apply(operation) }
            case .state(let state):
                changes = try document.merge(state: state)
            case .toggle(let edit):
                let made = try edit.toggle(document)
                for operation in made.operations { TextOperation.append(operation, to: &unsent) }
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
    /// An undo, redo or revert of a local change set's edit.
    case toggle(SharedTextEdit)

    /// Whether it edits the text it is stored over even when it comes from the same handle.
    var isEdit: Bool {
        if case .toggle = self { return true }
        return false
    }

    /// Whether the change comes from elsewhere (observers are told so).
    var isRemote: Bool {
        if case .toggle = self { return false }
        return true
    }
}

/// The edit a local change set made to a `SharedText`, for undo, redo and revert: each toggle
/// applies the inverse of what the last one (or the edit itself) did, as new local operations —
/// inserted characters are deleted, deleted ones are typed again where they were.
final class SharedTextEdit {
    private var current: [TextOperation]

    init(_ operations: [TextOperation]) {
        current = operations
    }

    func toggle(_ document: TextDocument) throws(TextError) -> (operations: [TextOperation], changes: [TextChange]) {
        var operations: [TextOperation] = []
        var changes: [TextChange] = []
        for operation in current.reversed() {
            switch operation {
            case .insert(let id, let text, _, _):
                for run in document.visibleRuns(id, count: text.unicodeScalars.count).reversed() {
                    guard let position = document.position(of: TextCursor(before: run.id)) else { continue }
                    operations += try document.delete(position..<(position + run.count))
                    changes.append(.delete(position: position, count: run.count))
                }
            case .delete(let id, let count):
                guard let text = document.typedText(id, count: count),
                      let position = document.position(of: TextCursor(before: id)),
                      let inserted = try document.insert(text, at: position) else { continue }
                operations.append(inserted)
                changes.append(.insert(position: position, text: text))
            }
        }
        current = operations
        return (operations, changes)
    }
}
