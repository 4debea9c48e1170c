/// A listening TCP socket on an `EventLoop` that accepts every pending connection when readable
/// and hands each new non-blocking descriptor to `onAccept`, on the loop thread.
final class Listener: EventLoopHandler, @unchecked Sendable {
    let fd: Int32
    /// The bound port (the real one when 0 was asked for).
    let port: UInt16
    private let loop: EventLoop
    private var id: UInt64 = 0
    private let onAccept: (Int32) -> Void

    /// Binds and listens on `host:port` (`getaddrinfo`, so it blocks briefly for names).
    init(host: String, port: UInt16, loop: EventLoop, onAccept: @escaping (Int32) -> Void) throws(WebSocketError) {
        let addresses = try SocketAddress.resolve(host: host, port: port, passive: true)
        var lastError: WebSocketError = .unknownHost(host)
        var bound: Int32 = -1
        for address in addresses {
            do {
                bound = try Socket.listen(on: address)
                break
            } catch {
                lastError = error
            }
        }
        guard bound >= 0 else { throw lastError }
        fd = bound
        self.port = SocketAddress.local(of: bound)?.port ?? port
        self.loop = loop
        self.onAccept = onAccept
    }

    /// Starts accepting. Loop thread only.
    func register() throws(WebSocketError) {
        id = try loop.register(fd, interest: .read, handler: self)
    }

    func handleReadiness(_ readiness: Readiness) {
        for _ in 0..<256 {
            switch Socket.accept(fd) {
            case nil: return
            case .success(let connection)?: onAccept(connection)
            case .failure?:
                // Out of descriptors (EMFILE) or similar: the socket stays readable, so stop watching it
                // for a moment instead of spinning, then try again.
                loop.setInterest(fd, id: id, interest: [])
                loop.schedule(after: .milliseconds(100)) { [self] in
                    if id != 0 { loop.setInterest(fd, id: id, interest: .read) }
                }
                return
            }
        }
    }

    /// Stops listening and closes the socket. Loop thread only.
    func close() {
        if id != 0 { loop.deregister(fd, id: id) }
        id = 0
        Socket.close(fd)
    }
}
