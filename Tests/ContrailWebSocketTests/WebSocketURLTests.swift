import Testing
import ContrailWebSocket

@Suite struct WebSocketURLTests {
    @Test func hostNameWithDefaultPortAndPath() throws {
        let url = try WebSocketURL("ws://Example.COM")
        #expect(url.host == "example.com")
        #expect(url.port == 80)
        #expect(url.path == "/")
        #expect(!url.isIPv6)
        #expect(url.hostHeader == "example.com")
        #expect(url.description == "ws://example.com/")
    }

    @Test func ipv4PortPathAndQuery() throws {
        let url = try WebSocketURL("ws://127.0.0.1:8080/sync/v1?token=abc&x=1")
        #expect(url.host == "127.0.0.1")
        #expect(url.port == 8080)
        #expect(url.path == "/sync/v1?token=abc&x=1")
        #expect(url.hostHeader == "127.0.0.1:8080")
    }

    @Test func ipv6Literal() throws {
        let url = try WebSocketURL("ws://[::1]:9001/")
        #expect(url.host == "::1")
        #expect(url.isIPv6)
        #expect(url.port == 9001)
        #expect(url.hostHeader == "[::1]:9001")
        let full = try WebSocketURL("ws://[2001:db8:0:0:0:0:2:1]/x")
        #expect(full.host == "2001:db8:0:0:0:0:2:1")
        #expect(full.port == 80)
        #expect(try WebSocketURL("ws://[::ffff:192.0.2.1]").isIPv6)
        #expect(try WebSocketURL("ws://[fe80::1%eth0]:1").host == "fe80::1%eth0")
    }

    @Test func queryWithoutPathAndFragment() throws {
        #expect(try WebSocketURL("ws://h?a=1").path == "/?a=1")
        #expect(try WebSocketURL("ws://h/p#frag").path == "/p")
        #expect(try WebSocketURL("WS://h:1").port == 1)
    }

    @Test func wssIsSecureWithPort443() throws {
        let url = try WebSocketURL("wss://example.com/x")
        #expect(url.isSecure && url.port == 443 && url.hostHeader == "example.com")
        #expect(url.description == "wss://example.com/x")
        #expect(try WebSocketURL("wss://example.com:8443/").hostHeader == "example.com:8443")
        #expect(try WebSocketURL("ws://example.com/").isSecure == false)
        #expect(throws: WebSocketError.unsupportedScheme("http")) { try WebSocketURL("http://example.com/") }
    }

    @Test(arguments: [
        "", "example.com", "ws:/example.com", "ws://", "ws:///path", "ws://:80/", "ws://host:", "ws://host:0",
        "ws://host:65536", "ws://host:8o", "ws://host:-1", "ws://ho st/", "ws://user@host/", "ws://[::1/",
        "ws://[::1]x/", "ws://[1:2:3:4:5:6:7:8:9]/", "ws://[1::2::3]/", "ws://[gggg::1]/", "ws://[]/",
        "ws://256.1.1.1/", "ws://1.2.3/", "ws://host..com/", "ws://host/has space", "://host", "1ws://host",
    ])
    func garbageIsATypedError(text: String) {
        #expect {
            try WebSocketURL(text)
        } throws: { error in
            guard let error = error as? WebSocketError else { return false }
            switch error {
            case .invalidURL, .unsupportedScheme: return true
            default: return false
            }
        }
    }

    @Test func errorsExplainThemselves() {
        do {
            _ = try WebSocketURL("ws://host:99999/")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("99999"))
        }
        #expect(WebSocketError.unsupportedScheme("wss").description.contains("wss"))
    }
}
