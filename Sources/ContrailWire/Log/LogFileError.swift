import ContrailSupport

/// Why a ``LogFile`` operation failed.
public enum LogFileError: Error, Equatable, CustomStringConvertible {
    /// A system call failed: `operation` (e.g. "open", "write", "fsync") on `path` set `errno`.
    case io(path: String, errno: Int32, operation: String)
    /// The file does not start with a Contrail log header: it is not a log, or its header is damaged.
    case badHeader(path: String)
    /// The file is a Contrail log of a format version this build cannot read.
    case unsupportedVersion(path: String, version: UInt32)
    /// The record at `offset` is damaged and intact data follows it, so it is not a torn tail;
    /// or it is intact but unreadable here (unknown kind, longer than `maxRecordSize`).
    case corruptRecord(offset: Int, reason: String)
    /// A payload of this many bytes is longer than the log's `maxRecordSize` (or 4 GiB).
    case recordTooLarge(Int)
    /// The disk (or the user's quota) is full; nothing of the failed write was kept.
    case diskFull(path: String)
    /// Another `LogFile` (in this or another process) has the file open for writing.
    case locked(path: String)
    /// The log was closed, or an earlier failed sync left it in an unknown state; reopen it.
    case unusable(path: String, reason: String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .io(let path, let code, let operation):
            "\(operation) failed on \(path): \(String(cString: strerror(code))) (errno \(code))"
        case .badHeader(let path):
            "\(path) is not a Contrail log file (missing or damaged header)"
        case .unsupportedVersion(let path, let version):
            "\(path) is a Contrail log of format version \(version); this build reads version \(LogFormat.version)"
        case .corruptRecord(let offset, let reason):
            "corrupt log record at offset \(offset): \(reason)"
        case .recordTooLarge(let size):
            "a log record of \(size) bytes is larger than the allowed maximum"
        case .diskFull(let path):
            "no space left on the device holding \(path)"
        case .locked(let path):
            "\(path) is already open for writing by another LogFile or process"
        case .unusable(let path, let reason):
            "log \(path) can no longer be used: \(reason)"
        }
    }

    /// The error for a failed system call, mapping ENOSPC / EDQUOT to ``diskFull(path:)``.
    static func system(_ code: Int32, _ operation: String, _ path: String) -> LogFileError {
        if code == ENOSPC || code == EDQUOT { return .diskFull(path: path) }
        return .io(path: path, errno: code, operation: operation)
    }
}
