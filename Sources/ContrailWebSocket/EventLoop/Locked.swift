#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`: what the WebSocket stack uses instead of `Synchronization.Mutex`,
/// because ThreadSanitizer sees pthread mutexes (it intercepts them) but not `Mutex`'s futex-based
/// lock, which would make `swift test --sanitize=thread` report every locked access as a race.
///
/// `@unchecked Sendable` invariant: `value` is only read or written inside `withLock`, between
/// `pthread_mutex_lock` and `pthread_mutex_unlock` of `mutex`.
final class Locked<State>: @unchecked Sendable {
    private var value: State
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    /// A lock guarding `value`.
    init(_ value: State) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Not reentrant.
    @inline(__always)
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
