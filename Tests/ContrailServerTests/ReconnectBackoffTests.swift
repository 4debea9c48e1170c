import Contrail
import ContrailSupport
import ContrailTestSupport
import Foundation
import Testing

/// Issue 28: a client whose sessions the server ends right after they open backs off as one that
/// cannot connect at all (before, each accepted handshake reset the backoff: 502 sessions in 20 s).
/// Run in virtual time with the default policy; the peer plays a server that accepts every session
/// and ends it at once (close 4097, as for a scope too big to send).
@MainActor
@Suite struct ReconnectBackoffTests {
    /// Serves every connection of `connector`: accepts the session, then ends it at once, or (after
    /// `hold(for:)`) keeps it until ``Driver`` ends it that much virtual time later. Records each
    /// session's virtual start time.
    final class EndingServer: Sendable {
        private struct State {
            var starts: [Duration] = []
            var holdFor: Duration?
            var held: (peer: ScriptedPeer, since: Duration)?
        }

        static let reason = #"{"message":"scope too big to send","type":"limit-exceeded"}"#
        private let state = SanitizerVisibleMutex(State())

        init(_ connector: ScriptedConnector, clock: TestClock) {
            Task { [self] in
                while let peer = try? await connector.nextPeer(timeout: .seconds(600)) {
                    guard case .sessionCreate? = await peer.next() else { continue }
                    let number = state.withLock { state -> Int in
                        state.starts.append(clock.now.offset)
                        return state.starts.count
                    }
                    await peer.send(.sessionCreateReply(SessionCreateReply(sessionToken: "token-\(number)")))
                    let kept = state.withLock { state -> Bool in
                        guard state.holdFor != nil else { return false }
                        state.held = (peer, clock.now.offset)
                        return true
                    }
                    if !kept { await peer.close(code: JetstreamCloseCode.expired, reason: Self.reason) }
                }
            }
        }

        var starts: [Duration] { state.withLock { $0.starts } }

        /// Keeps later sessions open for `duration` of virtual time.
        func hold(for duration: Duration) { state.withLock { $0.holdFor = duration } }

        /// Where the held session stands at `now`.
        enum Hold { case none, justStarted, held }

        /// Whether a session is held (and since when); ends it once it has been held long enough at `now`.
        func releaseIfDue(now: Duration) async -> Hold {
            let (hold, due) = state.withLock { state -> (Hold, ScriptedPeer?) in
                guard let held = state.held, let holdFor = state.holdFor else { return (.none, nil) }
                guard now - held.since >= holdFor else { return (now == held.since ? .justStarted : .held, nil) }
                state.held = nil
                return (.held, held.peer)
            }
            await due?.close(code: JetstreamCloseCode.expired, reason: Self.reason)
            return hold
        }
    }

    /// Moves virtual time on in 10 ms steps for `duration`, only once the client waits on its
    /// backoff, or on its health timer (once, when a held session has just started): time never runs
    /// ahead of the client. While the server holds a session (the client idles online) it moves
    /// freely, and ends the session when due.
    static func run(_ clock: TestClock, _ server: EndingServer, for duration: Duration) async {
        let end = clock.now.offset + duration
        while clock.now.offset < end {
            if await server.releaseIfDue(now: clock.now.offset) != .held {
                await clock.waitForSleepers(1, dueWithin: .seconds(11), timeout: .seconds(30))
            }
            clock.advance(by: .milliseconds(10))
        }
    }

    @Test func sessionsEndedAtOnceAreOpenedAtMostElevenTimesIn20Seconds() async throws {
        let clock = TestClock()
        var options = ClientOptions(clock: clock)
        options.pingInterval = .seconds(600)   // only the backoff and the health timer sleep within 11 s
        options.connectTimeout = .seconds(600)
        let connector = ScriptedConnector()
        let server = EndingServer(connector, clock: clock)
        let client = Client(connector: connector, options: options)
        _ = try await client.connect()
        await Self.run(clock, server, for: .seconds(20))
        // The default policy (100 ms doubling to 10 s, up to half off at random): at least 50, 100,
        // 200 … ms apart, so at most 11 sessions in 20 s whatever the draws.
        let starts = server.starts
        #expect(starts.count <= 11, "\(starts.count) sessions in 20 s: \(starts)")
        #expect(starts.count >= 6, "it does keep trying: \(starts)")
        let gaps = zip(starts, starts.dropFirst()).map { $1 - $0 }
        #expect(gaps.dropFirst(5).allSatisfy { $0 >= .seconds(1) }, "later retries are seconds apart: \(gaps)")

        // Positive control: sessions that stay up past the health period (10 s) are forgiven: each
        // loss reconnects within the first backoff step (100 ms, plus a step of the driver).
        server.hold(for: .seconds(11))
        let before = starts.count
        await Self.run(clock, server, for: .seconds(40))
        let later = Array(server.starts.dropFirst(before + 1))
        #expect(later.count >= 2, "\(server.starts)")
        let heldGaps = zip(server.starts.dropFirst(before), later).map { $1 - $0 }
        #expect(heldGaps.allSatisfy { $0 <= .seconds(11) + .milliseconds(130) }, "\(heldGaps)")
        await client.close()
    }

    @Test func theDelaysGrowAndAreCappedWhateverTheDraw() {
        let policy = ReconnectPolicy()
        #expect(policy.healthyAfter == .seconds(10))
        for attempt in 0..<40 {
            let longest = policy.delay(attempt: attempt, random: 0)
            let shortest = policy.delay(attempt: attempt, random: 1)
            #expect(longest <= .seconds(10))
            #expect(shortest * 2 == longest, "jitter takes at most half off")
        }
        #expect(policy.delay(attempt: 0, random: 0) == .milliseconds(100))
        #expect(policy.delay(attempt: 7, random: 1) == .seconds(5), "capped: at most one reconnect per 5 s")
        #expect(policy.delay(attempt: 3, random: 0.5) == .milliseconds(600))
    }
}
