import ContrailWire
import Foundation

/// A procedure the server runs (Protocol §4.6): its declaration (name and constraints) and a
/// handler that may return follow-up updates.
///
/// ```swift
/// let rename = try ServerProcedure(ProcedureDeclaration("Canvas.rename", constraints: [
///     ProcedureConstraint(kind: .change, className: "Canvas", properties: ["name": .hasNewValue])])) { call in
///     [SyncFragment(kind: .change, uuid: call.fragments[0].uuid, className: "Canvas", properties: ["renamedAt": 1])]
/// }
/// options.procedures = [rename]
/// ```
public struct ServerProcedure: Sendable {
    /// One call of a procedure, as the handler sees it.
    public struct Call: Sendable {
        /// The scope's name.
        public let scopeName: String
        /// The call's fragments (already checked against the constraints).
        public let fragments: [SyncFragment]
        /// Who called: the calling session's identity (its user and grants; it may write the scope).
        public let identity: SessionIdentity
    }

    /// The name and constraints.
    public let declaration: ProcedureDeclaration
    /// Runs before the call's fragments are applied, inside the scope's serialisation (keep it
    /// short; it must not block). Throwing rejects the whole ScopeSync; the fragments it returns
    /// are applied after the call's and go to every subscribed session, the caller included.
    public let handler: @Sendable (Call) throws(ProcedureError) -> [SyncFragment]

    /// A procedure; the default handler does nothing (as the original's default procedure).
    public init(_ declaration: ProcedureDeclaration,
                handler: @escaping @Sendable (Call) throws(ProcedureError) -> [SyncFragment] = { _ in [] }) {
        self.declaration = declaration
        self.handler = handler
    }

    /// Procedures with the default handler from a declarations file's JSON (`{"procedures": […]}`).
    public static func list(json: JSON) throws(ProcedureError) -> [ServerProcedure] {
        try ProcedureDeclaration.list(json: json).map { ServerProcedure($0) }
    }

    /// Checks and runs the procedure `name` names for `fragments`: resolves it (the original's
    /// errors for an unknown model or procedure), matches the constraints against the scope's
    /// current values (`old`), then runs the handler. Returns its follow-up updates.
    /// `identity`: the caller's; nil (no session, e.g. a change set from another cluster server) runs no handler.
    static func run(_ name: String, among procedures: [ServerProcedure], scopeName: String, fragments: [SyncFragment],
                    identity: SessionIdentity?, old: (UUID, String) -> JSON?) throws(ProcedureError) -> [SyncFragment] {
        let declaration = try ProcedureDeclaration.resolve(name, in: procedures.map(\.declaration))
        guard ProcedureConstraint.allMatch(declaration.constraints, fragments, old: old) else { throw .constraintsNotMatched }
        guard let procedure = procedures.first(where: { $0.declaration == declaration }) else {
            throw .noSuchProcedure(model: declaration.model, procedure: declaration.procedure)
        }
        guard let identity else { throw .noSuchProcedure(model: declaration.model, procedure: declaration.procedure) }
        return try procedure.handler(Call(scopeName: scopeName, fragments: fragments, identity: identity))
    }
}
