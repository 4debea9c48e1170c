import Dispatch
import Synchronization

/// One WebSocket connection, client or server side, running on an `EventLoop`.
///
/// Received messages come either through `messages` (async/await) or through handlers set with
/// `setHandlers(queue:onMessage:onClose:)` (callbacks on a queue such as `.main`). Pings are answered
/// automatically; optional keep-alive pings detect a dead peer (`WebSocketOptions.pingInterval`).
///
/// ```swift
/// let connection = try await WebSocketConnection.connect(to: "ws://127.0.0.1:8080/chat")
/// try await connection.send(.text("hello"))
/// for try await message in connection.messages { print(message) }
/// ```
///
/// Thread model: the socket, the decoder and the protocol state live on the loop thread; `send`,
/// `close` and the accessors are safe from any thread. Its lifecycle, from the opening handshake through
/// the closing handshake, is one state machine (`WebSocketCloseHandshake`); its timers (handshake,
/// close, keep-alive) follow the clock of its event loop.
///
/// `@unchecked Sendable` invariant: the stored `var`s below "Loop-thread state" are only touched on
/// `loop`'s thread (`EventLoop.assertOnLoop`, checked in debug builds at every entry point), after the
/// initializer, which runs before the connection is handed to the loop. Everything else is a constant,
/// or behind `shared` (a lock), the channel's lock, or the inbound queue's lock.
public final class WebSocketConnection: @unchecked Sendable {
    /// Whether this end opened the connection (`.client`) or accepted it (`.server`).
    public let role: WebSocketRole
    let loop: EventLoop
    let options: WebSocketOptions
    let channel: Channel
    /// The TLS session under the channel (`wss://`, or a server with `serverTLS`); nil for plain TCP.
    let tls: TLSSession?
    let inbound: InboundQueue<WebSocketMessage, WebSocketError>

    /// The request target: the URL's path and query on a client, the requested one on a server.
    public var path: String { shared.withLock { $0.path } }
    /// The peer's IP address (e.g. `127.0.0.1`), if the socket could tell.
    public let remoteHost: String?
    /// The client's handshake request (server side only; nil on a client).
    public var requestHeaders: HTTPHead? { shared.withLock { $0.requestHeaders } }
    /// The negotiated subprotocol, if any.
    public var subprotocol: String? { shared.withLock { $0.subprotocol } }

    /// State read from any thread, under a lock.
    private struct Shared {
        /// Set by the handshake, on the loop thread; constant once the connection is open.
        var path: String
        var requestHeaders: HTTPHead?
        var subprotocol: String?
        var closeCode: CloseCode?
        var closeReason = ""
        var isClosed = false
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
    }
    private let shared: SanitizerVisibleMutex<Shared>

    // MARK: Loop-thread state
    private var lifecycle = WebSocketCloseHandshake()
    private var decoder: FrameDecoder
    private var assembler: MessageAssembler
    private var head: [UInt8] = []
    /// A plain HTTP request whose body is still arriving (server side, with an `httpResponder`):
    /// its head and `Content-Length`; the body so far is in `head.body`.
    private var plainRequest: (head: HTTPHead, length: Int)?
    private var plainResponder: HTTPResponder?
    /// What went wrong, if anything did (the connection's error unless a close handshake explains it).
    private var failure: WebSocketError?
    private var handshakeTimer: LoopTimer?
    private var closeTimer: LoopTimer?
    private var pingTimer: LoopTimer?
    private var pongTimer: LoopTimer?
    private var batch: [WebSocketMessage] = []
    /// Where messages go on the loop thread instead of to `inbound`, once set.
    private enum LoopHandler {
        /// `setLoopHandler`: whole messages, text as `String`.
        case messages(@Sendable (WebSocketMessage) -> Void)
        /// `setPayloadHandler`: each message's opcode and payload bytes, text never made a `String`.
        case payloads(@Sendable (Opcode, [UInt8]) -> Void)
    }
    private var loopHandler: LoopHandler?
    /// The storage and length of the text payload being handed to the payload handler, while it runs:
    /// the connection holds that array meanwhile, so its bytes cannot change (a mutated copy gets new
    /// storage), and sending it back unchanged needs no second UTF-8 pass (`isTextBeingHandled`).
    private var textBeingHandled: (base: UnsafeRawPointer?, count: Int)?
    private var onHandshake: ((Result<Void, WebSocketError>) -> Void)?
    private var clientKey = ""
    private var handshakeHook: (@Sendable (HTTPHead) -> HandshakeDecision)?
    /// Called on the loop thread once the connection is fully closed.
    var onFinished: (() -> Void)?

