/// A procedure a client may call (Protocol §4.6): `Model.name` and the constraints its change
/// set must match. The same declaration serves the server's check and the client's check before
/// sending.
///
/// ```json
/// {"name": "Canvas.rename", "constraints": [{"type": "change", "clsName": "Canvas",
///   "properties": {"name": {"$hasNewValue": true}}}]}
/// ```
public struct ProcedureDeclaration: Sendable, Equatable {
    /// The class name the procedure is declared on.
    public var model: String
    /// The procedure's name within the model.
    public var procedure: String
    /// The constraints (at least one, as the original requires).
    public var constraints: [ProcedureConstraint]

    /// `Model.procedure`.
    public var name: String { "\(model).\(procedure)" }

    /// A declaration named `Model.procedure` with its constraints.
    public init(_ name: String, constraints: [ProcedureConstraint]) throws(ProcedureError) {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw .invalidDeclaration("'\(name)' is not of the form Model.procedure")
        }
        guard !constraints.isEmpty else { throw .invalidDeclaration("'\(name)' lists no constraints") }
        model = String(parts[0])
        procedure = String(parts[1])
        self.constraints = constraints
    }

    /// Reads `{"name": "Model.procedure", "constraints": [constraint…]}`.
    public init(json: JSON) throws(ProcedureError) {
        guard case .string(let name)? = json["name"] else { throw .invalidDeclaration("procedure needs a name") }
        guard case .array(let list)? = json["constraints"] else { throw .invalidDeclaration("'\(name)' needs constraints") }
        var constraints: [ProcedureConstraint] = []
        for element in list { constraints.append(try ProcedureConstraint(json: element)) }
        try self.init(name, constraints: constraints)
    }

    /// Reads `{"procedures": [declaration…]}`, the file `contrail serve --procedures` takes.
    public static func list(json: JSON) throws(ProcedureError) -> [ProcedureDeclaration] {
        guard case .array(let list)? = json["procedures"] else { throw .invalidDeclaration("the file needs a procedures array") }
        var declarations: [ProcedureDeclaration] = []
        for element in list { declarations.append(try ProcedureDeclaration(json: element)) }
        return declarations
    }

    /// Finds the declaration `call` (`Model.procedure`) names among `declarations`, with the
    /// original's errors for an unknown model or procedure. O(declarations).
    public static func resolve(_ call: String, in declarations: [ProcedureDeclaration]) throws(ProcedureError) -> ProcedureDeclaration {
        let parts = call.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let model = parts.first ?? call
        let procedure = parts.count > 1 ? parts[1] : ""
        let onModel = declarations.filter { $0.model == model }
        guard !onModel.isEmpty else { throw .noSuchModel(model: model, procedure: procedure) }
        guard let found = onModel.first(where: { $0.procedure == procedure }) else {
            throw .noSuchProcedure(model: model, procedure: procedure)
        }
        return found
    }
}
