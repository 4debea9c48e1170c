import Foundation

/// Shared texts in the queue: a refused change set's characters reach the server as deleted ones
/// before the change sets after it that are not sent yet (`SharedTextEdit.rollBack`).
///
/// Each replica numbers its characters without gaps and the server takes them only in that order,
/// so the change sets after a refused one that type into the same text would be refused too. The
/// rollback's own change set carries the repair, but it goes after them: the ones not sent yet
/// carry it first as well (it is idempotent). Those already sent are refused by the server for
/// the gap and rolled back in turn.
extension ChangeSetQueue {
    /// Puts the repair of each shared text `entry` rolls back (of the objects in `objects`, all when
    /// nil) before what the later change sets not yet sent on this wire session send for that text.
    /// O(changes of `entry` × later holders).
    func prefixTextRepairs(after entry: Entry, objects: Set<UUID>?) {
        for change in entry.changeSet.changes where change.touches(objects) {
            guard let text = change.old as? SharedText, let repair = text.rollBackRepair, !repair.isEmpty else { continue }
            let name = change.object.info.properties[change.property].name
            for later in holders(of: ChangeKey(change.object, change.property), from: entry).dropFirst() where later.index == nil {
                later.prefixText(repair, of: change.object, name: name)
            }
        }
    }
}

extension ChangeSetQueue.Entry {
    /// The change set's fragments, whole or as its ``CompactFragments/skeleton`` (the same
    /// fragments in the same order, without the collections kept as versions), with the text
    /// prefixes (`textPrefixes`) spliced into their operations (`SharedTextEdit.splice`).
    /// O(fragments), plus the operations of a prefixed text (and rebuilding the collections, whole).
    func prefixedFragments(whole: Bool) -> [SyncFragment] {
        let fragments = whole ? changeSet.fragments : changeSet.stored.skeleton
        guard !textPrefixes.isEmpty else { return fragments }
        var result = fragments
        for (index, prefixes) in textPrefixes where index < result.count {
            for (name, prefix) in prefixes {
                guard let member = result[index].textOperations?[name], let own = try? TextOperation.decode(member) else { continue }
                result[index].textOperations?[name] = TextOperation.json(SharedTextEdit.splice(prefix, into: own))
            }
        }
        return result
    }

    /// Records `operations` to go before what this change set sends for shared text `name` of
    /// `object` (after the prefixes already recorded).
    fileprivate func prefixText(_ operations: [TextOperation], of object: ModelObject, name: String) {
        let fragments = changeSet.fragments
        guard let index = changeFragment(in: fragments, of: object, writing: { fragments[$0].textOperations?[name] != nil }) else { return }
        var prefix = textPrefixes[index]?[name] ?? []
        for operation in operations { TextOperation.append(operation, to: &prefix) }
        textPrefixes[index, default: [:]][name] = prefix
    }
}
