/// Why an admin action (``ContrailServer/endSession(number:)``, ``ContrailServer/importScope(_:state:)``,
/// ``ContrailServer/backup(to:)``, …) failed. `/api/admin/…` answers each with the HTTP status
/// ``status`` and ``description`` as its `error`.
public enum AdminError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No live session has this number.
    case unknownSession(Int)
    /// No scope of this name exists (``ServerOptions/scopeCreation``).
    case unknownScope(String)
    /// The scope name is not one a client may use.
    case invalidScopeName(name: String, reason: String)
    /// An import's body is not a scope state (`{"root": uuid, "objects": {uuid: {"clsName", "properties"}}}`).
    case invalidState(String)
    /// The server refused the imported state as a change set (atomic: nothing applied); the
    /// fragments' errors, first ones first.
    case importRejected([String])
    /// The action needs a data directory (``ServerOptions/dataDirectory``) and the server has none.
    case noDataDirectory
    /// The action is not available in cluster mode (the cluster's log is backed up by NATS).
    case unsupportedInCluster
    /// Over HTTP, a backup needs ``ServerOptions/backupDirectory`` (`contrail serve --backup-dir`).
    case noBackupDirectory
    /// The backup's destination exists already.
    case backupExists(path: String)
    /// A backup could not be read or is incomplete (no manifest: it did not finish).
    case invalidBackup(String)
    /// A restore target already holds scope logs: restore into an empty (or new) data directory.
    case restoreTargetNotEmpty(path: String)
    /// Reading or writing a file failed.
    case storage(String)
    /// The server is stopped.
    case stopped
    /// The point asked for is not in the history the server keeps (trimmed, compacted away, or
    /// past the scope's last change set) (§8.26).
    case historyUnavailable(String)
    /// No revision of this label was marked on the scope.
    case unknownRevision(String)
    /// A revision of this label was marked on the scope already.
    case revisionExists(String)
    /// The label cannot name a revision (``ScopeRevision/problem(with:)``).
    case invalidRevision(String)

    /// The HTTP status `/api/admin/…` answers with.
    public var status: Int {
        switch self {
        case .unknownSession, .unknownScope, .unknownRevision: 404
        case .invalidScopeName, .invalidState, .invalidRevision: 400
        case .historyUnavailable, .revisionExists: 409
        case .importRejected: 422
        case .noDataDirectory, .unsupportedInCluster, .noBackupDirectory, .backupExists, .invalidBackup, .restoreTargetNotEmpty: 409
        case .storage: 500
        case .stopped: 503
        }
    }

    /// What happened, for a person.
    public var description: String {
        switch self {
        case .unknownSession(let number): "no live session \(number)"
        case .unknownScope(let name): "no scope named '\(name.prefix(200))'"
        case .invalidScopeName(let name, let reason): "scope name '\(name.prefix(64))' is not valid: \(reason)"
        case .invalidState(let reason): "not a scope state: \(reason)"
        case .importRejected(let errors): "the import was refused, nothing changed: \(errors.prefix(5).joined(separator: "; "))"
        case .noDataDirectory: "the server keeps its scopes in memory (no --data directory)"
        case .unsupportedInCluster: "not available in cluster mode"
        case .noBackupDirectory: "the server has no backup directory (contrail serve --backup-dir DIR)"
        case .backupExists(let path): "\(path) exists already"
        case .invalidBackup(let reason): "not a complete backup: \(reason)"
        case .restoreTargetNotEmpty(let path): "\(path) holds scope logs already; restore into an empty data directory"
        case .storage(let reason): reason
        case .stopped: "the server is stopped"
        case .historyUnavailable(let reason): "not in the history kept: \(reason)"
        case .unknownRevision(let label): "no revision named '\(label.prefix(100))'"
        case .revisionExists(let label): "a revision named '\(label.prefix(100))' exists already"
        case .invalidRevision(let reason): "not a revision label: \(reason)"
        }
    }
}
