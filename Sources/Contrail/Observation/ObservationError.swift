/// A misuse of the observation API, reported instead of trapping.
public enum ObservationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key path names neither a `@Property` nor a composite property of the class
    /// (for example `\.uuid`, or a plain stored `var`): there is nothing to observe.
    case notAProperty(className: String, keyPath: String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .notAProperty(let className, let keyPath):
            "\(keyPath) is neither a @Property nor a composite property of \(className): only those can be observed"
        }
    }
}
