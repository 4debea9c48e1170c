import Testing
import ContrailWebSocket

@Suite struct HandshakeTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private let validRequest = """
        GET /chat?room=1 HTTP/1.1\r
        Host: server.example.com\r
        Upgrade: websocket\r
        Connection: keep-alive, Upgrade\r
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
        Sec-WebSocket-Version: 13\r
        Sec-WebSocket-Protocol: chat, superchat\r
        X-Session: abc123\r
        \r

        """

    @Test func acceptKeyRFCExample() {
        #expect(Handshake.acceptKey(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func makeKeyIsSixteenRandomBytesInBase64() throws {
        let a = Handshake.makeKey()
        let b = Handshake.makeKey()
        #expect(a.utf8.count == 24)
        #expect(a.hasSuffix("=="))
        #expect(a != b)
        // A server accepts it as a key.
        let request = Handshake.request(url: try WebSocketURL("ws://h/"), key: a, headers: [], subprotocols: [])
        #expect(throws: Never.self) { try Handshake.parseRequest(request) }
    }

    @Test func clientRequestAndServerParse() throws {
        let url = try WebSocketURL("ws://[::1]:9000/path?q=1")
        let request = Handshake.request(
            url: url, key: "dGhlIHNhbXBsZSBub25jZQ==", headers: [("Authorization", "Bearer t0ken")], subprotocols: ["v1", "v2"])
        let text = String(decoding: request, as: UTF8.self)
        #expect(text.hasPrefix("GET /path?q=1 HTTP/1.1\r\nHost: [::1]:9000\r\n"))
        #expect(text.hasSuffix("\r\n\r\n"))
        let head = try Handshake.parseRequest(request)
        #expect(head.method == "GET")
        #expect(head.path == "/path?q=1")
        #expect(head.value(for: "authorization") == "Bearer t0ken")
        #expect(head.value(for: "SEC-WEBSOCKET-KEY") == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(Handshake.requestedSubprotocols(head) == ["v1", "v2"])
        #expect(request.withUnsafeBytes { Handshake.headEnd(in: $0) } == request.count)
    }

    @Test func headersWithLineBreaksAreLeftOutAndReported() throws {
        let request = Handshake.request(
            url: try WebSocketURL("ws://h/"), key: Handshake.makeKey(),
            headers: [("X-Evil", "a\r\nInjected: yes"), ("Bad Name", "v"), ("X-Good", "ok")], subprotocols: [])
        let head = try Handshake.parseRequest(request)
        #expect(head.value(for: "Injected") == nil)
        #expect(head.value(for: "X-Evil") == nil)
        #expect(head.value(for: "X-Good") == "ok")
        #expect(throws: WebSocketError.self) { try Handshake.validate(headers: [("X-Evil", "a\r\nb")]) }
        #expect(throws: WebSocketError.self) { try Handshake.validate(headers: [("Bad Name", "v")]) }
        #expect(throws: Never.self) { try Handshake.validate(headers: [("X-Good", "ok")]) }
    }

    @Test func serverParsesValidRequest() throws {
        let head = try Handshake.parseRequest(bytes(validRequest))
        #expect(head.startLine == "GET /chat?room=1 HTTP/1.1")
        #expect(head.path == "/chat?room=1")
        #expect(head.status == nil)
        #expect(head.value(for: "x-session") == "abc123")
        #expect(head.tokens(for: "Connection") == ["keep-alive", "upgrade"])
    }

    @Test(arguments: [
        ("GET /chat", "POST /chat"),
        ("HTTP/1.1\r\n", "HTTP/1.0\r\n"),
        ("Upgrade: websocket\r\n", "Upgrade: h2c\r\n"),
        ("Upgrade: websocket\r\n", ""),
        ("Connection: keep-alive, Upgrade\r\n", "Connection: keep-alive\r\n"),
        ("Sec-WebSocket-Version: 13\r\n", "Sec-WebSocket-Version: 8\r\n"),
        ("Sec-WebSocket-Version: 13\r\n", ""),
        ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", ""),
        ("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZQ=="),  // 11 bytes, not 16
        ("dGhlIHNhbXBsZSBub25jZQ==", "not base64 at all!!!!!!!"),
        ("Host: server.example.com\r\n", ""),
        ("X-Session: abc123\r\n", "no colon here\r\n"),
        ("X-Session: abc123\r\n", " folded continuation\r\n"),
    ])
    func serverRejectsInvalidRequests(replace: String, with replacement: String) {
        // Replace the first occurrence only.
        var request = validRequest
        if let range = request.firstRange(of: replace) { request.replaceSubrange(range, with: replacement) }
        #expect(request != validRequest)
        #expect {
            try Handshake.parseRequest(bytes(request))
        } throws: { error in
            guard let error = error as? WebSocketError, case .invalidHandshake = error else { return false }
            return true
        }
    }

    @Test func garbageRequestIsATypedError() {
        for garbage in [[], [0x00, 0xFF, 0x0D, 0x0A], bytes("\r\n\r\n"), bytes("GET\r\n\r\n"), [UInt8](repeating: 0x41, count: 5000)] {
            #expect(throws: WebSocketError.self) { try Handshake.parseRequest(garbage) }
        }
    }

    @Test func serverResponseIsAcceptedByClient() throws {
        let key = Handshake.makeKey()
        let request = try Handshake.parseRequest(
            Handshake.request(url: try WebSocketURL("ws://h/"), key: key, headers: [], subprotocols: ["chat"]))
        let response = Handshake.response(for: request, subprotocol: "chat", extraHeaders: [("Set-Cookie", "s=1")])
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(text.contains("Sec-WebSocket-Accept: \(Handshake.acceptKey(for: key))\r\n"))
        let head = try Handshake.parseResponse(response, expectedKey: key, subprotocols: ["chat"])
        #expect(head.status == 101)
        #expect(head.value(for: "Sec-WebSocket-Protocol") == "chat")
        #expect(head.value(for: "set-cookie") == "s=1")
    }

    @Test func rfcExampleResponse() throws {
        let response = bytes("""
            HTTP/1.1 101 Switching Protocols\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r
            \r

            """)
        let head = try Handshake.parseResponse(response, expectedKey: "dGhlIHNhbXBsZSBub25jZQ==", subprotocols: [])
        #expect(head.status == 101)
    }

    @Test func refusedHandshakeCarriesTheStatusLine() {
        let rejection = Handshake.rejection(status: 403, reason: "invalid session token")
        let text = String(decoding: rejection, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 invalid session token\r\n"))
        #expect(text.hasSuffix("\r\n\r\ninvalid session token\n"))
        let headLength = rejection.withUnsafeBytes { Handshake.headEnd(in: $0) } ?? 0
        #expect(headLength > 0 && headLength < rejection.count)
        #expect(throws: WebSocketError.handshakeFailed(status: "HTTP/1.1 403 invalid session token")) {
            try Handshake.parseResponse(Array(rejection[..<headLength]), expectedKey: "x", subprotocols: [])
        }
    }

    @Test func rejectionReasonCannotBreakTheStatusLine() {
        let text = String(decoding: Handshake.rejection(status: 401, reason: "no\r\nX-Injected: 1"), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 401 no  X-Injected: 1\r\n"))
        #expect(String(decoding: Handshake.rejection(status: 404, reason: ""), as: UTF8.self).hasPrefix("HTTP/1.1 404 Not Found\r\n"))
    }

    @Test func rejectionForInvalidRequest() throws {
        var badVersion = validRequest
        if let range = badVersion.firstRange(of: "Version: 13") { badVersion.replaceSubrange(range, with: "Version: 7") }
        do {
            _ = try Handshake.parseRequest(bytes(badVersion))
            Issue.record("expected an error")
        } catch {
            let text = String(decoding: Handshake.rejection(for: error), as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 426 "))
            #expect(text.contains("Sec-WebSocket-Version: 13\r\n"))
        }
        let badRequest = String(decoding: Handshake.rejection(for: .invalidHandshake("no key")), as: UTF8.self)
        #expect(badRequest.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
    }

    @Test(arguments: [
        ("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        ("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n", ""),
        ("Upgrade: websocket\r\n", ""),
        ("Connection: Upgrade\r\n", "Connection: close\r\n"),
        ("Connection: Upgrade\r\n", "Connection: Upgrade\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"),
        ("Connection: Upgrade\r\n", "Connection: Upgrade\r\nSec-WebSocket-Protocol: unoffered\r\n"),
        ("HTTP/1.1 101", "HTTP/1.0 101"),
        ("HTTP/1.1 101 Switching Protocols", "garbage"),
    ])
    func clientRejectsInvalidResponses(replace: String, with replacement: String) {
        var response = """
            HTTP/1.1 101 Switching Protocols\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r
            \r

            """
        if let range = response.firstRange(of: replace) { response.replaceSubrange(range, with: replacement) }
        #expect {
            try Handshake.parseResponse(bytes(response), expectedKey: "dGhlIHNhbXBsZSBub25jZQ==", subprotocols: [])
        } throws: { error in
            guard let error = error as? WebSocketError, case .invalidHandshake = error else { return false }
            return true
        }
    }

    @Test func headEndFindsTheBlankLine() {
        func end(_ text: String) -> Int? { Array(text.utf8).withUnsafeBytes { Handshake.headEnd(in: $0) } }
        #expect(end("") == nil)
        #expect(end("GET / HTTP/1.1\r\nHost: x\r\n") == nil)
        #expect(end("GET / HTTP/1.1\r\nHost: x\r\n\r") == nil)
        #expect(end("\r\n\r\n") == 4)
        #expect(end("GET / HTTP/1.1\r\nHost: x\r\n\r\n") == 27)
        #expect(end("GET / HTTP/1.1\r\n\r\nextra frame bytes") == 18)
        #expect(end("a\r\nb\r\r\n\r\n") == 9)
    }

    @Test func headValueLookupIsCaseInsensitive() throws {
        let head = try HTTPHead.parseResponse(bytes("HTTP/1.1 200 OK\r\nContent-Type:  text/plain \r\nX-A: 1\r\nx-a: 2\r\n\r\n"))
        #expect(head.status == 200)
        #expect(head.value(for: "content-type") == "text/plain")
        #expect(head.values(for: "X-A") == ["1", "2"])
        #expect(head.value(for: "missing") == nil)
    }
}
