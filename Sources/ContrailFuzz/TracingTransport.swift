import Contrail
import ContrailWebSocket
import Foundation

/// A transport that traces every frame it carries, prefixed with its client's name: printed with
/// `CONTRAIL_FUZZ_TRACE=1` (to trace a replayed run), or kept in memory with
/// `CONTRAIL_FUZZ_TRACE=failures` and written to a file only when the run fails (failures that
/// depend on thread timing rarely come back on a replay).
final class TracingTransport: SyncTransport {
    let frames: TypedAsyncStream<String, TransportClosed>
    private let inner: any SyncTransport
    private let name: String

    init(_ inner: any SyncTransport, name: String) {
        self.inner = inner
        self.name = name
        let source = inner.frames
        let (stream, continuation) = TypedAsyncStream<String, TransportClosed>.makeStream()
        frames = stream
        // Ends with the inner transport's frames.
        Task {
            do throws(TransportClosed) {
                for try await frame in source {
                    Self.trace("\(name) <- \(frame)")
                    continuation.yield(frame)
                }
                continuation.finish()
            } catch {
                Self.trace("\(name) <- closed \(error)")
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ frame: String) async throws(TransportClosed) {
        Self.trace("\(name) -> \(frame)")
        try await inner.send(frame)
    }

    func close(code: UInt16, reason: String) async {
        Self.trace("\(name) closes \(code)")
        await inner.close(code: code, reason: reason)
    }

    static let isEnabled = ProcessInfo.processInfo.environment["CONTRAIL_FUZZ_TRACE"] != nil
    /// Whether the trace is kept for failing runs instead of printed.
    static let keepsForFailures = ProcessInfo.processInfo.environment["CONTRAIL_FUZZ_TRACE"] == "failures"
    private static let kept = SanitizerVisibleMutex<[String]>([])

    /// Prints `line`, or keeps it for `writeKept(to:)`.
    static func trace(_ line: String) {
        if keepsForFailures { kept.withLock { $0.append(line) } } else { print(line) }
    }

    /// Forgets what was kept (a run starts).
    static func discardKept() { kept.withLock { $0.removeAll() } }

    /// Writes what was kept since the last `discardKept()` to `path`.
    static func writeKept(to path: String) {
        let text = kept.withLock { $0.joined(separator: "\n") }
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    }
}
