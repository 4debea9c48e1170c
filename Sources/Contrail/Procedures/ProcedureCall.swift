import Foundation

/// A procedure call a scope's next change set makes: the name it sends, and the constraints the
/// client checks before sending (nil: the server alone checks).
@MainActor
struct ProcedureCall {
    let name: String
    let constraints: [ProcedureConstraint]?

    /// Whether `changeSet` matches the constraints (§4.7, with the iOS client's rules: "old" is the
    /// remembered original, a key must exist on the class, an `add`'s insert needs a non-empty
    /// array). O(fragments × constraints × properties).
    func allows(_ changeSet: ChangeSet) -> Bool {
        guard let constraints else { return true }
        var originals: [UUID: [String: JSON]] = [:]
        var classes: [UUID: ModelClassInfo] = [:]
        for change in changeSet.changes {
            let property = change.object.info.properties[change.property]
            originals[change.object.uuid, default: [:]][property.name] = change.object.info.coder(at: change.property).wireValue(of: change.old)
            classes[change.object.uuid] = change.object.info
        }
        if let scope = changeSet.scope {
            for fragment in changeSet.fragments where classes[fragment.uuid] == nil {
                classes[fragment.uuid] = scope.object(for: fragment.uuid)?.info
            }
        }
        return changeSet.fragments.allSatisfy { fragment in
            constraints.contains { constraint in
                let names = Set(classes[fragment.uuid]?.properties.map(\.name) ?? [])
                let keysExist = constraint.properties.keys.allSatisfy(names.contains)
                let nonEmptyInserts = fragment.kind != .add || constraint.properties.allSatisfy { key, expectation in
                    expectation != .arrayInsert || !(fragment.properties[key]?.arrayValue?.isEmpty ?? true)
                }
                return keysExist && nonEmptyInserts && constraint.matches(fragment) { uuid, key in originals[uuid]?[key] }
            }
        }
    }
}

extension Scope {
    /// Runs `changes` as one atomic change set that calls the server procedure `procedure`
    /// (`Model.name`, Protocol §4.6). Given `constraints` (the procedure's declaration), the
    /// change set is checked before it is sent: one that does not match is reverted locally,
    /// marked `reverted`, and never sent. Without them the server alone checks.
    ///
    /// ```swift
    /// scope.modify(procedure: "Canvas.rename", constraints: rename.constraints) { canvas.name = "New" }
    /// ```
    @discardableResult
    public func modify(procedure: String, constraints: [ProcedureConstraint]? = nil, message: String? = nil,
                       _ changes: () throws -> Void) rethrows -> ChangeSet? {
        flush()
        flushProcedure = ProcedureCall(name: procedure, constraints: constraints)
        defer { flushProcedure = nil }
        return try modifyAtomically(message: message, changes)
    }
}
