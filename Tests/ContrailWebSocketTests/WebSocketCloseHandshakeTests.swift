import Testing
@testable import ContrailWebSocket

@Suite("WebSocket close handshake")
struct WebSocketCloseHandshakeTests {
    typealias H = WebSocketCloseHandshake

    private func expect(_ state: H.State, _ event: H.Event, _ next: H.State, _ action: H.Action,
                        sourceLocation: SourceLocation = #_sourceLocation)
    {
        let got = H.transition(from: state, on: event)
        #expect(got?.0 == next && got?.1 == action, "\(state) on \(event): got \(String(describing: got))",
                sourceLocation: sourceLocation)
    }

    private static let peerNormal = H.PeerClose(code: .normal, reason: "")

    @Test("illegal transitions: frames before the connection is open or once closing, a second opening, timers and a close after closed")
    func illegalTransitions() {
        for state in H.State.all {
            for event in H.Event.all {
                let illegal: Bool
                switch (state, event) {
                case (.connecting, .protocolError), (.connecting, .peerClose), (.connecting, .closeTimerFired): illegal = true
                case (.refused, .opened), (.refused, .refused), (.refused, .protocolError), (.refused, .peerClose): illegal = true
                case (.open, .opened), (.open, .refused), (.closeSent, .opened), (.closeSent, .refused): illegal = true
                case (.closing, .protocolError), (.closing, .peerClose), (.closing, .opened), (.closing, .refused): illegal = true
                case (.closed, .opened), (.closed, .protocolError), (.closed, .peerClose), (.closed, .closeTimerFired),
                     (.closed, .channelClosed):
                    illegal = true
                default: illegal = false
                }
                #expect((H.transition(from: state, on: event) == nil) == illegal, "\(state) on \(event)")
            }
        }
    }

    @Test("opening handshake: opened, refused (lingering), or dropped")
    func opening() {
        expect(.connecting, .opened, .open, .becomeOpen)
        expect(.connecting, .refused, .refused, .armCloseTimer)
        for event in [H.Event.appClose(.normal, ""), .peerEnded, .abort] {
            expect(.connecting, event, .connecting, .closeChannel)
            expect(.refused, event, .refused, .closeChannel)
        }
        expect(.refused, .closeTimerFired, .refused, .closeChannel)
        expect(.connecting, .channelClosed, .closed, .finish(initiatedByUs: false, peer: nil))
        expect(.refused, .channelClosed, .closed, .finish(initiatedByUs: false, peer: nil))
    }

    @Test("we close first: close sent, the peer's close finishes it, the result says we started it")
    func weCloseFirst() {
        expect(.open, .appClose(CloseCode(4001), "bye"), .closeSent, .sendClose(CloseCode(4001), "bye"))
        expect(.closeSent, .appClose(.normal, ""), .closeSent, .none)
        let peer = H.PeerClose(code: CloseCode(4001), reason: "")
        expect(.closeSent, .peerClose(CloseCode(4001), ""), .closing(initiatedByUs: true, peer: peer), .finishClosing)
        expect(.closeSent, .peerClose(nil, ""),
               .closing(initiatedByUs: true, peer: H.PeerClose(code: .noStatusReceived, reason: "")), .finishClosing)
        expect(.closeSent, .protocolError(.protocolError, "bad"), .closing(initiatedByUs: true, peer: nil), .finishClosing)
        expect(.closing(initiatedByUs: true, peer: peer), .channelClosed, .closed, .finish(initiatedByUs: true, peer: peer))
        // The peer never answers: the close timer drops TCP, and the end still counts as ours.
        expect(.closeSent, .closeTimerFired, .closeSent, .closeChannel)
        expect(.closeSent, .channelClosed, .closed, .finish(initiatedByUs: true, peer: nil))
    }

    @Test("the peer closes first: echoed with its code and no reason")
    func peerClosesFirst() {
        let peer = H.PeerClose(code: CloseCode(4002), reason: "server bye")
        expect(.open, .peerClose(CloseCode(4002), "server bye"), .closing(initiatedByUs: false, peer: peer),
               .sendCloseAndFinish(CloseCode(4002), ""))
        expect(.open, .peerClose(nil, ""), .closing(initiatedByUs: false, peer: H.PeerClose(code: .noStatusReceived, reason: "")),
               .sendCloseAndFinish(nil, ""))
        expect(.closing(initiatedByUs: false, peer: peer), .appClose(.normal, ""), .closing(initiatedByUs: false, peer: peer), .none)
        expect(.closing(initiatedByUs: false, peer: peer), .channelClosed, .closed, .finish(initiatedByUs: false, peer: peer))
    }

    @Test("a protocol error closes with its code and stops decoding")
    func protocolError() {
        expect(.open, .protocolError(.protocolError, "unmasked"), .closing(initiatedByUs: false, peer: nil),
               .sendCloseAndFinish(.protocolError, "unmasked"))
        var handshake = H()
        _ = handshake.handle(.opened)
        #expect(handshake.readsFrames && handshake.isOpen)
        _ = handshake.handle(.protocolError(.protocolError, "unmasked"))
        #expect(!handshake.readsFrames && !handshake.isOpen && handshake.isEstablished && !handshake.hasPeerClose)
    }

    @Test("TCP ending, timers and aborts while established")
    func tcpAndTimers() {
        let states: [H.State] = [.open, .closeSent, .closing(initiatedByUs: false, peer: Self.peerNormal)]
        for state in states {
            expect(state, .peerEnded, state, .closeWhenFlushed)
            expect(state, .closeTimerFired, state, .closeChannel)
            expect(state, .abort, state, .closeChannel)
        }
        expect(.open, .channelClosed, .closed, .finish(initiatedByUs: false, peer: nil))
    }

    @Test("closed is final: late requests do nothing")
    func closedIsFinal() {
        for event in [H.Event.refused, .appClose(.normal, ""), .abort, .peerEnded] {
            expect(.closed, event, .closed, .none)
        }
    }

    @Test("queries follow the state")
    func queries() {
        var handshake = H()
        #expect(!handshake.readsFrames && !handshake.isOpen && !handshake.isEstablished)
        #expect(handshake.handle(.opened) == .becomeOpen)
        #expect(handshake.readsFrames && handshake.isOpen && handshake.isEstablished)
        #expect(handshake.handle(.appClose(.normal, "")) == .sendClose(.normal, ""))
        #expect(handshake.readsFrames && !handshake.isOpen && handshake.isEstablished && !handshake.hasPeerClose)
        #expect(handshake.handle(.peerClose(.normal, "")) == .finishClosing)
        #expect(!handshake.readsFrames && handshake.hasPeerClose)
        #expect(handshake.handle(.channelClosed) == .finish(initiatedByUs: true, peer: Self.peerNormal))
        #expect(!handshake.isEstablished && !handshake.hasPeerClose)
    }
}
