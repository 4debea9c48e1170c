import Contrail
import ContrailWebSocket
import Foundation

/// A transport that prints every frame it carries, prefixed with its client's name (set
/// `CONTRAIL_FUZZ_TRACE=1` to trace a replayed run).
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
                    print("\(name) <- \(frame)")
                    continuation.yield(frame)
                }
                continuation.finish()
            } catch {
                print("\(name) <- closed \(error)")
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ frame: String) async throws(TransportClosed) {
        print("\(name) -> \(frame)")
        try await inner.send(frame)
    }

    func close(code: UInt16, reason: String) async {
        print("\(name) closes \(code)")
        await inner.close(code: code, reason: reason)
    }

    static let isEnabled = ProcessInfo.processInfo.environment["CONTRAIL_FUZZ_TRACE"] != nil
}
