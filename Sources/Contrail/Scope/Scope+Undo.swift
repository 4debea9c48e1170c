import Foundation

/// Undo and redo of the local user's change sets.
extension Scope {
    /// Whether there is a local change set to undo.
    public var canUndo: Bool { !undoStack.isEmpty }
    /// Whether there is an undone change set to redo.
    public var canRedo: Bool { !redoStack.isEmpty }

    /// Reverts the local user's most recent change set as a new change set that syncs like any
    /// other. Remote changes are not undone. Returns the new change set.
    @discardableResult
    public func undo() -> ChangeSet? {
        flush()  // what is pending is the most recent change set: undo that one
        guard let last = undoStack.popLast() else { return nil }
        let result = replay(last, message: "Undo" + (last.message.map { " \($0)" } ?? ""), values: \.old)
        if result != nil { redoStack.append(last) }
        return result
    }

    /// Re-applies the most recently undone change set as a new change set.
    @discardableResult
    public func redo() -> ChangeSet? {
        flush()
        guard let last = redoStack.popLast() else { return nil }
        let result = replay(last, message: "Redo" + (last.message.map { " \($0)" } ?? ""), values: \.new)
        if result != nil { undoStack.append(last) }
        return result
    }

    private func replay(_ changeSet: ChangeSet, message: String, values: KeyPath<ChangeSet.Change, Any>) -> ChangeSet? {
        flush()
        isReplaying = true
        defer { isReplaying = false }
        let ordered = values == \ChangeSet.Change.old ? changeSet.changes.reversed() : changeSet.changes
        return modify(message: message, atomic: changeSet.isAtomic) {
            // Objects out of any tree get their values too: the replay may bring them back, and
            // their `add` must carry what the undo restored.
            for change in ordered where change.object.scope === self || change.object === root || change.object.scope == nil {
                change.object.setValue(change[keyPath: values], at: change.property)
            }
        }
    }
}
