import CContrailSystem
import Synchronization

/// A `Synchronization.Mutex` whose hand-overs ThreadSanitizer sees. `Mutex` locks with a futex,
/// which TSan does not intercept, so under `swift test --sanitize=thread` every access to a
/// `Mutex`-guarded value from two threads is reported as a race. This one tells TSan that each
/// critical section acquires and releases the lock (at the address of a marker object that exists
/// only in TSan builds); elsewhere it is a `Mutex` and one nil pointer.
///
/// `withLock` is inlinable so that callers in other modules get it specialised for their value and
/// result (unspecialised, each call looks up generic metadata at run time). The type is `public` for
/// that alone (its members stay `package`): Swift 6.3 does not specialise an `@inlinable` member of
/// a `package` type across modules, and every lock of the server then went through the generic copy.
public struct SanitizerVisibleMutex<Value: ~Copyable>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>
    /// The address TSan's annotations name; nil unless the TSan runtime is linked.
    @usableFromInline let marker: SanitizerMarker?

    /// A lock guarding `value`.
    package init(_ value: consuming sending Value) {
        mutex = Mutex(value)
        marker = ccontrail_tsan_active() != 0 ? SanitizerMarker() : nil
    }

    /// Runs `body` with exclusive access to the value, as `Mutex.withLock`. Not reentrant.
    @inlinable
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            guard let marker else { return try body(&value) }
            let address = Unmanaged.passUnretained(marker).toOpaque()
            ccontrail_tsan_acquire(address)
            defer { ccontrail_tsan_release(address) }
            return try body(&value)
        }
    }
}

/// `@unchecked Sendable` invariant: as for `Mutex`, the value is only reached inside `withLock`.
extension SanitizerVisibleMutex: @unchecked Sendable where Value: ~Copyable {}

/// Whether this process runs under ThreadSanitizer (its runtime is linked), which makes everything
/// several times slower: for tests whose timings must leave room for it.
package var isUnderThreadSanitizer: Bool { ccontrail_tsan_active() != 0 }

/// The object whose address names a `SanitizerVisibleMutex` to ThreadSanitizer.
@usableFromInline
final class SanitizerMarker: Sendable {
    @usableFromInline init() {}
}
