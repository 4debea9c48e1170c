import Foundation

/// Collaborative plain text for a `@Property` (Protocol §8.21): concurrent insertions and
/// deletions from any number of replicas merge character by character, without losing a keystroke
/// and without interleaving two people's words (a `TextDocument` underneath).
///
/// ```swift
/// final class Note: ModelObject {
///     @Property var body = SharedText()
/// }
/// try note.body.insert("Hello", at: 0)
/// try note.body.delete(0..<1)
/// let cursor = try note.body.cursor(at: 2)       // stays before its character across remote edits
/// note.body.observe(view) { changes, isRemote in … }   // [TextChange]: what changed where
/// ```
///
/// A `SharedText` is a handle: copies share one text, and an edit through the property records
/// it in the object's scope (undo and redo included). On the wire the property is the plain string
/// (what an original Jetstream peer reads and writes); a change also carries its operations in the
/// fragment's `text` member, an `add` and a full state the text's state. Positions are offsets in
/// Unicode scalars.
public struct SharedText: PropertyValue, CustomStringConvertible {
    let storage: SharedTextStorage
    var version = 0
    /// Set on values made by decoding or by undo: what storing this value does to the stored text.
    let update: SharedTextUpdate?

    /// A text holding `initialText`. Replicas that start from the same initial text start from the
    /// same characters, so it is not doubled when they merge.
    public init(_ initialText: String = "") {
        // A replica name of its own per text: two scopes of one process editing one text are two replicas.
        storage = SharedTextStorage(TextDocument(replica: TextDocument.newReplicaName(), initialText: initialText))
        update = nil
    }

    init(storage: SharedTextStorage, version: Int, update: SharedTextUpdate?) {
        self.storage = storage
        self.version = version
        self.update = update
    }

    /// The text.
    public var text: String { storage.document.text }
    /// The number of characters (Unicode scalars).
    public var count: Int { storage.document.count }
    /// The text.
    public var description: String { text }
    /// Why the last remote edit could not be applied (it named characters this text lacks), if one
    /// could not; the scope is then fetched again.
    public var lastError: TextError? { storage.lastError }

    /// Inserts `text` at `position`.
    @MainActor public mutating func insert(_ text: String, at position: Int) throws(TextError) {
        let before = storage.document.count
        guard let operation = try storage.document.insert(text, at: position) else { return }
        storage.recordLocal([operation], changes: [.insert(position: min(position, before), text: text)])
        version += 1
    }

    /// Deletes the characters in `range`.
    @MainActor public mutating func delete(_ range: Range<Int>) throws(TextError) {
        guard !range.isEmpty else { return }
        let deleted = storage.document.text(in: range)
        let operations = try storage.document.delete(range)
        storage.recordLocal(operations, changes: [.delete(position: range.lowerBound, count: range.count)], deletedText: deleted)
        version += 1
    }

    /// Replaces the characters in `range` with `text`.
    @MainActor public mutating func replace(_ range: Range<Int>, with text: String) throws(TextError) {
        try delete(range)
        try insert(text, at: range.lowerBound)
    }

    /// A cursor at `position` that stays attached to its character across remote edits.
    public func cursor(at position: Int) throws(TextError) -> TextCursor {
        try storage.document.cursor(at: position)
    }

    /// Where `cursor` stands now (nil: a character this text does not hold).
    public func position(of cursor: TextCursor) -> Int? {
        storage.document.position(of: cursor)
    }

    /// Calls `body` after every change of this text, local or remote, with what changed where (the
    /// positions of each change are in the text as the previous one left it). The observer is held
    /// weakly; the token cancels.
    @MainActor @discardableResult
    public func observe(_ observer: AnyObject, _ body: @escaping @MainActor ([TextChange], _ isRemote: Bool) -> Void) -> ObservationToken {
        storage.observers.add(observer) { event in body(event.changes, event.isRemote) }
    }