    init(role: WebSocketRole, fd: Int32, loop: EventLoop, options: WebSocketOptions, path: String, tls: TLSSession? = nil) {
        self.role = role
        self.tls = tls
        self.remoteHost = SocketAddress.peer(of: fd)?.host
        self.loop = loop
        self.options = options
        shared = SanitizerVisibleMutex(Shared(path: path))
        let channel = Channel(fd: fd, loop: loop, highWater: options.writeBufferHighWater, security: tls)
        self.channel = channel
        inbound = InboundQueue(highWater: options.readBufferHighWater, size: { $0.byteCount },
                               setReading: { channel.setReading($0) })
        // The decoder checks text as bytes arrive (failing fast, even inside a frame), so the
        // assembler does not validate it a second time.
        decoder = FrameDecoder(role: role, maxFrameSize: options.maxFrameSize, validatesUTF8: true)
        assembler = MessageAssembler(maxMessageSize: options.maxMessageSize, validatesUTF8: false)
        channel.delegate = self
    }

    // MARK: Client

    /// Opens a connection to a `ws://` or `wss://` URL: DNS, TCP connect, the TLS handshake for `wss://`
    /// (verified as `options.tls` says), then the opening handshake.
    ///
    /// - Throws: `invalidURL`, `unsupportedScheme`, `unknownHost`, `connectionRefused`, `tls` (the
    ///   certificate was refused, with the reason, or the TLS handshake failed), `timedOut` (connect or
    ///   handshake), `handshakeFailed` (the server refused; carries its status line),
    ///   `invalidHandshake`, `io`, or `closed` when the event loop has stopped.
    public static func connect(to url: String, options: WebSocketOptions = .init()) async throws(WebSocketError)
        -> WebSocketConnection
    {
        let target = try WebSocketURL(url)
        try Handshake.validate(headers: options.headers)
        let loop = options.nextLoop
        var tls: TLSSession?
        if target.isSecure {
            do throws(TLSError) {
                tls = try await TLSSession.client(host: target.host, configuration: options.tls)
            } catch {
                throw .tls(error)
            }
        }
        let address: Connector.Target
        do throws(NetworkError) {
            address = try await Connector.resolve(host: target.host, port: target.port, loop: loop,
                                                  timeout: options.connectTimeout, localHost: options.localAddress)
        } catch {
            throw WebSocketError(error)
        }
        // The request goes out on the loop as soon as the socket connects: a busy cooperative pool
        // between the two would spend the server's handshake timeout.
        // The connection is made on the loop and handed over through a lock ThreadSanitizer sees (a
        // continuation alone does not show it the loop's writes).
        let session = tls
        let handoff = SanitizerVisibleMutex<WebSocketConnection?>(nil)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, WebSocketError>, Never>) in
            Connector.connect(address, loop: loop) { connected in
                switch connected {
                case .failure(let error):
                    continuation.resume(returning: .failure(WebSocketError(error)))
                case .success(let fd):
                    let connection = WebSocketConnection(role: .client, fd: fd, loop: loop, options: options, path: target.path, tls: session)
                    handoff.withLock { $0 = connection }
                    connection.startClient(url: target) { continuation.resume(returning: $0) }
                }
            }
        }
        try result.get()
        guard let connection = handoff.withLock({ $0 }) else { throw .invalidHandshake("no connection after the handshake") }
        return connection
    }

    /// Callback form of `connect(to:options:)`: `completion` runs on `queue` (e.g. `.main`) with the open
    /// connection or the typed error.
    public static func connect(to url: String, options: WebSocketOptions = .init(), queue: DispatchQueue,
                               completion: @escaping @Sendable (Result<WebSocketConnection, WebSocketError>) -> Void)
    {
        Task {
            let result: Result<WebSocketConnection, WebSocketError>
            do throws(WebSocketError) {
                result = .success(try await connect(to: url, options: options))
            } catch {
                result = .failure(error)
            }
            queue.async { completion(result) }
        }
    }

    private func startClient(url: WebSocketURL, completion: @escaping (Result<Void, WebSocketError>) -> Void) {
        loop.assertOnLoop()
        onHandshake = completion
        do {
            try channel.register()
        } catch {
            failure = WebSocketError(error)
            channel.close()
            return
        }
        armHandshakeTimer()
        clientKey = Handshake.makeKey()
        let request = Handshake.request(url: url, key: clientKey, headers: options.headers,
                                        subprotocols: options.subprotocols)
        channel.write { $0.append(contentsOf: request) }
    }

    // MARK: Server

    /// Wraps a freshly accepted socket and waits for its handshake request. Loop thread only.
    static func accept(fd: Int32, loop: EventLoop, options: WebSocketOptions, tls: TLSSession? = nil,
                       hook: @escaping @Sendable (HTTPHead) -> HandshakeDecision,
                       opened: @escaping (WebSocketConnection) -> Void) -> WebSocketConnection
    {
        loop.assertOnLoop()
        let connection = WebSocketConnection(role: .server, fd: fd, loop: loop, options: options, path: "/", tls: tls)
        connection.handshakeHook = hook
        connection.onHandshake = { [unowned connection] result in
            if case .success = result { opened(connection) }
        }
        do {
            try connection.channel.register()
        } catch {
            connection.failure = WebSocketError(error)
            connection.channel.close()
            return connection
        }
        connection.armHandshakeTimer()
        return connection
    }

    // MARK: Public API

    /// Received messages, in order. The sequence finishes after a normal close (1000, 1001, a close
    /// without code, or one this side started) and throws `WebSocketError` otherwise (`.closed` with the
    /// peer's code, a protocol violation, `.timedOut` for a dead peer, ...).
    ///
    /// Reading pauses while more than `readBufferHighWater` bytes are waiting here, so a slow consumer
    /// slows the sender down instead of growing memory. Use one consumer at a time; a consumer whose
    /// task is cancelled sees the sequence end.
    public var messages: TypedAsyncStream<WebSocketMessage, WebSocketError> {
        TypedAsyncStream(unfolding: { [self] () async throws(WebSocketError) in try await receive() })
    }

    /// The next received message, as ``messages`` yields it, without an `AsyncSequence` in between
    /// (each layer is one more async frame that a long-lived reading task keeps allocated): nil after
    /// a normal close or when the waiting task is cancelled. One consumer at a time (a second gets
    /// `.concurrentConsumer`).
    public func receive() async throws(WebSocketError) -> WebSocketMessage? {
        try await inbound.next()
    }

    /// Sends a message. Returns once it is written or queued; suspends while more than
    /// `writeBufferHighWater` bytes are queued (a peer that does not read slows us down instead of
    /// growing memory).
    /// - Throws: `.closed` once the connection is closing or closed, `.messageTooBig` above
    ///   `maxMessageSize`.
    public func send(_ message: WebSocketMessage) async throws(WebSocketError) {
        let outcome = try enqueue(message)
        guard case .accepted(let pending) = outcome else { throw closedError() }
        if pending > channel.highWater {
            await channel.waitForRoom()
            if channel.isClosed { throw closedError() }
        }
    }

    /// Queues a message without waiting for room in the write buffer: for callback-style code. Check
    /// `bufferedByteCount` to apply back-pressure yourself.
    /// - Throws: `.closed` once the connection is closing or closed, `.messageTooBig` above `maxMessageSize`.
    public func sendWithoutWaiting(_ message: WebSocketMessage) throws(WebSocketError) {
        guard case .accepted = try enqueue(message) else { throw closedError() }
    }

    /// Queues a message given as its opcode (`.text` or `.binary`) and payload, as
    /// ``sendWithoutWaiting(_:)`` does; a large payload is written from the array's own storage.
    /// Throws `WebSocketError.protocolViolation` for another opcode or a text payload that is not
    /// UTF-8 (checked here, O(n), ASCII eight bytes at a time; O(1) for the payload a
    /// ``setPayloadHandler(_:)`` handler is given, sent back unchanged from it: checked on arrival), and
    /// what `sendWithoutWaiting(_:)` throws.
    public func sendWithoutWaiting(_ opcode: Opcode, payload: [UInt8]) throws(WebSocketError) {
        guard opcode == .text || opcode == .binary else {
            throw .protocolViolation(.protocolError, "sendWithoutWaiting(_:payload:) sends text or binary messages, not \(opcode)")
        }
        guard opcode == .binary || isTextBeingHandled(payload) || payload.withUnsafeBytes({ UTF8Validator.isValid($0) }) else {
            throw .protocolViolation(.invalidFramePayloadData, "a text message's payload must be UTF-8")
        }
        guard case .accepted = try enqueue(opcode, .bytes(payload)) else { throw closedError() }
    }

    /// Whether `payload` is the very text payload the payload handler is being given now (called on the
    /// loop thread, from the handler): it was validated as it arrived. False anywhere else. O(1).
    private func isTextBeingHandled(_ payload: [UInt8]) -> Bool {
        guard loop.isOnLoop, let handled = textBeingHandled else { return false }
        return payload.withUnsafeBytes { $0.baseAddress == handled.base && $0.count == handled.count }
    }

    /// Bytes queued for the socket and not yet written.
    public var bufferedByteCount: Int { channel.pendingByteCount }

    /// Whether ``send(_:)`` would return without waiting now (no more than the write buffer's
    /// high-water mark is queued).
    package var hasRoomToSend: Bool { channel.pendingByteCount <= channel.highWater }

    /// Messages received and not yet taken by ``receive()``: whether a reader has more at hand.
    package var receivedCount: Int { inbound.queuedCount }

    /// The event loop the connection runs on (its socket's reads and timers): a task that handles
    /// its messages can prefer it as its executor, and run where they arrive.
    package var eventLoop: EventLoop { loop }

    private func enqueue(_ message: WebSocketMessage) throws(WebSocketError) -> Channel.WriteOutcome {
        switch message {
        case .text(let text): try enqueue(.text, .text(text))
        case .binary(let bytes): try enqueue(.binary, .bytes(bytes))
        }
    }

    private func enqueue(_ opcode: Opcode, _ payload: OutboundPayload) throws(WebSocketError) -> Channel.WriteOutcome {
        let size = payload.count
        guard size <= options.maxMessageSize else { throw .messageTooBig(size) }
        if role == .server && size >= Self.byReferenceSize {
            // Unmasked: the channel writes the payload from the message's own storage, gathered with
            // the header, instead of copying it into the write buffer.
            return channel.write(payload: payload) {
                FrameEncoder.encodeHeader(opcode: opcode, fin: true, payloadCount: size, maskingKey: nil, into: &$0)
            }
        }
        return payload.withBytes { writeFrame(opcode, $0) }
    }

    /// Starts the closing handshake and returns once the connection is closed (the peer answered, or
    /// `closeTimeout` passed). Messages already received stay readable.
    public func close(code: CloseCode = .normal, reason: String = "") async {
        await withCheckedContinuation { continuation in
            let done = shared.withLock { s -> Bool in
                if s.isClosed { return true }
                s.closeWaiters.append(continuation)
                return false
            }
            guard !done else { return continuation.resume() }
            do throws(EventLoopError) {
                try loop.enqueue { [self] in startClose(code: code, reason: reason) }
            } catch {
                // The loop has stopped: it closes every channel still registered as it stops, which
                // finishes this connection and resumes the waiter.
            }
        }
    }

    /// The close code once closed: the one the peer sent (`.noStatusReceived` if its close frame had
    /// none), the one we sent after a protocol violation, or `.abnormalClosure` if the TCP connection
    /// ended without a closing handshake. Nil while open.
    public var closeCode: CloseCode? { shared.withLock { $0.closeCode } }

    /// The close reason once closed (the peer's, or what went wrong).
    public var closeReason: String { shared.withLock { $0.closeReason } }

    /// Whether the connection is fully closed.
    public var isClosed: Bool { shared.withLock { $0.isClosed } }

    /// Handles every message (including any already received) on the connection's own event loop thread,
    /// as it is decoded: no thread hop, no queueing, which is the fastest way to serve a connection (e.g.
    /// an echo with `sendWithoutWaiting`, whose writes are gathered and written once per read). Keep
    /// `onMessage` short and non-blocking: it holds up every connection on that loop. It may capture the
    /// connection: the connection drops the handler once closed. Do not consume `messages` as well: it
    /// yields nothing after the handler is set, and would take the messages received before.
    public func setLoopHandler(_ onMessage: @escaping @Sendable (WebSocketMessage) -> Void) {
        // Refused once the loop has stopped: the connection is closed by then, with nothing to handle.
        try? loop.enqueue { [self] in
            loopHandler = .messages(onMessage)
            for message in inbound.takeAll() { onMessage(message) }
        }
    }

    /// Like ``setLoopHandler(_:)``, but each message comes as its opcode (`.text` or `.binary`) and
    /// payload bytes: a text message's validated UTF-8 is handed over as received, never copied into a
    /// `String` (for code that forwards bytes, such as an echo; answer with
    /// `sendWithoutWaiting(_:payload:)`). Messages received before are converted.
    public func setPayloadHandler(_ onPayload: @escaping @Sendable (Opcode, [UInt8]) -> Void) {
        // Refused once the loop has stopped: the connection is closed by then, with nothing to handle.
        try? loop.enqueue { [self] in
            loopHandler = .payloads(onPayload)
            for message in inbound.takeAll() { deliver(message) }
        }
    }

    /// Switches to callbacks: every message (including any already received) goes to `onMessage` and the
    /// end to `onClose(code, reason)`, all on `queue` (e.g. `.main`) and in order. `messages` then
    /// yields nothing more.
    public func setHandlers(queue: DispatchQueue, onMessage: @escaping @Sendable (WebSocketMessage) -> Void,
                            onClose: @escaping @Sendable (CloseCode?, String) -> Void)
    {
        inbound.setSink(.init(
            deliver: { batch in queue.async { for message in batch { onMessage(message) } } },
            end: { [weak self] _ in
                let (code, reason) = self?.shared.withLock { ($0.closeCode, $0.closeReason) } ?? (nil, "")
                queue.async { onClose(code, reason) }
            }))
    }

    private func closedError() -> WebSocketError {
        shared.withLock { s in
            s.isClosed ? .closed(s.closeCode, s.closeReason) : .closed(nil, "the connection is closing")
        }
    }

    /// Payloads this large are written by reference (a server's only: a client must mask a copy).
    private static let byReferenceSize = 16 * 1024
    /// Reads go straight into the payload of a frame missing at least this many bytes.
    private static let directReadSize = 16 * 1024

    private func writeFrame(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer, seal: Bool = false)
        -> Channel.WriteOutcome
    {
        let key: UInt32? = role == .client ? MaskingKeyGenerator.random() : nil
        return channel.write(seal: seal) {
            FrameEncoder.encode(opcode: opcode, fin: true, payload: payload, maskingKey: key, into: &$0)
        }
    }

    // MARK: Loop thread: protocol

    private func armHandshakeTimer() {
        let limit = options.handshakeTimeout
        handshakeTimer = loop.schedule(after: limit) { [self] in
            guard lifecycle.state == .connecting else { return }
            failure = .timedOut("the opening handshake did not complete within \(limit)")
            handle(.abort)
        }
    }

    private func armCloseTimer() {
        guard closeTimer == nil, lifecycle.state != .closed else { return }
        closeTimer = loop.schedule(after: options.closeTimeout) { [self] in handle(.closeTimerFired) }
    }

    /// Moves the lifecycle on by `event` and performs what it says. Loop thread only.
    private func handle(_ event: WebSocketCloseHandshake.Event) {
        loop.assertOnLoop()
        switch lifecycle.handle(event) {
        case .none:
            break
        case .becomeOpen:
            becomeOpen()
        case .armCloseTimer:
            armCloseTimer()
        case .sendClose(let code, let reason):
            sendClose(code: code, reason: reason)
            armCloseTimer()
        case .sendCloseAndFinish(let code, let reason):
            sendClose(code: code, reason: reason)
            finishClosing()
        case .finishClosing:
            finishClosing()
        case .closeWhenFlushed:
            channel.closeWhenFlushed()
            armCloseTimer()
        case .closeChannel:
            channel.close()
        case .finish(let initiatedByUs, let peer):
            finish(initiatedByUs: initiatedByUs, peer: peer)
        }
    }

    private func handshakeBytes(_ bytes: UnsafeRawBufferPointer) {
        if plainRequest != nil {
            receiveBody(Array(bytes))
            return
        }
        head.append(contentsOf: bytes)
        let end = head.withUnsafeBytes { Handshake.headEnd(in: $0) }
        // The limit holds however the head arrives: a complete head in one read is measured too.
        guard (end ?? head.count) <= Handshake.maxHeadSize else {
            if role == .client {
                failure = .invalidHandshake("the response head is larger than 16 KiB")
                channel.close()
            } else {
                reject(Handshake.rejection(status: 431, reason: "Request Header Fields Too Large"),
                       .invalidHandshake("the request head is larger than 16 KiB"))
            }
            return
        }
        guard let end else { return }
        let headBytes = Array(head[..<end])
        let rest = Array(head[end...])
        head = []
        if role == .client { clientHandshake(headBytes) } else { serverHandshake(headBytes, rest: rest) }
        if lifecycle.state == .open && !rest.isEmpty {
            rest.withUnsafeBytes { frameBytes($0) }
        }
    }

    private func clientHandshake(_ headBytes: [UInt8]) {
        do {
            let response = try Handshake.parseResponse(headBytes, expectedKey: clientKey,
                                                       subprotocols: options.subprotocols)
            shared.withLock { $0.subprotocol = response.value(for: "Sec-WebSocket-Protocol") }
            handle(.opened)
        } catch {
            failure = error
            handle(.abort)
        }
    }

    private func serverHandshake(_ headBytes: [UInt8], rest: [UInt8]) {
        if let responder = options.httpResponder, let plain = try? HTTPHead.parseRequest(headBytes),
            !plain.tokens(for: "Upgrade").contains("websocket")
        {
            startPlainRequest(plain, rest: rest, responder: responder)
            return
        }
        let request: HTTPHead
        do {
            request = try Handshake.parseRequest(headBytes)
        } catch {
            reject(Handshake.rejection(for: error), error)
            return
        }
        let decision = handshakeHook?(request) ?? .accept
        switch decision {
        case .reject(let status, let reason):
            reject(Handshake.rejection(status: status, reason: reason),
                   .handshakeFailed(status: "HTTP/1.1 \(status) \(reason)"))
        case .accept, .acceptWith:
            var extra: [(String, String)] = []
            if case .acceptWith(let headers) = decision { extra = headers }
            var chosen: String?
            if !extra.contains(where: { $0.0.lowercased() == "sec-websocket-protocol" }) {
                chosen = Handshake.requestedSubprotocols(request).first(where: options.subprotocols.contains)
            }
            let negotiated = chosen ?? extra.first(where: { $0.0.lowercased() == "sec-websocket-protocol" })?.1
            shared.withLock { s in
                s.path = request.path ?? "/"
                s.requestHeaders = request
                s.subprotocol = negotiated
            }
            let response = Handshake.response(for: request, subprotocol: chosen, extraHeaders: extra)
            channel.write { $0.append(contentsOf: response) }
            handle(.opened)
        }
    }

    /// A plain request: answered at once without a body; with `Content-Length` bytes of body (at
    /// most `maxMessageSize`: 413 past it), once they have arrived (within the handshake timeout).
    /// A chunked body is refused with 411.
    private func startPlainRequest(_ request: HTTPHead, rest: [UInt8], responder: @escaping HTTPResponder) {
        if request.value(for: "Transfer-Encoding") != nil {
            reject(HTTPResponse.error(status: 411, reason: "Length Required").serialized(),
                   .handshakeFailed(status: "HTTP/1.1 411 Length Required (chunked request body)"))
            return
        }
        let declared = request.value(for: "Content-Length") ?? "0"
        guard let length = Int(declared), length >= 0, declared.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            reject(HTTPResponse.error(status: 400, reason: "Bad Request").serialized(),
                   .handshakeFailed(status: "HTTP/1.1 400 Bad Request (Content-Length)"))
            return
        }
        guard length <= options.maxMessageSize else {
            reject(HTTPResponse.error(status: 413, reason: "Content Too Large").serialized(),
                   .handshakeFailed(status: "HTTP/1.1 413 Content Too Large"))
            return
        }
        guard length > 0 else {
            answer(request, with: responder)
            return
        }
        plainRequest = (request, length)
        guard let gate = options.httpBodyGate else {
            plainResponder = responder
            receiveBody(rest)
            return
        }
        // While the gate looks at the head, no more of the body is read; what came with the head (or
        // in the same read) is kept in `plainRequest`, which answers nothing until `plainResponder` is set.
        channel.setReading(false)
        receiveBody(rest)
        let loop = self.loop
        Task { [self] in
            let refusal = await gate(request)
            try? loop.enqueue { [self] in
                guard lifecycle.state == .connecting, plainRequest != nil else { return }
                if let refusal {
                    reject(refusal.serialized(includeBody: request.method != "HEAD"),
                           .handshakeFailed(status: "HTTP/1.1 \(refusal.status) \(refusal.reason) (before its body)"))
                    return
                }
                plainResponder = responder
                receiveBody([])
                if plainRequest != nil { channel.setReading(true) }
            }
        }
    }

    /// Adds bytes to the body of ``plainRequest``; answers once it is complete (bytes past it are ignored).
    private func receiveBody(_ bytes: [UInt8]) {
        guard case (var request, let length)? = plainRequest else { return }
        request.body.append(contentsOf: bytes.prefix(length - request.body.count))
        guard request.body.count == length, let responder = plainResponder else {
            plainRequest = (request, length)
            return
        }
        plainRequest = nil
        plainResponder = nil
        answer(request, with: responder)
    }

    /// Answers a plain HTTP request through the app's responder (off the loop), then closes. Reading
    /// pauses meanwhile, so nothing else is parsed as a request.
    ///
    /// The handshake timer guards the request's arrival; once it is complete, the responder has
    /// `options.httpResponseTimeout` of its own (a busy responder is not a slow client), after which
    /// the client gets 503 and the late response is dropped.
    private func answer(_ request: HTTPHead, with responder: @escaping HTTPResponder) {
        channel.setReading(false)
        handshakeTimer?.cancel()
        let limit = options.httpResponseTimeout
        handshakeTimer = loop.schedule(after: limit) { [self] in
            reject(HTTPResponse.error(status: 503, reason: "Service Unavailable").serialized(includeBody: request.method != "HEAD"),
                   .timedOut("the HTTP responder did not answer within \(limit)"))
        }
        let loop = self.loop
        Task { [self] in
            let response = await responder(request)
            // Refused once the loop has stopped: the connection is closed by then.
            try? loop.enqueue { [self] in
                reject(response.serialized(includeBody: request.method != "HEAD"),
                       .handshakeFailed(status: "HTTP/1.1 \(response.status) \(response.reason) (plain HTTP request answered)"))
            }
        }
    }

    private func reject(_ response: [UInt8], _ error: WebSocketError) {
        // The client may have left (or the handshake timer fired) while an HTTP responder worked.
        guard lifecycle.state == .connecting else { return }
        failure = error
        head = []
        plainRequest = nil
        plainResponder = nil
        channel.write(seal: true) { $0.append(contentsOf: response) }
        // Lingering close: send FIN after the response and keep reading (and discarding) until the client
        // closes or `closeTimeout` passes, so that unread request bytes do not make the kernel reset the
        // connection before the client has read the response.
        channel.shutdownOutputWhenFlushed()
        handle(.refused)
    }

    private func becomeOpen() {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        if let interval = options.pingInterval { schedulePing(interval) }
        let callback = onHandshake
        onHandshake = nil
        callback?(.success(()))
    }

    private func schedulePing(_ interval: Duration) {
        pingTimer = loop.schedule(after: interval) { [self] in
            guard lifecycle.isOpen else { return }
            _ = writeFrame(.ping, UnsafeRawBufferPointer(start: nil, count: 0))
            if pongTimer == nil {
                let limit = options.pongTimeout
                pongTimer = loop.schedule(after: limit) { [self] in
                    guard lifecycle.isEstablished else { return }
                    failure = .timedOut("the peer did not answer a ping within \(limit): the connection is presumed dead")
                    handle(.abort)
                }
            }
            schedulePing(interval)
        }
    }

    private func frameBytes(_ bytes: UnsafeRawBufferPointer) {
        guard lifecycle.readsFrames, failure == nil else { return }
        // Decode straight from the read buffer; what is left (a partial header) is copied at the end.
        decoder.lend(bytes)
        decodeFrames()
        decoder.endLoan()
    }

    /// Handles every frame the decoder can complete from the bytes received so far.
    private func decodeFrames() {
        if let timer = pongTimer {
            timer.cancel()
            pongTimer = nil
        }
        do {
            while let frame = try decoder.next() {
                if case .payloads(let handler) = loopHandler, let payload = try assembler.takeWholeMessage(frame) {
                    handle(frame.opcode, payload, with: handler)
                    continue
                }
                guard let event = try assembler.push(frame) else { continue }
                switch event {
                case .text(let text):
                    // The text was copied out of the frame's array: the decoder may reuse it.
                    decoder.recycle(frame.payload)
                    deliver(.text(text))
                case .binary(let bytes):
                    deliver(.binary(bytes))
                case .ping(let payload):
                    if lifecycle.isOpen { _ = payload.withUnsafeBytes { writeFrame(.pong, $0) } }
                case .pong:
                    break
                case .close(let code, let reason):
                    deliverBatch()
                    handle(.peerClose(code, reason))
                    return
                }
            }
        } catch {
            deliverBatch()
            failProtocol(error)
            return
        }
        deliverBatch()
    }

    /// Hands a received message to the loop handler, or adds it to the batch for `inbound`.
    private func deliver(_ message: WebSocketMessage) {
        switch (loopHandler, message) {
        case (.messages(let handler)?, _): handler(message)
        case (.payloads(let handler)?, .text(let text)): handle(.text, Array(text.utf8), with: handler)
        case (.payloads(let handler)?, .binary(let bytes)): handler(.binary, bytes)
        case (nil, _): batch.append(message)
        }
    }

    /// Gives a validated payload to the payload handler, noting a text's storage meanwhile (see
    /// `textBeingHandled`); `payload` holds the array until the handler returns.
    private func handle(_ opcode: Opcode, _ payload: [UInt8], with handler: @Sendable (Opcode, [UInt8]) -> Void) {
        guard opcode == .text else { return handler(opcode, payload) }
        textBeingHandled = payload.withUnsafeBytes { ($0.baseAddress, $0.count) }
        defer { textBeingHandled = nil }
        handler(opcode, payload)
    }

    private func deliverBatch() {
        guard !batch.isEmpty else { return }
        inbound.push(batch)
        batch.removeAll(keepingCapacity: true)
    }

    /// Writes our close frame, the last frame of the connection (the channel refuses later writes).
    private func sendClose(code: CloseCode?, reason: String) {
        let payload = FrameEncoder.closePayload(code: code, reason: reason)
        _ = payload.withUnsafeBytes { writeFrame(.close, $0, seal: true) }
    }

    /// After both close frames: the server closes TCP first; the client waits for it (bounded).
    private func finishClosing() {
        if role == .server { channel.closeWhenFlushed() }
        armCloseTimer()
    }

    private func failProtocol(_ error: WebSocketError) {
        failure = error
        let code = error.closeCode ?? .protocolError
        let reason: String =
            switch error {
            case .protocolViolation(_, let why): why
            default: error.description
            }
        handle(.protocolError(code, reason))
    }

    private func startClose(code: CloseCode, reason: String) {
        loop.assertOnLoop()
        switch lifecycle.state {
        case .connecting, .refused:
            if failure == nil, let tls, !tls.handshakeCompleted {
                failure = .tls(.handshakeFailed("the peer closed the connection during the TLS handshake"))
            } else if failure == nil { failure = .closed(code, "closed before the opening handshake finished") }
        case .open, .closeSent, .closing, .closed:
            break
        }
        handle(.appClose(code, reason))
    }

    private func finish(initiatedByUs: Bool, peer: WebSocketCloseHandshake.PeerClose?) {
        for timer in [handshakeTimer, closeTimer, pingTimer, pongTimer] { timer?.cancel() }
        handshakeTimer = nil
        closeTimer = nil
        pingTimer = nil
        pongTimer = nil
        let code: CloseCode
        let reason: String
        let error: WebSocketError?
        if let peer {
            code = peer.code
            reason = peer.reason
            let normal = peer.code == .normal || peer.code == .goingAway || peer.code == .noStatusReceived
            // A close we started over the peer's protocol violation (an oversized message, say)
            // stays that error when the peer answers it: the reader learns why.
            if let failure, failure.closeCode != nil {
                error = failure
            } else {
                error = initiatedByUs || normal ? nil : .closed(peer.code, peer.reason)
            }
        } else if let failure {
            code = failure.closeCode ?? .abnormalClosure
            reason = failure.description
            error = failure
        } else {
            code = .abnormalClosure
            reason = "the connection ended without a closing handshake"
            error = initiatedByUs ? nil : .closed(.abnormalClosure, reason)
        }
        let waiters = shared.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closeCode = code
            s.closeReason = reason
            s.isClosed = true
            let waiters = s.closeWaiters
            s.closeWaiters = []
            return waiters
        }
        inbound.finish(error)
        for waiter in waiters { waiter.resume() }
        if let callback = onHandshake {
            onHandshake = nil
            callback(.failure(failure ?? error ?? .closed(code, reason)))
        }
        let finished = onFinished
        onFinished = nil
        finished?()
        // The handler may hold the connection (e.g. to answer): drop it to break that cycle.
        loopHandler = nil
    }
}

