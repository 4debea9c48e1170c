import ContrailWire
import Foundation

/// What one change set's collection edits (§8.24) came to on the server: each edit turned into the
/// array and base of §8.4 before the change set is applied (so the merge is the one of today, on
/// the same three arrays), then the reply trimmed of values the sender already has, and the
/// change set's log record written as edits of the values the scope had before it.
struct CollectionEdits {
    private struct Key: Hashable {
        let uuid: UUID
        let property: String
    }

    /// Fragment index → collection key → the sender's new value, for collections sent as edits of
    /// the current value.
    private var sentOnCurrent: [Int: [String: [UUID]]] = [:]
    /// The senders' new values of collections sent with a base or as edits (a later edit may name one).
    private var sentValues: [[UUID]] = []
    /// The value each collection written by the change set had before it (once per key).
    private var priors: [Key: [UUID]] = [:]
    private var writtenTwice: Set<Key> = []

    /// Whether the change set wrote no collection.
    var isEmpty: Bool { sentOnCurrent.isEmpty && priors.isEmpty && sentValues.isEmpty }

    /// Turns every collection edit of `fragments` into an array with its base: the collection's
    /// current value when the edit names it, else a value `recent` kept; when neither is the base,
    /// the edit applied loosely to the current value (``CollectionEdit/appliedLoosely(to:)``) with
    /// the current value as base. Notes the prior value of every collection the fragments write.
    /// O(total collection sizes).
    mutating func resolve(_ fragments: inout [SyncFragment], in store: ScopeStore, recent: RecentCollections?) {
        for index in fragments.indices where fragments[index].kind == .change {
            let uuid = fragments[index].uuid
            if let edits = fragments[index].collectionEdits {
                var resolved = fragments[index]
                resolved.collectionEdits = nil
                for key in edits.keys.sorted() {
                    guard let edit = edits[key] else { continue }
                    let current = store.collectionValue(uuid, key) ?? []
                    let onCurrent = edit.isBase(current)
                    let base = onCurrent ? current : recent?.base(of: edit)
                    let new = base.flatMap(edit.applied(to:)) ?? edit.appliedLoosely(to: current)
                    resolved.properties[key] = .array(new.map { .string($0.wireString) })
                    resolved.bases = (resolved.bases ?? [:]).merging([key: base ?? current]) { _, new in new }
                    // Made on the current value, the merge is the edit's own value, which the sender
                    // holds (it has merged nothing since: anything it received the scope had before,
                    // so the current value would differ). Otherwise the reply carries the merge.
                    if onCurrent { sentOnCurrent[index, default: [:]][key] = new }
                    sentValues.append(new)
                }
                fragments[index] = resolved
            } else if let bases = fragments[index].bases, recent != nil {
                for key in bases.keys {
                    if let new = fragments[index].properties[key]?.uuidElements { sentValues.append(new) }
                }
            }
            for (key, value) in fragments[index].properties {
                guard case .array = value, let prior = store.collectionValue(uuid, key) else { continue }
                let collection = Key(uuid: uuid, property: key)
                if priors.updateValue(prior, forKey: collection) != nil { writtenTwice.insert(collection) }
            }
        }
    }

    /// Drops from `replies` a merged collection equal to what its sender sent as an edit of the
    /// current value (the sender has it already), and keeps the values the change set made in
    /// `recent`. O(collection sizes).
    func settle(_ replies: inout [FragmentReply], store: ScopeStore, recent: inout RecentCollections?) {
        for (index, collections) in sentOnCurrent where index < replies.count {
            for (key, new) in collections {
                guard case .array(let merged)? = replies[index].modifications?[key], merged.count == new.count,
                      zip(merged, new).allSatisfy({ $0.stringValue == $1.wireString })
                else { continue }
                replies[index].modifications?[key] = nil
                if replies[index].modifications?.isEmpty == true { replies[index].modifications = nil }
            }
        }
        guard recent != nil else { return }
        for new in sentValues { recent?.insert(new) }
        for (key, prior) in priors {
            recent?.insert(prior)
            if let value = store.collectionValue(key.uuid, key.property) { recent?.insert(value) }
        }
    }

    /// `accepted` as its log record holds it: each collection the change set wrote once, as an edit
    /// of the value it had before (replayed onto exactly that value), where that is shorter.
    /// O(collection sizes).
    func compacted(_ accepted: [SyncFragment]) -> [SyncFragment] {
        guard !priors.isEmpty else { return accepted }
        return accepted.map { fragment in
            guard fragment.kind == .change else { return fragment }
            var withBases = fragment
            for key in fragment.properties.keys {
                let collection = Key(uuid: fragment.uuid, property: key)
                guard !writtenTwice.contains(collection), let prior = priors[collection] else { continue }
                withBases.bases = (withBases.bases ?? [:]).merging([key: prior]) { _, new in new }
            }
            guard withBases.bases != nil else { return fragment }
            var compact = withBases.withCollectionEdits()
            compact.bases = nil  // what stays an array replaces the value, as in any record
            return compact
        }
    }

    /// Log-record fragments with their collection edits applied to the scope's values (a replay,
    /// which reaches each record on exactly the values it was written against): arrays that replace
    /// the values. Nil when an edit does not fit (a damaged log). O(collection sizes).
    static func replayed(_ fragments: [SyncFragment], onto store: ScopeStore) -> [SyncFragment]? {
        var result: [SyncFragment] = []
        result.reserveCapacity(fragments.count)
        for fragment in fragments {
            guard let resolved = fragment.replacingCollectionEdits(base: { key, _ in store.collectionValue(fragment.uuid, key) ?? [] })
            else { return nil }
            result.append(resolved)
        }
        return result
    }
}
