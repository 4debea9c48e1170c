/// Why a procedure call or a procedure declaration was refused.
public enum ProcedureError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No declared procedure is on this model: "No such model 'M' for procedure call with procedure 'M.p'".
    case noSuchModel(model: String, procedure: String)
    /// The model has no procedure of this name: "No such procedure 'p' for model 'M'".
    case noSuchProcedure(model: String, procedure: String)
    /// A fragment matched no constraint: "Changes do not match the procedure constraints".
    case constraintsNotMatched
    /// The procedure's handler refused the call.
    case handlerFailed(String)
    /// A declaration (file or code) is malformed.
    case invalidDeclaration(String)

    /// The original server's text for each refusal (§4.6).
    public var description: String {
        switch self {
        case .noSuchModel(let model, let procedure):
            return "No such model '\(model)' for procedure call with procedure '\(model).\(procedure)'"
        case .noSuchProcedure(let model, let procedure): return "No such procedure '\(procedure)' for model '\(model)'"
        case .constraintsNotMatched: return "Changes do not match the procedure constraints"
        case .handlerFailed(let reason): return reason
        case .invalidDeclaration(let reason): return "invalid procedure declaration: \(reason)"
        }
    }
}
