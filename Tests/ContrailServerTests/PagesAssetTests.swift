import Contrail
import ContrailServer
import Foundation
import Testing

/// The pages' files (Sources/ContrailServer/Pages/Assets, compiled in with `.embedInCode`) go out
/// byte for byte as they are on disk, with the same content types and headers as ever, and every
/// file there is served.
@Suite struct PagesAssetTests {
    static let assets = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources/ContrailServer/Pages/Assets")

    /// Request path, file in Assets/, Content-Type.
    static let served: [(path: String, file: String, type: String)] = [
        ("/", "inspector.html", "text/html; charset=utf-8"),
        ("/inspector.js", "inspector.js", "text/javascript; charset=utf-8"),
        ("/inspector-timeline.js", "inspector-timeline.js", "text/javascript; charset=utf-8"),
        ("/demo", "demo.html", "text/html; charset=utf-8"),
        ("/demo.js", "demo.js", "text/javascript; charset=utf-8"),
        ("/contrail.js", "contrail.js", "text/javascript; charset=utf-8"),
        ("/contrail-store.js", "contrail-store.js", "text/javascript; charset=utf-8"),
        ("/contrail-text.js", "contrail-text.js", "text/javascript; charset=utf-8"),
        ("/demo-caption.js", "demo-caption.js", "text/javascript; charset=utf-8"),
        ("/contrail-counter.js", "contrail-counter.js", "text/javascript; charset=utf-8"),
        ("/contrail-collections.js", "contrail-collections.js", "text/javascript; charset=utf-8"),
        ("/pages.css", "pages.css", "text/css; charset=utf-8"),
        ("/contrail-query.js", "contrail-query.js", "text/javascript; charset=utf-8"),
        ("/demo-list.js", "demo-list.js", "text/javascript; charset=utf-8"),
        ("/favicon.ico", "favicon.svg", "image/svg+xml"),  // no 404 on every page load
        ("/contrail-presence.js", "contrail-presence.js", "text/javascript; charset=utf-8"),
        ("/demo-presence.js", "demo-presence.js", "text/javascript; charset=utf-8"),
    ]

    @Test func eachFileIsServedByteForByteWithItsTypeAndHeaders() async throws {
        let (server, port) = try await startPageServer()
        defer { Task { await server.stop() } }
        for (path, file, type) in Self.served {
            let onDisk = try [UInt8](Data(contentsOf: Self.assets.appending(path: file)))
            #expect(onDisk.count > 100, "\(file) is on disk")
            let response = try await PagesHTTP.request(port: port, path: path)
            #expect(response.status == 200, "\(path): \(response.head)")
            #expect(response.body == onDisk, "\(path) is \(file) byte for byte (\(response.body.count) vs \(onDisk.count) bytes)")
            #expect(response.header("Content-Type") == type, "\(path)")
            #expect(response.header("Content-Length") == "\(onDisk.count)", "\(path)")
            #expect(response.header("Cache-Control") == "no-store", "\(path)")
            #expect(response.header("X-Content-Type-Options") == "nosniff", "\(path)")
            #expect(response.header("Content-Security-Policy")
                == "default-src 'self'; connect-src 'self' ws: wss:; style-src 'self' 'unsafe-inline'; img-src 'self' data:", "\(path)")
            // HEAD: the same head, no body.
            let head = try await PagesHTTP.request(port: port, method: "HEAD", path: path)
            #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "\(onDisk.count)", "HEAD \(path)")
        }
        // A query does not change what is served.
        let withQuery = try await PagesHTTP.request(port: port, path: "/demo?scope=Other")
        #expect(withQuery.body == (try [UInt8](Data(contentsOf: Self.assets.appending(path: "demo.html")))))
    }

    @Test func everyFileInAssetsIsServed() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.assets.path)
            .filter { !$0.hasPrefix(".") && $0 != "package.json" }.sorted()
        #expect(files == Self.served.map(\.file).sorted(), "a file in Assets/ needs an .embedInCode entry in Package.swift and a path in PageAsset")
    }
}
