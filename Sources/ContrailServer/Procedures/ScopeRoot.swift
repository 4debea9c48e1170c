import ContrailWire
import Foundation

/// The root a new scope starts with: its class name and property values. The original server's app
/// sets a root model, so a fresh scope's `ScopeState` carries that class and its properties; a
/// schema-agnostic server learns them only from a declaration (else from the first client change).
///
/// ```json
/// {"roots": {"Canvas": {"clsName": "Canvas", "properties": {"name": "Shapes Demo"}}}}
/// ```
public struct ScopeRoot: Sendable, Equatable {
    /// The root's class name.
    public var className: String
    /// The root's initial property values (wire values).
    public var properties: [String: JSON]

    /// A root declaration.
    public init(className: String, properties: [String: JSON] = [:]) {
        self.className = className
        self.properties = properties
    }

    /// Reads `{"roots": {scopeName: {"clsName": …, "properties"?: {…}}}}`; no `roots` key: none.
    public static func list(json: JSON) throws(ProcedureError) -> [String: ScopeRoot] {
        guard let roots = json["roots"] else { return [:] }
        guard case .object(let members) = roots else { throw .invalidDeclaration("roots must be an object") }
        var result: [String: ScopeRoot] = [:]
        for (scope, value) in members {
            guard case .string(let className)? = value["clsName"], !className.isEmpty else {
                throw .invalidDeclaration("root of '\(scope)' needs a clsName")
            }
            result[scope] = ScopeRoot(className: className, properties: value["properties"]?.objectValue ?? [:])
        }
        return result
    }

    /// The change that gives a root without a class this declaration's class and values.
    func fragment(rootUUID: UUID) -> SyncFragment {
        SyncFragment(kind: .change, uuid: rootUUID, className: className, properties: properties)
    }
}
