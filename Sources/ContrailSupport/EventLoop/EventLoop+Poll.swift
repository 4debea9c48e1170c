import Synchronization

/// Portable `poll(2)`, with a pipe to wake the waiting thread. The descriptor table is rebuilt on
/// each wait, so it suits the modest connection counts of platforms without epoll.
///
/// `@unchecked Sendable` invariant: `table` is a lock; `fds` and `ids` are scratch used only by `wait`,
/// which only the owning loop's thread calls; the pipe descriptors are constants.
final class PollPoller: Poller, @unchecked Sendable {
    private struct Entry {
        var id: UInt64
        var interest: Interest
    }
    private let table = SanitizerVisibleMutex<[Int32: Entry]>([:])
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Loop-thread scratch space.
    private var fds: [pollfd] = []
    private var ids: [UInt64] = []

    init() throws(NetworkError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw .io(errno: errno, "pipe") }
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    func add(_ fd: Int32, id: UInt64, interest: Interest) throws(NetworkError) {
        table.withLock { $0[fd] = Entry(id: id, interest: interest) }
    }

    func modify(_ fd: Int32, id: UInt64, interest: Interest) {
        let changed = table.withLock { table -> Bool in
            guard let entry = table[fd], entry.id == id, entry.interest != interest else { return false }
            table[fd] = Entry(id: id, interest: interest)
            return true
        }
        if changed { wake() }
    }

    func remove(_ fd: Int32) {
        table.withLock { _ = $0.removeValue(forKey: fd) }
    }

    func wait(timeout: Int32, _ body: (UInt64, Readiness) -> Void) {
        fds.removeAll(keepingCapacity: true)
        ids.removeAll(keepingCapacity: true)
        fds.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
        ids.append(0)
        table.withLock { table in
            for (fd, entry) in table {
                var events: Int16 = 0
                if entry.interest.contains(.read) { events |= Int16(POLLIN) }
                if entry.interest.contains(.write) { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: fd, events: events, revents: 0))
                ids.append(entry.id)
            }
        }
        let count = fds.withUnsafeMutableBufferPointer { buffer in
            poll(buffer.baseAddress, nfds_t(buffer.count), timeout)
        }
        guard count > 0 else { return }
        if fds[0].revents != 0 {
            var scratch = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &scratch, scratch.count) > 0 {}
        }
        for index in 1..<fds.count where fds[index].revents != 0 {
            let events = fds[index].revents
            body(ids[index], Readiness(readable: events & Int16(POLLIN) != 0,
                                       writable: events & Int16(POLLOUT) != 0,
                                       failed: events & Int16(POLLERR | POLLHUP | POLLNVAL) != 0))
        }
    }

    func wake() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    func close() {
        Platform.close(wakeRead)
        Platform.close(wakeWrite)
    }
}
