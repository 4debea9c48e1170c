import CContrailSystem
import Foundation
import ContrailSupport

/// The baseline of `contrail bench websocket`: a plain TCP echo written directly against the kernel
/// (sockets, epoll, one thread for the server and one for the client), sharing no code with the
/// WebSocket stack (no `EventLoop`, `Channel`, buffers or Swift concurrency). Each connection sends
/// `size` bytes, waits until all of them came back, and repeats: the same request/response pattern
/// as the WebSocket side, without framing.
enum PlainTCPEcho {
    /// What a run measured.
    struct Result {
        /// Wall time of the whole run.
        var seconds: Double
        /// Every round trip's duration in seconds (only when asked for).
        var samples: [Double]
    }

    /// A failed system call.
    struct Failure: Error, CustomStringConvertible {
        var what: String
        var code: Int32
        var description: String { "plain TCP echo: \(what) failed (errno \(code))" }
    }

    /// Runs `trips` round trips of `size` bytes on each of `connections` connections over 127.0.0.1.
    /// Blocking: it runs on threads of its own and hands the result back.
    static func run(connections: Int, size: Int, trips: Int, recordSamples: Bool) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Swift.Result { try runBlocking(connections: connections, size: size, trips: trips,
                                                                         recordSamples: recordSamples) })
            }.start()
        }
    }

    private static func check(_ value: Int32, _ what: String) throws -> Int32 {
        guard value >= 0 else { throw Failure(what: what, code: errno) }
        return value
    }

    private static func runBlocking(connections: Int, size: Int, trips: Int, recordSamples: Bool) throws -> Result {
        // Listening socket on an ephemeral port.
        let listener = try check(socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0), "socket")
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                _ = try check(bind(listener, raw, length), "bind")
                _ = try check(getsockname(listener, raw, &length), "getsockname")
            }
        }
        _ = try check(listen(listener, 1024), "listen")
        let port = address.sin_port

        // Server: an epoll thread that echoes whatever arrives.
        let stop = try check(eventfd(0, Int32(EFD_NONBLOCK)), "eventfd")
        defer { close(stop) }
        let server = Thread { serve(listener: listener, stop: stop) }
        server.start()
        defer {
            var one: UInt64 = 1
            _ = write(stop, &one, 8)
        }

        // Client: blocking connects, then one epoll thread (this one) driving every connection.
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<connections {
            let fd = try check(socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0), "socket")
            sockets.append(fd)
            var target = sockaddr_in()
            target.sin_family = sa_family_t(AF_INET)
            target.sin_addr.s_addr = inet_addr("127.0.0.1")
            target.sin_port = port
            _ = try withUnsafePointer(to: &target) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try check(connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)), "connect")
                }
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        }
        let epoll = try check(epoll_create1(0), "epoll_create1")
        defer { close(epoll) }
        for (index, fd) in sockets.enumerated() {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(index)
            _ = try check(epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event), "epoll_ctl")
        }
        let payload = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            for i in 0..<size { buffer[i] = UInt8(truncatingIfNeeded: i &* 131) }
            count = size
        }
        var received = [Int](repeating: 0, count: connections)
        var done = [Int](repeating: 0, count: connections)
        var started = [ContinuousClock.Instant](repeating: .now, count: connections)
        var samples: [Double] = []
        if recordSamples { samples.reserveCapacity(connections * trips) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        // Untimed warm-up: one small round trip per connection, so that the server thread is running and
        // has accepted every connection before the clock starts.
        for fd in sockets {
            try sendAll(fd, [1])
            var byte: UInt8 = 0
            while read(fd, &byte, 1) != 1 {
                guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                    throw Failure(what: "read (warm-up)", code: errno)
                }
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&entry, 1, 1000)
            }
        }
        let begin = ContinuousClock.now
        for index in 0..<connections {
            started[index] = .now
            try sendAll(sockets[index], payload)
        }
        var finished = 0
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while finished < connections {
            let count = epoll_wait(epoll, &events, 256, 10_000)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(what: "epoll_wait (no echo within 10 s)", code: errno) }
            for event in events[0..<Int(count)] {
                let index = Int(event.data.u64)
                let fd = sockets[index]
                while true {
                    let n = read(fd, buffer.baseAddress, buffer.count)
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                    guard n > 0 else { throw Failure(what: "read (echo ended early)", code: n == 0 ? 0 : errno) }
                    received[index] += n
                    while received[index] >= size && done[index] < trips {
                        received[index] -= size
                        done[index] += 1
                        if recordSamples { samples.append(Stopwatch.seconds(ContinuousClock.now - started[index])) }
                        if done[index] == trips {
                            finished += 1
                        } else {
                            started[index] = .now
                            try sendAll(fd, payload)
                        }
                    }
                    if n < buffer.count { break }
                }
            }
        }
        let seconds = Stopwatch.seconds(ContinuousClock.now - begin)
        return Result(seconds: seconds, samples: samples)
    }

    /// Writes all of `bytes` to a non-blocking socket, waiting with poll(2) while the socket is full.
    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                // The peer's echo fills our receive side; the server keeps draining, so waiting for room is safe
                // as long as the server reads: it does, independently of us.
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&entry, 1, 1000)
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw Failure(what: "write", code: errno)
            }
        }
    }

    /// The server thread: accepts and echoes until `stop` becomes readable.
    static func serve(listener: Int32, stop: Int32) {
        let epoll = epoll_create1(0)
        defer { close(epoll) }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = UInt64(UInt32(bitPattern: listener))
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event)
        event.data.u64 = UInt64(UInt32(bitPattern: stop))
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, stop, &event)
        var pendingOut: [Int32: [UInt8]] = [:]
        var open: Set<Int32> = []
        var watchingOut: Set<Int32> = []
        defer { for fd in open { close(fd) } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            let count = epoll_wait(epoll, &events, 256, -1)
            if count < 0 { if errno == EINTR { continue } else { return } }
            for ready in events[0..<Int(count)] {
                let fd = Int32(truncatingIfNeeded: ready.data.u64)
                if fd == stop { return }
                if fd == listener {
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { continue }
                    var one: Int32 = 1
                    setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL, 0) | O_NONBLOCK)
                    var add = epoll_event()
                    add.events = EPOLLIN.rawValue
                    add.data.u64 = UInt64(UInt32(bitPattern: client))
                    _ = epoll_ctl(epoll, EPOLL_CTL_ADD, client, &add)
                    open.insert(client)
                    continue
                }
                // Flush what is left from earlier, then echo what arrives; queue what the socket refuses.
                if var out = pendingOut[fd] {
                    let n = out.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if n > 0 { out.removeFirst(n) }
                    pendingOut[fd] = out.isEmpty ? nil : out
                }
                if ready.events & EPOLLIN.rawValue != 0 || ready.events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                    let n = read(fd, buffer.baseAddress, buffer.count)
                    if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
                        close(fd)
                        open.remove(fd)
                        watchingOut.remove(fd)
                        pendingOut[fd] = nil
                        continue
                    }
                    if n > 0 {
                        var written = 0
                        if pendingOut[fd] == nil {
                            let w = write(fd, buffer.baseAddress, n)
                            written = max(0, w)
                        }
                        if written < n {
                            pendingOut[fd, default: []].append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[written..<n]))
                        }
                    }
                }
                let wantsOut = pendingOut[fd] != nil
                if wantsOut != watchingOut.contains(fd) {
                    if wantsOut { watchingOut.insert(fd) } else { watchingOut.remove(fd) }
                    var modify = epoll_event()
                    modify.events = EPOLLIN.rawValue | (wantsOut ? EPOLLOUT.rawValue : 0)
                    modify.data.u64 = UInt64(UInt32(bitPattern: fd))
                    _ = epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &modify)
                }
            }
        }
    }
}
