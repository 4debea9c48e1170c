import CContrailSystem

/// A listening TCP socket on an `EventLoop` that accepts every pending connection when readable
/// and hands each new non-blocking descriptor to `onAccept`, on the loop thread.
///
/// Descriptor exhaustion: `accept` is refused a descriptor (EMFILE/ENFILE), or the new descriptor is
/// within `reserve` of the process limit. The listener then stops accepting for a back-off delay (10 ms,
/// doubling up to 1 s) while open connections keep being served, and logs once per episode. A
/// connection accepted inside the reserve is closed at once: the reserve keeps descriptors free for
/// the rest of the process (files, timers, the runtime), which would otherwise fail, or abort.
package final class Listener: EventLoopHandler, @unchecked Sendable {
    // Invariant: `id`, `isClosed` and `state` are only touched on `loop`'s thread (asserted in debug builds);
    // `fd`, `port`, `loop`, `onAccept` and `log` are constants.
    let fd: Int32
    /// The bound port (the real one when 0 was asked for).
    package let port: UInt16
    private let loop: EventLoop
    private var id: UInt64 = 0
    private var isClosed = false
    private let onAccept: (Int32) -> Void
    private let log: @Sendable (String) -> Void

    /// Whether connections are being accepted, or not for a while because descriptors ran out.
    private enum State {
        case accepting
        /// Not watching the socket until a back-off timer fires.
        case backingOff
    }
    private var state = State.accepting
    /// When descriptors last ran out, while an episode of exhaustion is open (logged once when it
    /// opens, once when it ends: after `quietPeriod` of accepting without running out again).
    private var episodeLastExhausted: Duration?
    static let quietPeriod = Duration.seconds(1)
    /// Back-off bounds while descriptors are exhausted.
    static let firstBackOff = Duration.milliseconds(10)
    static let maxBackOff = Duration.seconds(1)

    /// Resolves `host` off the pool and the loop, binds and listens on `host:port`, and starts accepting on
    /// `loop`. Nothing blocks the caller's thread.
    /// - Parameter log: receives one line when descriptors run out and one when accepting resumes.
    /// - Throws: `unknownHost`, or `io` when binding or registering fails (the socket is then closed).
    package static func start(host: String, port: UInt16, loop: EventLoop, log: @escaping @Sendable (String) -> Void,
                      onAccept: @escaping (Int32) -> Void) async throws(NetworkError) -> Listener
    {
        let addresses = try await SocketAddress.resolveInBackground(host: host, port: port, passive: true)
        var lastError: NetworkError = .unknownHost(host)
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
        let listener = Listener(fd: bound, port: SocketAddress.local(of: bound)?.port ?? port, loop: loop, log: log,
                                onAccept: onAccept)
        let failure: NetworkError?
        do throws(EventLoopError) {
            failure = try await loop.submit { () -> NetworkError? in
                do throws(NetworkError) {
                    try listener.register()
                    return nil
                } catch {
                    listener.close()
                    return error
                }
            }
        } catch {
            // The loop has stopped and never saw the socket: close it here.
            Socket.close(bound)
            throw NetworkError(error)
        }
        if let failure { throw failure }
        return listener
    }

    private init(fd: Int32, port: UInt16, loop: EventLoop, log: @escaping @Sendable (String) -> Void,
                 onAccept: @escaping (Int32) -> Void)
    {
        self.fd = fd
        self.port = port
        self.loop = loop
        self.log = log
        self.onAccept = onAccept
    }

    /// Starts accepting. Loop thread only.
    private func register() throws(NetworkError) {
        loop.assertOnLoop()
        id = try loop.register(fd, interest: .read, handler: self)
    }

    /// Descriptors kept free for the rest of the process: 1/16 of the soft limit, from 16 to 256.
    static func reserve(limit: Int) -> Int { min(256, max(16, limit / 16)) }

    /// The soft RLIMIT_NOFILE (a large number when unlimited).
    static func descriptorLimit() -> Int {
        let limit = ccontrail_descriptor_limit()
        return limit < 0 ? Int(Int32.max) : Int(min(limit, Int64(Int32.max)))
    }

    func handleReadiness(_ readiness: Readiness) {
        loop.assertOnLoop()
        guard case .accepting = state, id != 0 else { return }
        if case .exhausted(let reason) = acceptPending() {
            if episodeLastExhausted == nil, let reason {
                log("contrail: \(reason); pausing accepts on port \(port) (open connections are still served)")
            }
            episodeLastExhausted = loop.now
            backOff(Self.firstBackOff)
        }
    }

    /// What one round of accepting ended with.
    private enum Outcome {
        /// Nothing more is pending, or a round's worth was accepted (the poller reports the rest).
        case drained
        /// Out of descriptors; the reason to log, nil for other transient failures.
        case exhausted(String?)
    }

    /// Accepts up to 256 pending connections.
    private func acceptPending() -> Outcome {
        let limit = Self.descriptorLimit()
        let reserve = Self.reserve(limit: limit)
        for _ in 0..<256 {
            switch Socket.accept(fd) {
            case nil:
                return .drained
            case .success(let connection)?:
                // Descriptors are allocated lowest first: this one's number bounds how many are free.
                guard Int(connection) < limit - reserve else {
                    Socket.close(connection)
                    return .exhausted("fewer than \(reserve) of \(limit) descriptors are free")
                }
                onAccept(connection)
            case .failure(let error)?:
                if case .io(let code, _) = error, code == EMFILE || code == ENFILE {
                    return .exhausted(code == EMFILE ? "the process is out of descriptors (EMFILE)"
                        : "the system is out of descriptors (ENFILE)")
                }
                // Anything else (e.g. ENOBUFS) is transient for a listener too: pause, without a log line.
                return .exhausted(nil)
            }
        }
        return .drained
    }

    /// Stops watching the socket for `delay`, then tries again, doubling the delay while still exhausted.
    private func backOff(_ delay: Duration) {
        state = .backingOff
        loop.setInterest(fd, id: id, interest: [])
        loop.schedule(after: delay) { [self] in
            guard id != 0 else { return }
            if case .exhausted = acceptPending() {
                episodeLastExhausted = loop.now
                backOff(min(delay * 2, Self.maxBackOff))
                return
            }
            state = .accepting
            loop.setInterest(fd, id: id, interest: .read)
            endEpisodeWhenQuiet()
        }
    }

    /// Logs the end of the exhaustion episode once `quietPeriod` passed without running out again.
    private func endEpisodeWhenQuiet() {
        loop.schedule(after: Self.quietPeriod) { [self] in
            guard id != 0, let last = episodeLastExhausted else { return }
            guard case .accepting = state, loop.now - last >= Self.quietPeriod else {
                if case .accepting = state { endEpisodeWhenQuiet() }  // ran out again meanwhile: wait on
                return
            }
            episodeLastExhausted = nil
            log("contrail: accepting connections again on port \(port)")
        }
    }

    /// Stops listening and closes the socket (once: later calls do nothing). Loop thread only.
    package func close() {
        loop.assertOnLoop()
        guard !isClosed else { return }
        isClosed = true
        if id != 0 { loop.deregister(fd, id: id) }
        id = 0
        Socket.close(fd)
    }

    func loopStopped() {
        close()
    }
}
