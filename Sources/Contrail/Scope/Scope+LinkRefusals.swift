import Foundation

/// Links that the one-scope rule refuses (`ScopeMembershipError`).
extension Scope {
    /// Calls `body` when a link into this scope (a property set on one of its members, or `root`)
    /// is refused because it would move an object that a non-optional reference in another scope
    /// holds. The set has been undone when `body` runs: the property kept its value, nobody was
    /// notified and nothing was recorded in either scope.
    ///
    /// ```swift
    /// scope.onLinkRefused(self) { error in print(error) }
    /// ```
    @discardableResult
    public func onLinkRefused(_ observer: AnyObject, _ body: @escaping @MainActor (ScopeMembershipError) -> Void) -> ObservationToken {
        linkRefusals.add(observer, body)
    }

    /// Reports a refused link to `onLinkRefused`'s observers; with none, to standard error, so a
    /// refusal is never silent.
    func reportRefusedLink(_ error: ScopeMembershipError) {
        guard linkRefusals.hasLiveObservers else {
            FileHandle.standardError.write(Data("Contrail: scope '\(name)': \(error)\n".utf8))
            return
        }
        linkRefusals.notify(error)
    }
}
