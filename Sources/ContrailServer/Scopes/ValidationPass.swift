import ContrailWire
import Foundation

/// One validation round of a change set in ``ScopeStore``: a plan per fragment and the state the
/// accepted ones would leave, not yet committed.
struct ValidationPass {
    /// What one fragment would do, or why it fails.
    struct Plan {
        var error: WireErrorBody?
        var isNew = false
        /// An `add` of an object the scope deleted, brought back with its last state.
        var revived = false
        var className = ""
        /// The values to set (references lowercased, collections merged).
        var values: [String: JSON] = [:]
        /// Values that differ from what the client sent (merged collections), for its reply.
        var modifications: [String: JSON] = [:]
        /// (property, target) for every reference the fragment sets.
        var references: [(String, UUID)] = []
        /// The `text` member of the accepted fragment: the operations applied (§8.21).
        var texts: [String: JSON] = [:]
        /// The `counter` member of the accepted fragment: the deltas summed (§8.21).
        var counters: [String: Int64] = [:]
    }

    var plans: [Plan]
    /// UUID → class name of the objects added by this message.
    var temporaries: [UUID: String] = [:]
    /// Objects as the accepted fragments leave them.
    var working: [UUID: StoredObject] = [:]
    /// Kinds learnt by the accepted fragments.
    var kinds: [KindKey: PropertyKind] = [:]
    /// Whether a reference or collection of an object the scope held changed value (what made
    /// every commit collect garbage before it could tell when nothing became unreachable).
    var referenceChanged = false
    /// Whether such a value lost an object it named, so objects may have lost their last parent.
    var mayOrphan = false
    /// Deleted objects brought back because a written object references them (no fragment of
    /// their own), in the order found.
    var revived: [UUID] = []

    init(count: Int) {
        plans = Array(repeating: Plan(), count: count)
    }

    /// Failures that follow from this round: accepted fragments referencing an added object whose
    /// add failed, and added objects that no accepted fragment references ("No parents").
    func followUpFailures(fragments: [SyncFragment]) -> [Int: WireErrorBody] {
        var failures: [Int: WireErrorBody] = [:]
        var alive: Set<UUID> = []
        for (index, plan) in plans.enumerated() where plan.error == nil && plan.isNew {
            alive.insert(fragments[index].uuid)
        }
        var parented: Set<UUID> = []
        for (index, plan) in plans.enumerated() where plan.error == nil {
            for (key, target) in plan.references where temporaries[target] != nil {
                if alive.contains(target) {
                    if target != fragments[index].uuid { parented.insert(target) }
                } else if failures[index] == nil {
                    failures[index] = WireErrorBody(message: "No such ModelObject '\(target.wireString)' at '\(key)'")
                }
            }
        }
        for (index, plan) in plans.enumerated() where plan.error == nil && plan.isNew && failures[index] == nil {
            if !parented.contains(fragments[index].uuid) {
                failures[index] = WireErrorBody(message: "No parents, parent sync fragment failed")
            }
        }
        return failures
    }

    /// The first fragment that fails, in this round or in `extra`.
    func firstFailure(among count: Int, extra: [Int: WireErrorBody]) -> (index: Int, error: WireErrorBody)? {
        for index in 0..<count {
            if let error = plans[index].error ?? extra[index] { return (index, error) }
        }
        return nil
    }
}
