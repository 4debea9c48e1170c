#if os(Linux)
import CContrailSystem
import Glibc

/// Linux `epoll`, level-triggered, with an `eventfd` to wake the waiting thread.
///
/// `@unchecked Sendable` invariant: the descriptors are constants (the kernel serializes calls on them),
/// and `events` is scratch memory used only by `wait`, which only the owning loop's thread calls.
final class EpollPoller: Poller, @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private let capacity = 256
    /// Loop-thread scratch space for `epoll_wait`.
    private let events: UnsafeMutablePointer<epoll_event>

    init() throws(NetworkError) {
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw .io(errno: errno, "epoll_create1") }
        let wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            let code = errno
            Glibc.close(epollFD)
            throw .io(errno: code, "eventfd")
        }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        events = .allocate(capacity: capacity)
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = 0
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let code = errno
            Glibc.close(wakeFD)
            Glibc.close(epollFD)
            events.deallocate()
            throw .io(errno: code, "epoll_ctl(ADD eventfd)")
        }
    }

    deinit {
        events.deallocate()
    }

    private static func mask(_ interest: Interest) -> UInt32 {
        var mask: UInt32 = 0
        if interest.contains(.read) { mask |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if interest.contains(.write) { mask |= EPOLLOUT.rawValue }
        return mask
    }

    func add(_ fd: Int32, id: UInt64, interest: Interest) throws(NetworkError) {
        var event = epoll_event()
        event.events = Self.mask(interest)
        event.data.u64 = id
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw .io(errno: errno, "epoll_ctl(ADD)")
        }
    }

    func modify(_ fd: Int32, id: UInt64, interest: Interest) {
        var event = epoll_event()
        event.events = Self.mask(interest)
        event.data.u64 = id
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
    }

    func remove(_ fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    func wait(timeout: Int32, _ body: (UInt64, Readiness) -> Void) {
        let count = epoll_wait(epollFD, events, Int32(capacity), timeout)
        guard count > 0 else { return }
        let readable = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        let failed = EPOLLERR.rawValue | EPOLLHUP.rawValue
        for index in 0..<Int(count) {
            let event = events[index]
            let id = event.data.u64
            if id == 0 {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
                continue
            }
            let mask = event.events
            body(id, Readiness(readable: mask & readable != 0, writable: mask & EPOLLOUT.rawValue != 0,
                               failed: mask & failed != 0))
        }
    }

    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    func close() {
        Glibc.close(wakeFD)
        Glibc.close(epollFD)
    }
}
#endif
