import Dispatch

/// Opens a TCP connection without blocking the loop: resolves the host with `getaddrinfo` on a
/// background queue, then tries each address in turn (IPv4 and IPv6) with a non-blocking `connect`,
/// all within one deadline.
package final class Connector: EventLoopHandler {
    private let loop: EventLoop
    private let host: String
    private let port: UInt16
    private let addresses: [SocketAddress]
    /// Addresses to bind the socket to before connecting (one per family), if any.
    private let local: [SocketAddress]
    private var index = 0
    private var fd: Int32 = -1
    private var id: UInt64 = 0
    private var lastError: Int32 = ECONNREFUSED
    private var timer: LoopTimer?
    private var completion: ((Result<Int32, NetworkError>) -> Void)?

    private init(loop: EventLoop, host: String, port: UInt16, addresses: [SocketAddress], local: [SocketAddress],
                 completion: @escaping (Result<Int32, NetworkError>) -> Void) {
        self.loop = loop
        self.local = local
        self.host = host
        self.port = port
        self.addresses = addresses
        self.completion = completion
    }

    /// Where a connection goes: the host's addresses (and the local ones to bind to), resolved off the
    /// loop, and what is left of the connect timeout.
    package struct Target: Sendable {
        let host: String
        let port: UInt16
        let addresses: [SocketAddress]
        let local: [SocketAddress]
        let left: Duration
        let total: Duration
    }

    /// A connected, non-blocking socket descriptor (with `TCP_NODELAY`). The timeout runs on the
    /// loop's clock. `localHost`: an IP address to bind the socket to before connecting (the source
    /// address the peer sees); only addresses of its family are tried.
    /// - Throws: `unknownHost`, `connectionRefused`, `timedOut`, `io`, or `closed` once the loop has stopped.
    package static func connect(host: String, port: UInt16, loop: EventLoop, timeout: Duration,
                                localHost: String? = nil) async throws(NetworkError) -> Int32 {
        let target = try await resolve(host: host, port: port, loop: loop, timeout: timeout, localHost: localHost)
        let result = await withCheckedContinuation { continuation in
            connect(target, loop: loop) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Resolves `host` (and `localHost`) on a background queue: the first half of ``connect(host:port:loop:timeout:localHost:)``.
    package static func resolve(host: String, port: UInt16, loop: EventLoop, timeout: Duration,
                                localHost: String? = nil) async throws(NetworkError) -> Target {
        let start = loop.now
        var addresses = try await SocketAddress.resolveInBackground(host: host, port: port)
        var local: [SocketAddress] = []
        if let localHost {
            local = try await SocketAddress.resolveInBackground(host: localHost, port: 0, passive: true)
            let families = Set(local.map(\.family))
            addresses.removeAll { !families.contains($0.family) }
        }
        let left = timeout - (loop.now - start)
        guard left > .zero else { throw .timedOut("resolving \(host) took longer than \(timeout)") }
        return Target(host: host, port: port, addresses: addresses, local: local, left: left, total: timeout)
    }

    /// Connects to `target` on `loop`: `completion` runs on the loop thread, so a caller can go on
    /// there at once (a WebSocket client sends its request without waiting for the cooperative pool).
    package static func connect(_ target: Target, loop: EventLoop,
                                completion: @escaping @Sendable (Result<Int32, NetworkError>) -> Void) {
        do throws(EventLoopError) {
            try loop.enqueue {
                let connector = Connector(loop: loop, host: target.host, port: target.port, addresses: target.addresses,
                                          local: target.local, completion: completion)
                connector.start(timeout: target.left, total: target.total)
            }
        } catch {
            completion(.failure(NetworkError(error)))
        }
    }

    private func start(timeout: Duration, total: Duration) {
        timer = loop.schedule(after: timeout) { [self] in
            fail(.timedOut("connecting to \(host):\(port) took longer than \(total)"))
        }
        tryNext()
    }

    private func tryNext() {
        while index < addresses.count {
            let address = addresses[index]
            index += 1
            let socket: Int32
            do {
                socket = try Socket.makeTCP(family: address.family)
            } catch {
                if case .io(let code, _) = error { lastError = code }
                continue
            }
            if let source = local.first(where: { $0.family == address.family }), !Socket.bindSource(socket, to: source) {
                lastError = errno
                Socket.close(socket)
                continue
            }
            let status = Socket.startConnect(socket, to: address)
            if status == 0 {
                fd = socket
                succeed()
                return
            }
            if status == EINPROGRESS {
                do {
                    id = try loop.register(socket, interest: .write, handler: self)
                    fd = socket
                    return
                } catch {
                    if case .io(let code, _) = error { lastError = code }
                }
            } else {
                lastError = status
            }
            Socket.close(socket)
        }
        let error: NetworkError =
            switch lastError {
            case ECONNREFUSED: .connectionRefused(host: host, port: port)
            case ETIMEDOUT: .timedOut("connecting to \(host):\(port)")
            default: .io(errno: lastError, "connect to \(host):\(port)")
            }
        fail(error)
    }

    func handleReadiness(_ readiness: Readiness) {
        guard fd >= 0 else { return }
        let status = Socket.pendingError(fd)
        if status == 0 {
            succeed()
            return
        }
        lastError = status
        dropSocket()
        tryNext()
    }

    func loopStopped() {
        fail(NetworkError(EventLoopError.stopped))
    }

    private func dropSocket() {
        guard fd >= 0 else { return }
        if id != 0 { loop.deregister(fd, id: id) }
        id = 0
        Socket.close(fd)
        fd = -1
    }

    private func succeed() {
        if id != 0 { loop.deregister(fd, id: id) }
        id = 0
        timer?.cancel()
        Socket.setNoDelay(fd)
        let connected = fd
        fd = -1
        completion?(.success(connected))
        completion = nil
    }

    private func fail(_ error: NetworkError) {
        dropSocket()
        timer?.cancel()
        completion?(.failure(error))
        completion = nil
    }
}
