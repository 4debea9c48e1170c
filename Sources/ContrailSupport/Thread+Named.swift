import Foundation

extension Thread {
    /// A thread (not started) that runs `body` under `name`, which `top -H`, `ps -L` and `perf` show.
    /// The name is set from the thread itself: on Linux, Foundation's `Thread.name` set before
    /// `start()` does not reach the system, and the thread keeps the name of the one that made it
    /// (a Dispatch worker's, "…root.default-qos"). Linux keeps at most 15 bytes of a name: a longer
    /// one is cut to its first 15 (rather than refused, as the system would).
    package static func named(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let shown = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        return Thread {
            Thread.current.name = shown
            body()
        }
    }
}
