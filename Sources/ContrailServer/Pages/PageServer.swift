import ContrailWire
import ContrailWebSocket

/// Answers the plain HTTP requests that reach `contrail serve` beside the WebSocket upgrade (when
/// ``ServerOptions/servesPages`` is on): the inspector at `/`, the canvas demo at `/demo`, the
/// JavaScript client at `/contrail.js`, and `/api/overview` (scopes with object and session counts,
/// the connected session count) for the inspector; every `/api/admin/…` request goes to ``AdminAPI``.
///
/// Pages never carry secrets: the overview holds names and counts only (no session token, no hook
/// parameter), and the pages' own sessions go through the server's hooks like any client's.
/// With authentication on (a ``ServerOptions/sessionHook``), `/api/overview` needs an
/// `Authorization: Bearer TOKEN` header whose token the hook (asked with params `{"token": TOKEN}`
/// and the request's headers) allows as an admin identity: 401 without a token, 403 otherwise; it
/// lists only the scopes that identity may read. Without authentication it stays open (loopback).
/// The inspector's timeline (§8.26) reads, with the same credential and the read grant of the
/// scope: `/api/overview/scopes/NAME/history` (``ScopeHistory``, fragments included) and
/// `/api/overview/scopes/NAME/at/SEQ` (`{"seq", "state"}`); 409 on a server that keeps no history.
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
        let target = request.path ?? "/"
        let path = String(target[..<(target.firstIndex(of: "?") ?? target.endIndex)])
        if path.hasPrefix("/api/admin/") { return await AdminAPI(pages: self).respond(to: request, path: path) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .error(status: 405, reason: "Method Not Allowed", headers: ["Allow": "GET, HEAD"])
        }
        if path == "/api/overview" {
            let identity: SessionIdentity
            switch await admin(request) {
            case .success(let admin): identity = admin
            case .failure(let refusal): return refusal.response
            }
            return HTTPResponse(contentType: "application/json", headers: Self.headers,
                                body: await overview(for: identity).serialized(sortedKeys: true))
        }
        if path.hasPrefix("/api/overview/scopes/") {
            let identity: SessionIdentity
            switch await admin(request) {
            case .success(let admin): identity = admin
            case .failure(let refusal): return refusal.response
            }
            return await timeline(path, for: identity)
        }
        guard let asset = PageAsset.byPath[path] else {
            return .error(status: 404, reason: "Not Found")
        }
        return HTTPResponse(contentType: asset.contentType, headers: Self.headers, body: asset.body)
    }

    /// The answer to a request that announces a body, before any of it is read: nil (read it) only
    /// for an admin API request whose credential is an admin's; the refusal for any other admin API
    /// request; and for everything else the answer its head alone gets (no page takes a body).
    func gateBody(of request: HTTPHead) async -> HTTPResponse? {
        let target = request.path ?? "/"
        guard target.hasPrefix("/api/admin/") else { return await respond(to: request) }
        if case .failure(let refusal) = await AdminAPI(pages: self).authenticate(request) { return refusal.response }
        return nil
    }

    /// Why the overview was refused: no token (401) or a token that is not an admin's (403).
    struct Refusal: Error {
        let response: HTTPResponse
    }

    /// The identity the request's bearer token stands for, if it is an admin's; the unrestricted
    /// identity when the server has no authentication.
    func admin(_ request: HTTPHead) async -> Result<SessionIdentity, Refusal> {
        guard let hook = core.options.sessionHook else { return .success(.unrestricted) }
        let headers = request.headers.map { ($0.name, $0.value) }
        guard let token = JWTVerifier.token(params: [:], headers: headers), !token.isEmpty else {
            return .failure(Refusal(response: .error(status: 401, reason: "Unauthorized",
                                                     headers: Self.headers.merging(["WWW-Authenticate": "Bearer"]) { $1 })))
        }
        guard case .allow(let identity) = await hook(["token": .string(token)], headers), identity.isAdmin else {
            return .failure(Refusal(response: .error(status: 403, reason: "Forbidden", headers: Self.headers)))
        }
        return .success(identity)
    }

    /// `{"sessions": n, "detached": m, "scopes": [{"name", "objects", "subscribers"}]}`: the sessions
    /// with a connection now (a closed window's session falls out at once) and those without one,
    /// which wait for a resume until they expire; scopes sorted by name, only those `identity` may
    /// read. O(sessions + scopes).
    func overview(for identity: SessionIdentity = .unrestricted) async -> JSON {
        let (_, scopes) = core.inspection()
        let live = core.liveSessions()
        let connected = live.count { !$0.isWaiting }
        var entries: [JSON] = []
        for scope in scopes where identity.may(.read, scope.name) {
            let objects = await scope.objectCount
            let subscribers = await scope.subscriberCount
            entries.append(.object(["name": .string(scope.name), "objects": .int(Int64(objects)),
                                    "subscribers": .int(Int64(subscribers))]))
        }
        return .object(["sessions": .int(Int64(connected)), "detached": .int(Int64(live.count - connected)), "scopes": .array(entries)])
    }

    /// The inspector's timeline routes: `/api/overview/scopes/NAME/history` and `…/at/SEQ`.
    private func timeline(_ path: String, for identity: SessionIdentity) async -> HTTPResponse {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(4).map { String($0).removingPercentEncoding }
        guard parts.count >= 2, let name = parts[0], !name.isEmpty else { return .error(status: 404, reason: "Not Found") }
        guard identity.may(.read, name) else { return .error(status: 403, reason: "Forbidden", headers: Self.headers) }
        let server = ServerAdmin(core: core)
        do throws(AdminError) {
            let body: JSON
            switch (parts[1], parts.count) {
            case ("history", 2):
                body = try await server.history(of: name, since: nil).json
            case ("at", 3):
                guard let text = parts[2], let sequence = Int(text) else { return .error(status: 400, reason: "Bad Request", headers: Self.headers) }
                let (reached, state) = try await server.scopeState(name, at: .sequence(sequence))
                body = .object(["seq": .int(Int64(reached)), "state": state])
            default:
                return .error(status: 404, reason: "Not Found", headers: Self.headers)
            }
            return HTTPResponse(contentType: "application/json", headers: Self.headers, body: body.serialized(sortedKeys: true))
        } catch {
            return HTTPResponse(status: error.status, reason: "Error", contentType: "application/json", headers: Self.headers,
                                body: JSON.object(["error": .string(error.description)]).serialized(sortedKeys: true))
        }
    }
}
