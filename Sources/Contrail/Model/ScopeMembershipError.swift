import Foundation

/// A link that the one-scope rule refuses. An object belongs to one scope at most, so linking a
/// member of another scope moves it, and its old scope lets go of it. A non-optional model
/// reference cannot let go; linking an object that one holds is refused instead: the set is
/// undone (the property keeps its value, nobody is notified, nothing is recorded), and the scope
/// the link was made in reports this error to `Scope.onLinkRefused`.
public enum ScopeMembershipError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `object` (of class `className`) belongs to scope `scope`, where `holder`'s non-optional
    /// reference `property` holds it (it, or an object above it that would move with it).
    case heldByNonOptionalReference(object: UUID, className: String, scope: String, holder: UUID, property: String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .heldByNonOptionalReference(let object, let className, let scope, let holder, let property):
            "cannot move \(className) \(object.uuidString.lowercased()) out of scope '\(scope)': the non-optional reference "
                + "'\(property)' of \(holder.uuidString.lowercased()) holds it there (declare it optional to let it move); the link was refused"
        }
    }
}
