/// When a ``LogFile`` forces its appended records to stable storage (`fdatasync`).
///
/// Whatever the policy, ``LogFile/sync()`` syncs on demand and ``LogFile/close()`` writes out every
/// buffered record.
public enum FsyncPolicy: Sendable, Equatable {
    /// Never sync on its own. Appends are buffered in memory and written when the buffer fills, on
    /// ``LogFile/flush()``, ``LogFile/sync()`` and ``LogFile/close()``. Fastest; a crash of the
    /// process loses the buffered records, a crash of the machine whatever the OS had not written.
    case never
    /// Write and sync every record before `append` returns. Nothing acknowledged is ever lost.
    case everyRecord
    /// Buffer appends and write + sync them at most once per interval: on the first append after
    /// the interval has passed, on ``LogFile/syncIfDue()`` (call it from a timer to bound the
    /// delay when appends stop), and on close. A crash loses at most about one interval.
    case interval(Duration)
}
