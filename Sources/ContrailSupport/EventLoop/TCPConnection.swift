import Synchronization

/// A plain TCP byte stream on the same event loop, sockets and buffers as `WebSocketConnection`, without
/// WebSocket framing. It is the baseline of `contrail bench websocket` and a tool for tests that need
/// to misbehave at the byte level (half a handshake, a peer that never reads).
///
/// `@unchecked Sendable` invariant: every stored property is a constant, a lock (`closed`), or itself
/// thread-safe (`channel`, `inbound`); its delegate callbacks run on the loop thread (asserted).
public final class TCPConnection: @unchecked Sendable {
    let loop: EventLoop
    let channel: Channel
    private let inbound: InboundQueue<[UInt8], NetworkError>
    private let closed = SanitizerVisibleMutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(fd: Int32, loop: EventLoop, writeHighWater: Int, readHighWater: Int) {
        self.loop = loop
        let channel = Channel(fd: fd, loop: loop, highWater: writeHighWater)
        self.channel = channel
        inbound = InboundQueue(highWater: readHighWater, size: { $0.count }, setReading: { channel.setReading($0) })
        channel.delegate = self
    }

    /// Connects to `host:port` (any name `getaddrinfo` resolves, IPv4 or IPv6).
    /// - Throws: `unknownHost`, `connectionRefused`, `timedOut`, `io`, or `closed` when the loop has stopped.
    public static func connect(host: String, port: UInt16, eventLoop: EventLoop? = nil, timeout: Duration = .seconds(10),
                               writeHighWater: Int = 1 << 20, readHighWater: Int = 4 << 20) async throws(NetworkError)
        -> TCPConnection
    {
        let loop = eventLoop ?? EventLoopGroup.shared.next()
        let fd = try await Connector.connect(host: host, port: port, loop: loop, timeout: timeout)
        let connection = TCPConnection(fd: fd, loop: loop, writeHighWater: writeHighWater, readHighWater: readHighWater)
        let failure: NetworkError?
        do throws(EventLoopError) {
            failure = try await loop.submit { () -> NetworkError? in
                do throws(NetworkError) {
                    try connection.channel.register()
                    return nil
                } catch {
                    connection.channel.close()
                    return error
                }
            }
        } catch {
            // The loop has stopped and never saw the socket: close it here.
            Socket.close(fd)
            throw NetworkError(error)
        }
        if let failure { throw failure }
        return connection
    }

    /// Writes `bytes`; suspends while more than the write high-water mark is queued.
    /// - Throws: `.closed` once the connection is closed.
    public func send(_ bytes: [UInt8]) async throws(NetworkError) {
        try await send(count: bytes.count) { $0.append(contentsOf: bytes) }
    }

    /// Writes `bytes` (copied into the write buffer); suspends like `send(_:)`.
    public func send(_ bytes: UnsafeRawBufferPointer) async throws(NetworkError) {
        try await send(count: bytes.count) { $0.append(contentsOf: bytes) }
    }

    private func send(count: Int, _ fill: (inout [UInt8]) -> Void) async throws(NetworkError) {
        guard case .accepted(let pending) = channel.write(fill) else {
            throw .closed("the TCP connection is closed")
        }
        if pending > channel.highWater {
            await channel.waitForRoom()
            if channel.isClosed { throw .closed("the TCP connection is closed") }
        }
    }

    /// Puts `security` (TLS) under this plaintext connection and starts its handshake, for protocols that
    /// upgrade after a plaintext greeting (NATS). The caller has consumed every byte received so far and
    /// sends nothing meanwhile; later bytes go through `security` both ways.
    /// - Returns: false when bytes were received and not yet taken by `receive()` (they would pass as
    ///   plaintext the layer never saw), something is still queued to write, or the connection is closed.
    package func startSecurity(_ security: any ChannelSecurity) async -> Bool {
        let started = try? await loop.submit { [inbound, channel] () -> Bool in
            guard inbound.queuedCount == 0 else { return false }
            return channel.startSecurity(security)
        }
        return started ?? false
    }

    /// Bytes queued for the socket and not yet written.
    public var bufferedByteCount: Int { channel.pendingByteCount }

    /// The next chunk of received bytes (as the socket delivered them); nil once the peer has closed,
    /// and when the waiting task is cancelled.
    /// - Throws: `NetworkError.io` if the socket failed, `.concurrentConsumer` while another task
    ///   waits for bytes.
    public func receive() async throws(NetworkError) -> [UInt8]? {
        try await inbound.next()
    }

    /// Sends FIN once everything queued is written; reading continues.
    public func shutdownOutput() {
        channel.shutdownOutputWhenFlushed()
    }

    /// Closes the socket (queued bytes are dropped) and waits until it is closed. When its loop has
    /// stopped, the loop has closed it (or is closing it): this returns once that is done.
    public func close() async {
        await withCheckedContinuation { continuation in
            let done = closed.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            guard !done else { return continuation.resume() }
            // Refused once the loop has stopped: it closes every channel still registered as it stops,
            // which resumes this waiter (`channelClosed`).
            try? loop.enqueue { [channel] in channel.close() }
        }
    }

    /// Whether the socket is closed.
    public var isClosed: Bool { closed.withLock { $0.done } }
}

extension TCPConnection: ChannelDelegate {
    package func channelRead(_ bytes: UnsafeRawBufferPointer) {
        loop.assertOnLoop()
        inbound.push([Array(bytes)])
    }

    package func channelEnded(errno: Int32?) {
        if let errno {
            inbound.finish(.io(errno: errno, "reading from the TCP peer"))
            channel.close()
        } else {
            inbound.finish(nil)
        }
    }

    package func channelClosed() {
        inbound.finish(nil)
        let waiters = closed.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.done = true
            let waiters = state.waiters
            state.waiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