extension WebSocketConnection: ChannelDelegate {
    package func channelRead(_ bytes: UnsafeRawBufferPointer) {
        loop.assertOnLoop()
        switch lifecycle.state {
        case .connecting: handshakeBytes(bytes)
        case .open, .closeSent, .closing: frameBytes(bytes)
        case .refused, .closed: break
        }
    }

    package func channelEnded(errno: Int32?) {
        loop.assertOnLoop()
        if let errno {
            if let tlsFailure = tls?.failure, failure == nil {
                failure = .tls(tlsFailure)
            } else if failure == nil && !lifecycle.hasPeerClose {
                failure = .io(errno: errno, "reading from the peer")
            }
            handle(.abort)
            return
        }
        switch lifecycle.state {
        case .connecting, .refused:
            if failure == nil, let tls, !tls.handshakeCompleted {
                failure = .tls(.handshakeFailed("the peer closed the connection during the TLS handshake"))
            } else if failure == nil {
                failure = role == .client
                    ? .invalidHandshake("the server closed the connection during the opening handshake")
                    : .closed(nil, "the client closed the connection during the opening handshake")
            }
        case .open, .closeSent, .closing, .closed:
            break
        }
        handle(.peerEnded)
    }

    package func channelClosed() {
        loop.assertOnLoop()
        handle(.channelClosed)
    }

    /// While a large frame's payload is arriving, the socket reads straight into it (see
    /// `FrameDecoder.receivePayload`).
    package func channelReadDirectly(_ read: (UnsafeMutableRawBufferPointer) -> Socket.IOResult) -> Socket.IOResult? {
        loop.assertOnLoop()
        guard lifecycle.readsFrames, failure == nil else { return nil }
        var outcome = Socket.IOResult.wouldBlock
        let took = decoder.receivePayload(minimum: Self.directReadSize) { space in
            outcome = read(space)
            guard case .done(let count) = outcome else { return 0 }
            return count
        }
        guard took else { return nil }
        if case .done(let count) = outcome, count > 0 { decodeFrames() }
        return outcome
    }
}
