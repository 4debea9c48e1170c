@testable import ContrailServer
import ContrailTestSupport
import ContrailWebSocket
import Testing

/// The client address behind the throttle and the log (issue 22, item 4): IP parsing, CIDR ranges,
/// `X-Forwarded-For` from trusted proxies only, and the throttle's bounded table.
@Suite("Client addresses and the throttle's table")
struct ClientAddressTests {
    @Test func parsesIPv4AndIPv6AndRejectsEverythingElse() {
        #expect(IPAddress("192.0.2.1")?.description == "192.0.2.1")
        #expect(IPAddress("::ffff:192.0.2.1") == IPAddress("192.0.2.1"))
        #expect(IPAddress("2001:db8::1")?.description == "2001:db8:0:0:0:0:0:1")
        #expect(IPAddress("[::1]") == IPAddress("0:0:0:0:0:0:0:1"))
        #expect(IPAddress("::") != nil)
        for bad in ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01234.1.1.1", "1.2.3.4:80", "example.com", ":::", "1::2::3",
                    "12345::", "g::1", "+1::", "1:2:3:4:5:6:7:8:9", "::1%eth0", String(repeating: "1", count: 100)] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
    }

    @Test func rangesMatchTheirPrefixOnly() throws {
        let ten = try #require(AddressRange("10.0.0.0/8"))
        #expect(ten.contains(try #require(IPAddress("10.255.1.2"))))
        #expect(!ten.contains(try #require(IPAddress("11.0.0.1"))))
        let one = try #require(AddressRange("192.0.2.7"))
        #expect(one.contains(try #require(IPAddress("192.0.2.7"))))
        #expect(!one.contains(try #require(IPAddress("192.0.2.8"))))
        let v6 = try #require(AddressRange("2001:db8::/32"))
        #expect(v6.contains(try #require(IPAddress("2001:db8:ffff::1"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(!v6.contains(try #require(IPAddress("10.0.0.1"))))
        #expect(AddressRange("10.1.2.3/8")?.description == "10.0.0.0/8")
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "/8", "x/8", "10.0.0.0/8/8"] {
            #expect(AddressRange(bad) == nil, "\(bad)")
        }
    }

    @Test func forwardedForIsBelievedFromTrustedProxiesOnly() throws {
        let trusted = [try #require(AddressRange("127.0.0.9")), try #require(AddressRange("10.0.0.0/8"))]
        let header = [("X-Forwarded-For", "198.51.100.1, 203.0.113.5, 10.1.1.1")]
        #expect(ClientAddress.resolve(peer: "127.0.0.9", headers: header, trusted: trusted) == "203.0.113.5")
        // Positive control: the same header from an untrusted peer is ignored.
        #expect(ClientAddress.resolve(peer: "127.0.0.8", headers: header, trusted: trusted) == "127.0.0.8")
        // Several header lines read in order; every entry trusted: the leftmost.
        #expect(ClientAddress.resolve(peer: "127.0.0.9", headers: [("x-forwarded-for", "10.0.0.2"), ("X-Forwarded-For", "10.0.0.3")],
                                      trusted: trusted) == "10.0.0.2")
        // No header: the proxy itself. Garbage ends the walk at the last address believed.
        #expect(ClientAddress.resolve(peer: "127.0.0.9", headers: [], trusted: trusted) == "127.0.0.9")
        #expect(ClientAddress.resolve(peer: "127.0.0.9", headers: [("X-Forwarded-For", "1.2.3.4, evil, 10.0.0.5")], trusted: trusted) == "10.0.0.5")
        #expect(ClientAddress.resolve(peer: "127.0.0.9", headers: [("X-Forwarded-For", "<script>")], trusted: trusted) == "127.0.0.9")
        // IPv4-mapped peers are their IPv4 address; in-process peers are one source.
        #expect(ClientAddress.resolve(peer: "::ffff:127.0.0.9", headers: header, trusted: trusted) == "203.0.113.5")
        #expect(ClientAddress.resolve(peer: nil, headers: header, trusted: trusted) == "in-process")
    }

    @Test func theThrottleCountsIPv6ByItsSlash64AndKeepsABoundedTable() {
        #expect(AuthThrottle.source(of: "2001:db8:1:2:aaaa::1") == AuthThrottle.source(of: "2001:db8:1:2:bbbb::9"))
        #expect(AuthThrottle.source(of: "2001:db8:1:2::1") != AuthThrottle.source(of: "2001:db8:1:3::1"))
        #expect(AuthThrottle.source(of: "192.0.2.1") == "192.0.2.1")
        let clock = TestClock()
        let throttle = AuthThrottle(initialDelay: .seconds(1), maxDelay: .seconds(8), maxWaitingPerSource: 1,
                                    clock: ElapsedClock(clock), maxSources: 100, maxWaiting: 10)
        #expect(throttle.delay(afterFailures: 1) == .seconds(1))
        #expect(throttle.delay(afterFailures: 4) == .seconds(8))
        #expect(throttle.delay(afterFailures: 1_000) == .seconds(8))
        for number in 0..<1_000 {
            let answer = throttle.failed("source-\(number)")
            #expect(answer.note == .firstOfEpisode)
            if answer.holdsPlace { throttle.release("source-\(number)") }
        }
        #expect(throttle.counts.sources <= 100)
        // Waiting places are bounded over all sources too.
        let held = (0..<20).map { throttle.failed("busy-\($0)") }
        #expect(held.filter(\.holdsPlace).count == 10)
        #expect(throttle.counts.waiting == 10)
        // A source quiet for twice the longest delay starts afresh.
        _ = throttle.failed("again")
        clock.advance(by: .seconds(16))
        #expect(throttle.failed("again").note == .firstOfEpisode)
    }
}
