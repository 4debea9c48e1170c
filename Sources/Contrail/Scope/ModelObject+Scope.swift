/// A model object's scope, and the observation of it joining and leaving one. The model layer
/// knows a scope only as the object's `ModelObjectHost`.
extension ModelObject {
    /// The scope the object is attached to, if any.
    public var scope: Scope? { host as? Scope }

    /// Calls `body` when the object joins a scope.
    @discardableResult
    public func observeAttach(_ observer: AnyObject, _ body: @escaping @MainActor (Scope) -> Void) -> ObservationToken {
        addObserver(observer, .attach, .host { host in if let scope = host as? Scope { body(scope) } })
    }

    /// Calls `body` when the object leaves its scope (it lost its last attached parent).
    @discardableResult
    public func observeDetach(_ observer: AnyObject, _ body: @escaping @MainActor (Scope) -> Void) -> ObservationToken {
        addObserver(observer, .detach, .host { host in if let scope = host as? Scope { body(scope) } })
    }
}