    /// The plain text (Protocol §3.1: a string).
    public func wireValue() -> JSON { .string(text) }

    /// A value that, stored over a property's text, brings the wire form's edits into it: a plain
    /// string (from a peer without operations), or `{"plain", "text"}` with the operations or state
    /// of the fragment's `text` member. Throws `ModelError` for anything else.
    public static func decode(wire: JSON, property: String, resolver: ModelResolver) throws(ModelError) -> SharedText {
        let update: SharedTextUpdate
        let plain: String
        switch wire {
        case .string(let text):
            plain = text
            update = .plain(text)
        case .object(let members):
            guard case .string(let text)? = members["plain"], let member = members["text"] else {
                throw .wrongType(property: property, expected: "a string", got: wire.typeDescription)
            }
            plain = text
            do throws(TextError) {
                update = member["runs"] != nil ? .state(member) : .operations(try TextOperation.decode(member))
            } catch {
                throw .wrongType(property: property, expected: "text operations", got: error.description)
            }
        default:
            throw .wrongType(property: property, expected: "a string", got: wire.typeDescription)
        }
        return SharedText(storage: SharedTextStorage(TextDocument(replica: TextDocument.newReplicaName(), initialText: plain)),
                          version: 0, update: update)
    }

    /// Whether the two are the same text at the same version (a set of it records nothing).
    public static func isSame(_ lhs: SharedText, _ rhs: SharedText) -> Bool {
        lhs.storage === rhs.storage && lhs.version == rhs.version && rhs.update == nil
    }

    /// The value that, stored over the text, rolls back the local change set's edit this value
    /// carries (its `old` and `new` in `ChangeSet.changes`) because the server refused it or it was
    /// never sent (`SharedTextEdit.rollBack`); nil for a value that carries no such edit.
    var rollingBack: SharedText? {
        guard case .toggle(let edit)? = update else { return nil }
        return SharedText(storage: storage, version: version, update: .rollBack(edit))
    }

    /// The operations that give the server the characters of the edit this value carries as deleted
    /// ones (`SharedTextEdit.repair`); nil for a value that carries no edit.
    var rollBackRepair: [TextOperation]? {
        guard case .toggle(let edit)? = update else { return nil }
        return edit.repair
    }

    /// For a change set restored from a fragment log, made before its `operations` (a fragment's
    /// `text` member) are applied to `value`'s text: the value that carries their edit, as a change
    /// set made in this process holds it, with the text its deletions take (when the characters are
    /// still there to read). Nil when `value` is not a shared text or there are no operations.
    static func restoredEdit(_ value: Any, operations member: JSON?) -> SharedText? {
        guard let text = value as? SharedText, let member, let operations = try? TextOperation.decode(member) else { return nil }
        let document = text.storage.document
        var deleted: [TextID: String] = [:]
        for case .delete(let id, let count) in operations {
            for piece in document.runsInOrder(id, count: count) {
                for run in document.visibleRuns(piece.id, count: piece.count) {
                    guard let position = document.position(of: TextCursor(before: run.id)) else { continue }
                    deleted[run.id] = document.text(in: position..<(position + run.count))
                }
            }
        }
        return SharedText(storage: text.storage, version: text.version, update: .toggle(SharedTextEdit(operations, deleted: deleted)))
    }

    /// Whether rolling back the edit this value carries brings deleted text back.
    var rollsBackDeletions: Bool {
        guard case .toggle(let edit)? = update else { return false }
        return edit.sentDeletions
    }

    /// The value to store when `self` is written over `current`: `current`'s text with this
    /// value's update applied (a decoded remote edit, an undo), at a new version. Values without an
    /// update, or of the same text, are stored as they are.
    @MainActor func stored(over current: SharedText) -> SharedText {
        guard let update, storage !== current.storage || update.isEdit else { return self }
        current.storage.absorb(update, isRemote: update.isRemote)
        return SharedText(storage: current.storage, version: current.version + 1, update: nil)
    }
}
