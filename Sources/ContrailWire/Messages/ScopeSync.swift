import Foundation

/// `ScopeSync` (both directions, sequenced): one change set for a scope (Protocol §2.6).
///
/// ```json
/// {"type":"ScopeSync","index":3,"scopeIndex":0,"atomic":true,"procedure":"ChatRoom.postMessage",
///  "fragments":[…]}
/// ```
package struct ScopeSync: Sendable, Equatable {
    /// The wire `type`.
    package static let typeName = "ScopeSync"

    /// The sender's sequence number.
    package var index: Int
    /// The session's handle for the scope.
    package var scopeIndex: Int
    /// The change set, in order. May be empty.
    package var fragments: [SyncFragment]
    /// Whether the change set must apply as a whole. Omitted from the wire when nil; servers never
    /// send it in broadcasts.
    package var atomic: Bool?
    /// A procedure to run, `Model.name`. Requires `atomic` to be present.
    package var procedure: String?
    /// The change set's identity (`"changeSet"`, a §8 extension): the same change set sent again
    /// (after a new session or a server restart) carries the same id, and a server that already
    /// applied it answers without applying it twice. Omitted from the wire when nil.
    package var changeSetID: UUID?

    /// Creates the message.
    package init(index: Int, scopeIndex: Int, fragments: [SyncFragment], atomic: Bool? = nil, procedure: String? = nil,
                changeSetID: UUID? = nil) {
        self.index = index
        self.scopeIndex = scopeIndex
        self.fragments = fragments
        self.atomic = atomic
        self.procedure = procedure
        self.changeSetID = changeSetID
    }

    /// Decodes and validates the envelope ("Invalid scopeIndex", "Invalid atomic", "Invalid
    /// procedure", "Procedure must be of the format Model.procedure", "Procedure requires to be
    /// atomic", "SyncFragments not on `fragments`"), then every fragment. If the envelope is fine
    /// but fragments are not, throws `WireError.invalidScopeSyncFragments` with a reason per
    /// fragment, so a server can answer each one.
    package init(json: JSON) throws(WireError) {
        let fields = try WireFields(json, type: Self.typeName)
        index = try fields.index()
        scopeIndex = try fields.unsigned("scopeIndex", "Invalid scopeIndex")
        let elements = try fields.fragmentArray()
        switch fields.members["atomic"] {
        case nil: atomic = nil
        case .bool(let flag)?: atomic = flag
        default: throw fields.failure("Invalid atomic")
        }
        switch fields.members["procedure"] {
        case nil:
            procedure = nil
        case .string(let name)?:
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw fields.failure("Procedure must be of the format Model.procedure")
            }
            guard atomic != nil else { throw fields.failure("Procedure requires to be atomic") }
            procedure = name
        default:
            throw fields.failure("Invalid procedure")
        }
        switch fields.members["changeSet"] {
        case nil: changeSetID = nil
        case .string(let text)?:
            guard let id = UUID(wireString: text) else { throw fields.failure("Invalid changeSet") }
            changeSetID = id
        default: throw fields.failure("Invalid changeSet")
        }
        var fragments: [SyncFragment] = []
        fragments.reserveCapacity(elements.count)
        var reasons: [String?] = []
        for (position, element) in elements.enumerated() {
            do {
                let fragment = try SyncFragment(json: element)
                if reasons.isEmpty { fragments.append(fragment) } else { reasons.append(nil) }
            } catch {
                if reasons.isEmpty { reasons = Array(repeating: nil, count: position) }
                if case .invalidFragment(_, let reason) = error { reasons.append(reason) } else { reasons.append(error.description) }
            }
        }
        if !reasons.isEmpty {
            throw WireError.invalidScopeSyncFragments(index: index, scopeIndex: scopeIndex, reasons: reasons)
        }
        self.fragments = fragments
    }

    /// The wire object.
    package var json: JSON {
        var members: [String: JSON] = [
            "type": .string(Self.typeName), "index": .int(Int64(index)), "scopeIndex": .int(Int64(scopeIndex)),
            "fragments": .array(fragments.map(\.json)),
        ]
        if let atomic { members["atomic"] = .bool(atomic) }
        if let procedure { members["procedure"] = .string(procedure) }
        if let changeSetID { members["changeSet"] = .string(changeSetID.wireString) }
        return .object(members)
    }
}
