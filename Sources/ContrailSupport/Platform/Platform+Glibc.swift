#if canImport(Glibc)
// Every module above ContrailSupport reaches the C library through this import, so no other file
// needs an `#if canImport(...)` of its own.
@_exported import Glibc
import CContrailSystem

/// The few C-library calls and constants that differ between platforms, wrapped once per platform
/// (this file: Linux with Glibc; `Platform+Darwin.swift`: Apple platforms), so call sites have no
/// `#if`. Everything else is the plain C library, which this module re-exports.
package enum Platform {
    /// `SOCK_STREAM` as `socket(2)` and `addrinfo.ai_socktype` take it.
    package static let streamSocketType = Int32(SOCK_STREAM.rawValue)

    /// Flags for `send`/`sendmsg` that keep a vanished peer from raising SIGPIPE (`MSG_NOSIGNAL`).
    package static let sendFlags = Int32(MSG_NOSIGNAL)

    /// Keeps writes to `fd` from raising SIGPIPE. Nothing to do on Linux, where ``sendFlags`` does it.
    @inline(__always)
    package static func suppressSignalOnWrite(_ fd: Int32) {}

    /// `close(2)`.
    @inline(__always) @discardableResult
    package static func close(_ fd: Int32) -> Int32 { Glibc.close(fd) }

    /// `listen(2)`.
    @inline(__always)
    package static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 { Glibc.listen(fd, backlog) }

    /// `accept(2)`, without the peer's address.
    @inline(__always)
    package static func accept(_ fd: Int32) -> Int32 { Glibc.accept(fd, nil, nil) }

    /// `open(2)` with a creation mode.
    @inline(__always)
    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }

    /// Flushes a file's data to the device: `fdatasync` (the size update needed to read appended data
    /// is included).
    @inline(__always)
    package static func syncData(_ fd: Int32) -> Int32 { fdatasync(fd) }

    /// Puts the calling thread in the `SCHED_BATCH` policy: its wake-ups no longer preempt the
    /// thread that woke it (a background writer woken by every append would otherwise take the
    /// appending thread's CPU right at the wake-up). Best effort; returns whether it took.
    @discardableResult
    package static func yieldOnWakeUp() -> Bool {
        var parameters = sched_param()
        parameters.sched_priority = 0
        return sched_setscheduler(0, 3 /* SCHED_BATCH, behind _GNU_SOURCE in the headers */, &parameters) == 0
    }

    /// Allocates `length` bytes of `fd` from `offset` and extends its size over them (they read as
    /// zeros): `posix_fallocate(3)`, which is `fallocate(2)` where the file system has it. False
    /// when it refuses (no space, say).
    package static func preallocate(_ fd: Int32, offset: Int, length: Int) -> Bool {
        posix_fallocate(fd, off_t(offset), off_t(length)) == 0
    }

    /// Asks the kernel to bring `length` bytes of `fd` from `offset` into the page cache ahead of
    /// use (`posix_fadvise(POSIX_FADV_WILLNEED)`): a preallocated part becomes cached zero pages,
    /// so a later write there finds its page instead of allocating and zeroing it. A hint: nothing
    /// is reported.
    package static func prefetch(_ fd: Int32, offset: Int, length: Int) {
        _ = posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_WILLNEED)
    }

    /// Nanoseconds since an arbitrary fixed point from `CLOCK_MONOTONIC_COARSE` (a few nanoseconds per
    /// call, a few milliseconds of resolution).
    @inline(__always)
    package static func coarseMonotonicNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }

    /// Returns the allocator's free pages to the operating system (`malloc_trim(0)`, which also
    /// releases free pages inside the heap, not only at its top), and from the first call on keeps
    /// glibc's mmap and trim thresholds at 1 MiB (not raised as big blocks are freed), so that a
    /// thread arena gives its free top back at its next big free. O(free chunks), under each
    /// arena's lock in turn: call it rarely (after many connections closed), never per message.
    package static func releaseFreeMemory() { ccontrail_release_free_memory() }

    /// The bytes the allocator has handed out and not taken back, blocks mapped on their own included
    /// (`mallinfo2()`'s `uordblks + hblkhd`): for tests that account a structure's memory; nil under ThreadSanitizer, whose allocator glibc does not
    /// see. O(arenas).
    package static func allocatedBytes() -> Int? { isUnderThreadSanitizer ? nil : Int(ccontrail_allocated_bytes()) }

    /// The calling thread's `pthread_self()` as a number.
    package static var currentThreadID: UInt { UInt(pthread_self()) }

    /// Names the calling thread (what `ps -L` and `perf` show); Linux keeps at most 15 bytes, and
    /// refuses a longer name, so the caller cuts it.
    package static func nameCurrentThread(_ name: String) {
        ccontrail_name_current_thread(name)
    }

    /// The event loop backend to use when none is asked for: epoll.
    package static let defaultEventLoopBackend = EventLoop.Backend.epoll

    /// The poller for the `.epoll` backend.
    static func makeEpollPoller() throws(NetworkError) -> any Poller { try EpollPoller() }
}
#endif
