/// Thin, non-blocking wrappers over the POSIX socket calls. Every function works on a raw descriptor;
/// ownership (who closes it) lives in `Channel`, `Listener` and `Connector`.
package enum Socket {
    /// A new non-blocking, close-on-exec TCP socket for `family`.
    static func makeTCP(family: Int32) throws(NetworkError) -> Int32 {
        let fd = socket(family, Platform.streamSocketType, Int32(IPPROTO_TCP))
        guard fd >= 0 else { throw .io(errno: errno, "socket()") }
        do {
            try configure(fd)
        } catch {
            Platform.close(fd)
            throw error
        }
        return fd
    }

    /// Makes `fd` non-blocking and close-on-exec (and, on Darwin, free of SIGPIPE).
    static func configure(_ fd: Int32) throws(NetworkError) {
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw .io(errno: errno, "fcntl(O_NONBLOCK)")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        Platform.suppressSignalOnWrite(fd)
    }

    /// Sets an integer socket option, ignoring failure (used for tuning only).
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Disables Nagle's algorithm: WebSocket frames are written whole, so waiting only adds latency.
    static func setNoDelay(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// The pending error of a socket (`SO_ERROR`), e.g. the outcome of a non-blocking `connect`.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// Starts a non-blocking connect: 0 when connected at once, `EINPROGRESS` when pending, else the errno.
    static func startConnect(_ fd: Int32, to address: SocketAddress) -> Int32 {
        let result = address.withSockAddr { connect(fd, $0, $1) }
        if result == 0 { return 0 }
        return errno
    }

    /// Binds `fd` to `address` (a client's source address); false with `errno` set when it fails.
    static func bindSource(_ fd: Int32, to address: SocketAddress) -> Bool {
        address.withSockAddr { bind(fd, $0, $1) } == 0
    }

    /// A listening socket bound to `address` (with `SO_REUSEADDR`).
    static func listen(on address: SocketAddress, backlog: Int32 = 1024) throws(NetworkError) -> Int32 {
        let fd = try makeTCP(family: address.family)
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if address.family == AF_INET6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
        let bound = address.withSockAddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            Platform.close(fd)
            throw .io(errno: code, "bind(\(address))")
        }
        guard Platform.listen(fd, backlog) == 0 else {
            let code = errno
            Platform.close(fd)
            throw .io(errno: code, "listen(\(address))")
        }
        return fd
    }

    /// Accepts one pending connection: the new non-blocking descriptor, nil when none is pending.
    static func accept(_ listener: Int32) -> Result<Int32, NetworkError>? {
        while true {
            let fd = Platform.accept(listener)
            if fd >= 0 {
                do { try configure(fd) } catch { Platform.close(fd); return .failure(error) }
                setNoDelay(fd)
                return .success(fd)
            }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            case let code: return .failure(.io(errno: code, "accept()"))
            }
        }
    }

    /// The outcome of one `read` or `write`.
    package enum IOResult {
        /// This many bytes moved (0 from `read` means end of stream).
        case done(Int)
        /// Nothing can move now (`EAGAIN`).
        case wouldBlock
        /// The call failed with this errno.
        case failed(Int32)
    }

    /// Reads into `buffer`.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// Writes as much of `bytes` as the kernel takes.
    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        while true {
            let n = send(fd, bytes.baseAddress, bytes.count, Platform.sendFlags)
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// Writes as much of `pieces`, in order, as the kernel takes, with one `sendmsg` (a gathered write:
    /// no piece is copied into a common buffer first). O(pieces.count) besides the kernel's copy.
    static func write(_ fd: Int32, gathering pieces: UnsafeBufferPointer<UnsafeRawBufferPointer>) -> IOResult {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: pieces.count) { vectors in
            for (i, piece) in pieces.enumerated() {
                vectors[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: piece.baseAddress), iov_len: piece.count)
            }
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = numericCast(pieces.count)
            while true {
                let n = sendmsg(fd, &message, Platform.sendFlags)
                if n >= 0 { return .done(n) }
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: return .wouldBlock
                case let code: return .failed(code)
                }
            }
        }
    }

    /// Closes the sending direction (sends FIN) while still allowing reads.
    static func shutdownOutput(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes the descriptor.
    package static func close(_ fd: Int32) {
        Platform.close(fd)
    }
}
