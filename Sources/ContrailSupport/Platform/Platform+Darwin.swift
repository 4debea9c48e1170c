#if canImport(Darwin)
// Every module above ContrailSupport reaches the C library through this import, so no other file
// needs an `#if canImport(...)` of its own.
@_exported import Darwin

/// The few C-library calls and constants that differ between platforms, wrapped once per platform
/// (this file: Apple platforms; `Platform+Glibc.swift`: Linux), so call sites have no `#if`.
/// Everything else is the plain C library, which this module re-exports.
package enum Platform {
    /// `SOCK_STREAM` as `socket(2)` and `addrinfo.ai_socktype` take it.
    package static let streamSocketType = SOCK_STREAM

    /// Flags for `send`/`sendmsg`: none (Darwin has no `MSG_NOSIGNAL`; see ``suppressSignalOnWrite(_:)``).
    package static let sendFlags: Int32 = 0

    /// Keeps writes to `fd` from raising SIGPIPE (`SO_NOSIGPIPE`).
    package static func suppressSignalOnWrite(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Returns the allocator's free pages to the operating system: nothing to do on Darwin, whose
    /// allocator returns them by itself.
    package static func releaseFreeMemory() {}

    /// The bytes the allocator has handed out: not known on Darwin (nil).
    package static func allocatedBytes() -> Int? { nil }

    /// `close(2)`.
    @inline(__always) @discardableResult
    package static func close(_ fd: Int32) -> Int32 { Darwin.close(fd) }

    /// `listen(2)`.
    @inline(__always)
    package static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 { Darwin.listen(fd, backlog) }

    /// `accept(2)`, without the peer's address.
    @inline(__always)
    package static func accept(_ fd: Int32) -> Int32 { Darwin.accept(fd, nil, nil) }

    /// `open(2)` with a creation mode.
    @inline(__always)
    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Darwin.open(path, flags, mode) }

    /// Flushes a file to the device: `fsync`.
    @inline(__always)
    package static func syncData(_ fd: Int32) -> Int32 { fsync(fd) }

    /// Nothing here (no `SCHED_BATCH`): returns false. See the Linux version.
    @discardableResult
    package static func yieldOnWakeUp() -> Bool { false }

    /// Extends `fd`'s size by `length` bytes from `offset` (they read as zeros): `ftruncate(2)`,
    /// which has no block allocation here. False when the file system refuses.
    package static func preallocate(_ fd: Int32, offset: Int, length: Int) -> Bool {
        ftruncate(fd, off_t(offset + length)) == 0
    }

    /// A hint to bring part of `fd` into the cache ahead of use: nothing here (no `posix_fadvise`).
    package static func prefetch(_ fd: Int32, offset: Int, length: Int) {}

    /// Nanoseconds since an arbitrary fixed point from `CLOCK_UPTIME_RAW`.
    @inline(__always)
    package static func coarseMonotonicNanoseconds() -> Int64 {
        Int64(truncatingIfNeeded: clock_gettime_nsec_np(CLOCK_UPTIME_RAW))
    }

    /// The calling thread's `pthread_self()` as a number.
    package static var currentThreadID: UInt { UInt(bitPattern: pthread_self()) }

    /// Names the calling thread (what the debugger and Instruments show).
    package static func nameCurrentThread(_ name: String) {
        _ = pthread_setname_np(name)
    }

    /// The event loop backend to use when none is asked for: poll (there is no epoll).
    package static let defaultEventLoopBackend = EventLoop.Backend.poll

    /// The poller for the `.epoll` backend: poll, as epoll is Linux only.
    static func makeEpollPoller() throws(NetworkError) -> any Poller { try PollPoller() }
}
#endif
