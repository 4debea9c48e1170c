import Foundation

extension Thread {
    /// A thread (not started) that runs `body` under `name`, which `top -H`, `ps -L` and `perf` show.
    /// The thread names itself with `pthread_setname_np` before `body`: on Linux, Foundation's
    /// `Thread.name` reaches the system only once the starting thread has recorded the new one's
    /// handle, which it may not have done yet when the new thread begins (set before `start()`, it
    /// never does), and the thread keeps the name of the one that made it (a Dispatch worker's,
    /// "…root.default-qos"). Linux keeps at most 15 bytes of a name: a longer one is cut to its first
    /// 15 (the system would refuse it).
    package static func named(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let shown = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        let thread = Thread {
            Platform.nameCurrentThread(shown)
            body()
        }
        thread.name = shown  // what Foundation itself reports as the thread's name
        return thread
    }
}
