import Contrail
import ContrailServer
import Foundation
import Testing

/// The pages beside the WebSocket upgrade: what they serve, the HTTP errors for bad input, and that
/// they never show a session token or a hook parameter.
@Suite struct PagesHTTPTests {
    @Test func servesThePagesAndTheClient() async throws {
        let (server, port) = try await startPageServer()
        defer { Task { await server.stop() } }
        for (path, type, marker) in [("/", "text/html", "Contrail inspector"), ("/demo", "text/html", "Contrail canvas"),
                                     ("/contrail.js", "text/javascript", "export class Client"),
                                     ("/demo.js", "text/javascript", "contrailDemo"), ("/inspector.js", "text/javascript", "/api/overview"),
                                     ("/demo?scope=Other", "text/html", "<canvas")] {
            let response = try await PagesHTTP.request(port: port, path: path)
            #expect(response.status == 200, "\(path): \(response.head)")
            #expect(response.header("Content-Type")?.hasPrefix(type) == true, "\(path)")
            #expect(response.header("Content-Length") == "\(response.body.count)", "\(path)")
            #expect(response.text.contains(marker), "\(path) holds '\(marker)'")
            #expect(response.header("X-Content-Type-Options") == "nosniff")
        }
        let head = try await PagesHTTP.request(port: port, method: "HEAD", path: "/contrail.js")
        #expect(head.status == 200 && head.body.isEmpty && Int(head.header("Content-Length") ?? "") ?? 0 > 1000)
    }

    @Test func badInputGetsAClearHTTPError() async throws {
        let (server, port) = try await startPageServer()
        defer { Task { await server.stop() } }
        let unknown = try await PagesHTTP.request(port: port, path: "/etc/passwd")
        #expect(unknown.status == 404 && unknown.text == "404 Not Found\n")
        let traversal = try await PagesHTTP.request(port: port, path: "/../demo")
        #expect(traversal.status == 404)
        for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
            let response = try await PagesHTTP.request(port: port, method: method, path: "/", extraHeaders: "Content-Length: 0\r\n")
            #expect(response.status == 405, "\(method): \(response.head)")
            #expect(response.header("Allow") == "GET, HEAD")
        }
        // A head past 16 KiB, in one piece and trickled: 431 either way.
        let huge = try await PagesHTTP.request(port: port, path: "/", extraHeaders: "X-Padding: \(String(repeating: "a", count: 20_000))\r\n")
        #expect(huge.status == 431, "\(huge.head)")
        let endless = try await PagesHTTP.exchange(port: port, bytes: Array("GET / HTTP/1.1\r\nX-Padding: \(String(repeating: "b", count: 40_000))".utf8))
        #expect(endless.status == 431, "\(endless.head)")
        let garbage = try await PagesHTTP.exchange(port: port, bytes: Array("NOT A REQUEST\r\n\r\n".utf8))
        #expect(garbage.status == 400)
        // Positive control: the same server still answers a good request.
        #expect(try await PagesHTTP.request(port: port, path: "/demo").status == 200)
    }

    @Test func pagesAreOffUnlessAskedFor() async throws {
        var options = ServerOptions()
        options.log = nil
        let server = try ContrailServer(options: options)
        let port = try await server.start()
        defer { Task { await server.stop() } }
        let response = try await PagesHTTP.request(port: port, path: "/")
        #expect(response.status == 400, "a plain GET is not an upgrade: \(response.head)")
    }

    @Test func overviewCountsWithoutTokensOrHookParameters() async throws {
        let secret = "hook-secret-\(UUID().uuidString)"
        let (server, port) = try await startPageServer { options in
            options.sessionHook = { params, _ in params["token"] == .string(secret) }
            options.scopeCreation = .fetch  // the fetched scope exists, and the overview lists it
        }
        defer { Task { await server.stop() } }
        let peer = ServerTestClient(server: server)
        let token = try await peer.createSession(params: ["token": .string(secret)])
        _ = try await peer.fetch("Overview", index: 1)
        let overview = try await PagesHTTP.request(port: port, path: "/api/overview")
        #expect(overview.status == 200)
        let json = try JSON(parsing: overview.text)
        #expect(json["sessions"] == .int(1))
        #expect(json["scopes"]?[0]?["name"] == .string("Overview"))
        #expect(json["scopes"]?[0]?["subscribers"] == .int(1))
        #expect(json["scopes"]?[0]?["objects"] == .int(1), "the fresh scope's root")
        for path in ["/", "/demo", "/contrail.js", "/demo.js", "/inspector.js", "/api/overview"] {
            let text = try await PagesHTTP.request(port: port, path: path).text
            #expect(!token.isEmpty && !text.contains(token), "\(path) shows no session token")
            #expect(!text.contains(secret), "\(path) shows no hook parameter")
        }
    }
}
