/// Why a fragment log could not be read or written.
public enum FragmentLogError: Error, Equatable, CustomStringConvertible {
    /// The file itself is damaged or unreadable (the offset is in the underlying error).
    case file(LogFileError)
    /// A record at `offset` holds something that is not a change set.
    case badRecord(offset: Int, reason: String)
    /// A record at `offset` could not be applied to the scope.
    case apply(offset: Int, ModelError)
    /// The log is not attached to a scope.
    case notAttached
    /// A record holds objects of `className` written by a newer version of the app (model version
    /// `version`; this app reads up to `supported`). Nothing of the log is applied.
    case newerModel(className: String, version: Int, supported: Int)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .file(let error): "fragment log: \(error)"
        case .badRecord(let offset, let reason): "fragment log record at offset \(offset) is not a change set: \(reason)"
        case .apply(let offset, let error): "fragment log record at offset \(offset) cannot be applied: \(error)"
        case .notAttached: "fragment log is not attached to a scope"
        case .newerModel(let className, let version, let supported):
            "fragment log holds '\(className)' objects of model version \(version), written by a newer version of the app (this one reads up to \(supported)); nothing was restored"
        }
    }
}
