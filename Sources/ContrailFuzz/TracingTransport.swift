import Contrail
import Foundation

/// A transport that prints every frame it carries, prefixed with its client's name (set
/// `CONTRAIL_FUZZ_TRACE=1` to trace a replayed run).
final class TracingTransport: SyncTransport {
    let frames: AsyncThrowingStream<String, any Error>
    private let inner: any SyncTransport
    private let name: String

    init(_ inner: any SyncTransport, name: String) {
        self.inner = inner
        self.name = name
        let source = inner.frames
        frames = AsyncThrowingStream { continuation in
            let task = Task {
                do {
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
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func send(_ frame: String) async throws {
        print("\(name) -> \(frame)")
        try await inner.send(frame)
    }

    func close(code: UInt16, reason: String) async {
        print("\(name) closes \(code)")
        await inner.close(code: code, reason: reason)
    }

    static let isEnabled = ProcessInfo.processInfo.environment["CONTRAIL_FUZZ_TRACE"] != nil
}
