/// The lifecycle of a `WebSocketConnection`, from the opening handshake through the closing handshake
/// of RFC 6455 §7, as one state machine:
///
/// ```
/// connecting ──opened──▶ open ──appClose──▶ closeSent ──peerClose──▶ closing ──channelClosed──▶ closed
///     │                   ├──peerClose (echoed)───────────────────▶ closing
///     │                   └──protocolError (close sent)──────────▶ closing
///     └──refused──▶ refused (server: response sent, lingering)
/// ```
///
/// `closeSent`: this side sent its close frame first (the app asked) and waits for the peer's, bounded by
/// the close timer. `closing`: both close frames are exchanged (or a protocol error ended the
/// conversation): the server closes TCP once its close frame is flushed, the client waits for that,
/// both bounded by the close timer. A peer's close that arrives while `open` ("closeReceived") is
/// answered in the same step, so it goes straight to `closing`. Who started the close (the app: the
/// messages then end cleanly whatever the peer's code) and the peer's close frame travel with the
/// state to `closed`, where they decide the connection's close code and error.
///
/// `transition(from:on:)` is the whole table (nil: an event that cannot happen in that state);
/// `handle(_:)` applies it and returns the action the connection performs. Illegal transitions trap
/// in debug builds and change nothing in release builds. Loop thread only.
struct WebSocketCloseHandshake: StateMachine, Equatable, Sendable {
    /// The peer's close frame: its code (`.noStatusReceived` if it had none) and reason.
    struct PeerClose: Equatable, Sendable {
        var code: CloseCode
        var reason: String
    }

    enum State: Equatable, Sendable {
        /// The opening handshake is under way.
        case connecting
        /// A server refused the opening handshake: its response is out, and it reads (and discards)
        /// until the client closes or the close timer fires.
        case refused
        /// Messages flow both ways.
        case open
        /// The app closed: our close frame is out, the peer's has not come.
        case closeSent
        /// Both close frames are exchanged (or a protocol error ended it): waiting for TCP to end.
        case closing(initiatedByUs: Bool, peer: PeerClose?)
        /// The TCP connection is closed.
        case closed

        /// One of each state, for tests that walk the table.
        static var all: [State] {
            [.connecting, .refused, .open, .closeSent, .closing(initiatedByUs: false, peer: nil),
             .closing(initiatedByUs: true, peer: PeerClose(code: .normal, reason: "")), .closed]
        }
    }

    enum Event: Equatable, Sendable {
        /// The opening handshake succeeded.
        case opened
        /// A server refused the opening handshake (its response is queued).
        case refused
        /// The app calls `close(code:reason:)`.
        case appClose(CloseCode, String)
        /// The peer broke the protocol: we close with this code and reason.
        case protocolError(CloseCode, String)
        /// The peer's close frame arrived (its code, nil for none, and reason).
        case peerClose(CloseCode?, String)
        /// The peer ended TCP (end of stream) without an error.
        case peerEnded
        /// The close timer fired.
        case closeTimerFired
        /// Drop the connection now (a timeout, a socket error, a failed opening handshake).
        case abort
        /// The channel closed.
        case channelClosed

        /// One of each event, for tests that walk the table.
        static var all: [Event] {
            [.opened, .refused, .appClose(.normal, ""), .protocolError(.protocolError, "bad"),
             .peerClose(.normal, ""), .peerClose(nil, ""), .peerEnded, .closeTimerFired, .abort, .channelClosed]
        }
    }

    enum Action: Equatable, Sendable {
        /// Nothing to do.
        case none
        /// Cancel the handshake timer, start keep-alive pings, report the open connection.
        case becomeOpen
        /// Start the close timer (lingering after a refusal).
        case armCloseTimer
        /// Send a close frame with this code (nil: none) and reason, and start the close timer.
        case sendClose(CloseCode?, String)
        /// Send a close frame with this code and reason, then finish the handshake (`finishClosing`).
        case sendCloseAndFinish(CloseCode?, String)
        /// The server closes TCP once its close frame is flushed; both start the close timer.
        case finishClosing
        /// Close TCP once what is queued is flushed, and start the close timer.
        case closeWhenFlushed
        /// Drop TCP now.
        case closeChannel
        /// Report the end: whether this side started the close, and the peer's close frame if any.
        case finish(initiatedByUs: Bool, peer: PeerClose?)
    }

    var state = State.connecting

