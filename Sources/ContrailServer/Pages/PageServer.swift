import ContrailWire
import ContrailWebSocket

/// Answers the plain HTTP requests that reach `contrail serve` beside the WebSocket upgrade (when
/// ``ServerOptions/servesPages`` is on): the inspector at `/`, the canvas demo at `/demo`, the
/// JavaScript client at `/contrail.js`, and `/api/overview` (scopes with object and session counts,
/// the live session count) for the inspector.
///
/// Pages never carry secrets: the overview holds names and counts only (no session token, no hook
/// parameter), and the pages' own sessions go through the server's hooks like any client's.
/// Errors: 405 for any method but GET and HEAD, 404 for an unknown path (431 for a huge head comes
/// from the WebSocket layer before this runs).
struct PageServer: Sendable {
    let core: ServerCore

    /// Headers on every page response: no caching, no content sniffing, scripts and sockets from this origin only.
    static let headers = [
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'self'; connect-src 'self' ws: wss:; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
    ]

    /// The response to one request. O(scopes) for the overview, O(1) otherwise.
    func respond(to request: HTTPHead) async -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .error(status: 405, reason: "Method Not Allowed", headers: ["Allow": "GET, HEAD"])
        }
        let target = request.path ?? "/"
        let path = String(target[..<(target.firstIndex(of: "?") ?? target.endIndex)])
        if path == "/api/overview" {
            return HTTPResponse(contentType: "application/json", headers: Self.headers,
                                body: await overview().serialized(sortedKeys: true))
        }
        guard let asset = PageAsset.byPath[path] else {
            return .error(status: 404, reason: "Not Found")
        }
        return HTTPResponse(contentType: asset.contentType, headers: Self.headers, body: asset.body)
    }

    /// `{"sessions": n, "scopes": [{"name", "objects", "subscribers"}]}`, scopes sorted by name.
    func overview() async -> JSON {
        let (sessions, scopes) = core.inspection()
        var entries: [JSON] = []
        for scope in scopes {
            let objects = await scope.objectCount
            let subscribers = await scope.subscriberCount
            entries.append(.object(["name": .string(scope.name), "objects": .int(Int64(objects)),
                                    "subscribers": .int(Int64(subscribers))]))
        }
        return .object(["sessions": .int(Int64(sessions)), "scopes": .array(entries)])
    }
}
