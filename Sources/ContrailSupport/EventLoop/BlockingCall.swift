import Foundation

/// Runs a call that may block (a host-name lookup, reading a trust store from disk) on a thread of
/// its own, and awaits its result. Not on Dispatch's global queues: on Linux their threads are the
/// ones Swift's cooperative pool runs on (two on a two-core machine), so a slow DNS server would
/// stall every task. Such calls are rare (one per connect by name, one per CA bundle), so a thread
/// each costs little.
package enum BlockingCall {
    /// `body`'s result, computed on a new thread named `name` (``Foundation/Thread/named(_:_:)``).
    package static func run<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
        return await withCheckedContinuation { continuation in
            Thread.named(name) { continuation.resume(returning: body()) }.start()
        }
    }
}