    /// Whether frames received now are decoded (after `closing` they are not).
    var readsFrames: Bool {
        switch state {
        case .open, .closeSent: true
        case .connecting, .refused, .closing, .closed: false
        }
    }

    /// Whether this side may still send control frames of its own (pings, pongs).
    var isOpen: Bool { state == .open }

    /// Whether the peer's close frame has arrived (and the connection is not yet closed).
    var hasPeerClose: Bool {
        if case .closing(_, let peer) = state { peer != nil } else { false }
    }

    /// Whether the opening handshake is done and the connection not yet closed.
    var isEstablished: Bool {
        switch state {
        case .open, .closeSent, .closing: true
        case .connecting, .refused, .closed: false
        }
    }

    /// The table: the next state and the action, or nil for an event that cannot happen in `state`.
    static func transition(from state: State, on event: Event) -> (State, Action)? {
        switch (state, event) {
        case (.connecting, .opened): return (.open, .becomeOpen)
        case (.connecting, .refused): return (.refused, .armCloseTimer)
        case (.connecting, .appClose), (.connecting, .peerEnded), (.connecting, .abort): return (state, .closeChannel)
        // Nothing is decoded and no close timer runs before the connection is open.
        case (.connecting, .protocolError), (.connecting, .peerClose), (.connecting, .closeTimerFired): return nil

        case (.refused, .appClose), (.refused, .peerEnded), (.refused, .closeTimerFired), (.refused, .abort):
            return (state, .closeChannel)
        case (.refused, .opened), (.refused, .refused), (.refused, .protocolError), (.refused, .peerClose): return nil

        case (.open, .appClose(let code, let reason)): return (.closeSent, .sendClose(code, reason))
        case (.open, .protocolError(let code, let reason)):
            return (.closing(initiatedByUs: false, peer: nil), .sendCloseAndFinish(code, reason))
        case (.open, .peerClose(let code, let reason)):
            // Echo the peer's code (RFC 6455 §5.5.1), without a reason.
            return (.closing(initiatedByUs: false, peer: PeerClose(code: code ?? .noStatusReceived, reason: reason)),
                    .sendCloseAndFinish(code, ""))
        case (.open, .peerEnded), (.closeSent, .peerEnded), (.closing, .peerEnded): return (state, .closeWhenFlushed)
        case (.open, .closeTimerFired), (.closeSent, .closeTimerFired), (.closing, .closeTimerFired): return (state, .closeChannel)
        case (.open, .abort), (.closeSent, .abort), (.closing, .abort): return (state, .closeChannel)
        case (.open, .opened), (.open, .refused): return nil

        case (.closeSent, .appClose): return (state, .none)
        case (.closeSent, .protocolError): return (.closing(initiatedByUs: true, peer: nil), .finishClosing)
        case (.closeSent, .peerClose(let code, let reason)):
            return (.closing(initiatedByUs: true, peer: PeerClose(code: code ?? .noStatusReceived, reason: reason)), .finishClosing)
        case (.closeSent, .opened), (.closeSent, .refused): return nil

        case (.closing, .appClose): return (state, .none)
        // Frames are not decoded once closing.
        case (.closing, .protocolError), (.closing, .peerClose), (.closing, .opened), (.closing, .refused): return nil

        case (.connecting, .channelClosed), (.refused, .channelClosed), (.open, .channelClosed):
            return (.closed, .finish(initiatedByUs: false, peer: nil))
        case (.closeSent, .channelClosed): return (.closed, .finish(initiatedByUs: true, peer: nil))
        case (.closing(let initiated, let peer), .channelClosed): return (.closed, .finish(initiatedByUs: initiated, peer: peer))

        // A refusal answered after the client left (an app's HTTP responder is slow), a late close or
        // abort: nothing left to do.
        case (.closed, .refused), (.closed, .appClose), (.closed, .abort), (.closed, .peerEnded): return (state, .none)
        // The channel closes once; frames, timers and the handshake stop with it.
        case (.closed, .opened), (.closed, .protocolError), (.closed, .peerClose), (.closed, .closeTimerFired),
             (.closed, .channelClosed):
            return nil
        }
    }

    /// Applies `event` and returns what to do (see `StateMachine.handle`); nothing, for an illegal
    /// event in a release build.
    @inline(__always)
    mutating func handle(_ event: Event) -> Action { handle(event, fallback: .none) }
}
