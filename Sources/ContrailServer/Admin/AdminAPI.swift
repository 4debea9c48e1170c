import ContrailWire
import ContrailWebSocket
import Foundation

/// The admin surface over HTTP, beside the pages (``PageServer`` hands it every `/api/admin/…`
/// request): JSON in and out, what `contrail admin` calls.
///
/// | request | does |
/// |---|---|
/// | `GET /api/admin/sessions` | `{"sessions": [AdminSession]}` |
/// | `POST /api/admin/sessions/N/end` | ends session N |
/// | `POST /api/admin/users/USER/end` | ends every session of USER |
/// | `GET /api/admin/scopes` | `{"scopes": [AdminScope]}` (those the credential may read) |
/// | `GET /api/admin/scopes/NAME/export` | the scope's state |
/// | `POST /api/admin/scopes/NAME/import` | body: a state; makes it the scope's |
/// | `POST /api/admin/scopes/NAME/compact` | compacts its log |
/// | `POST /api/admin/backup` | body (optional): `{"name": N}`; a backup in the backup directory |
/// | `GET /api/admin/scopes/NAME/history[?since=POINT]` | ``ScopeHistory`` (read) |
/// | `GET /api/admin/scopes/NAME/at/POINT` | `{"seq": N, "state": state}` after POINT (read) |
/// | `POST /api/admin/scopes/NAME/restore` | body `{"to": POINT}`: one change set back to it (write) |
/// | `POST /api/admin/scopes/NAME/revisions` | body `{"label": L}`: marks a revision (write) |
///
/// A POINT (``HistoryPoint``) is a sequence number, a revision label or an ISO 8601 time.
///
/// Deny by default: every request needs `Authorization: Bearer TOKEN` that the server's
/// authentication (its ``ServerOptions/sessionHook``: `--token-file`, `--jwt-key`) allows as an admin
/// identity: 401 without one, 403 for a token that is not an admin's, and 403 on a server without
/// authentication (nobody could be told from anybody). Scope actions also need the identity's
/// grant (read to export, write to import or compact). Path segments are percent-decoded (a scope
/// name with `/` is sent as `%2F`). Errors: `{"error": text}` with 400, 404, 405, 409, 422 (an
/// import the scope refused) or 500.
struct AdminAPI: Sendable {
    let pages: PageServer
    private var server: ServerAdmin { ServerAdmin(core: pages.core) }

    /// The admin identity `request`'s credential names, or the refusal (401, or 403 for a credential
    /// that is not an admin's, or on a server without authentication). The body gate asks it before
    /// a request's body is read, so nobody without a credential can make the server buffer one.
    func authenticate(_ request: HTTPHead) async -> Result<SessionIdentity, PageServer.Refusal> {
        guard pages.core.options.sessionHook != nil else {
            return .failure(PageServer.Refusal(response: Self.failure(
                403, "Forbidden", "the admin API needs authentication: start the server with --token-file or --jwt-key")))
        }
        return await pages.admin(request)
    }

    /// The answer to one `/api/admin/…` request (`path` without its query).
    func respond(to request: HTTPHead, path: String) async -> HTTPResponse {
        let identity: SessionIdentity
        switch await authenticate(request) {
        case .success(let admin): identity = admin
        case .failure(let refusal): return refusal.response
        }
        let raw = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(3)
        var segments: [String] = []
        for part in raw {
            guard let decoded = String(part).removingPercentEncoding,
                  !decoded.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                return Self.failure(400, "Bad Request", "bad percent-encoding, or a control character in the path")
            }
            segments.append(decoded)
        }
        let method = request.method ?? ""
        do throws(AdminError) {
            switch (method, segments.first, segments.count) {
            case ("GET", "sessions", 1):
                return Self.json(.object(["sessions": .array(await server.sessions().map(\.json))]))
            case ("POST", "sessions", 3) where segments[2] == "end":
                guard let number = Int(segments[1]) else { throw AdminError.unknownSession(-1) }
                try await server.endSession(number: number)
                return Self.json(.object(["ended": .int(1)]))
            case ("POST", "users", 3) where segments[2] == "end":
                return Self.json(.object(["ended": .int(Int64(await server.revoke(user: segments[1])))]))
            case ("GET", "scopes", 1):
                let visible = await server.scopes().filter { identity.may(.read, $0.name) }
                return Self.json(.object(["scopes": .array(visible.map(\.json))]))
            case ("GET", "scopes", 3) where segments[2] == "export":
                guard identity.may(.read, segments[1]) else { return Self.forbidden(identity, .read, segments[1]) }
                return Self.json(try await server.exportScope(segments[1]))
            case ("POST", "scopes", 3) where segments[2] == "import":
                guard identity.may(.write, segments[1]) else { return Self.forbidden(identity, .write, segments[1]) }
                guard let state = try? JSON(parsing: request.body) else { throw AdminError.invalidState("the body is not JSON") }
                let count = try await server.importScope(segments[1], state: state)
                return Self.json(.object(["fragments": .int(Int64(count))]))
            case ("POST", "scopes", 3) where segments[2] == "compact":
                guard identity.may(.write, segments[1]) else { return Self.forbidden(identity, .write, segments[1]) }
                let report = try await server.compactScope(segments[1])
                return Self.json(.object(["scope": .string(report.scope), "bytesBefore": .int(Int64(report.bytesBefore)),
                                          "bytesAfter": .int(Int64(report.bytesAfter)), "objects": .int(Int64(report.objects))]))
            case ("GET", "scopes", 3) where segments[2] == "history":
                guard identity.may(.read, segments[1]) else { return Self.forbidden(identity, .read, segments[1]) }
                let since = Self.queryValue(request.path ?? "", "since").map(HistoryPoint.init(parsing:))
                return Self.json(try await server.history(of: segments[1], since: since).json)
            case ("GET", "scopes", 4) where segments[2] == "at":
                guard identity.may(.read, segments[1]) else { return Self.forbidden(identity, .read, segments[1]) }
                let (sequence, state) = try await server.scopeState(segments[1], at: HistoryPoint(parsing: segments[3]))
                return Self.json(.object(["seq": .int(Int64(sequence)), "state": state]))
            case ("POST", "scopes", 3) where segments[2] == "restore":
                guard identity.may(.write, segments[1]) else { return Self.forbidden(identity, .write, segments[1]) }
                guard let body = try? JSON(parsing: request.body), case .string(let point)? = body["to"] else {
                    throw AdminError.invalidState("the body must be {\"to\": POINT}")
                }
                let (sequence, count) = try await server.restoreScope(segments[1], to: HistoryPoint(parsing: point), identity: identity)
                return Self.json(.object(["seq": .int(Int64(sequence)), "fragments": .int(Int64(count))]))
            case ("POST", "scopes", 3) where segments[2] == "revisions":
                guard identity.may(.write, segments[1]) else { return Self.forbidden(identity, .write, segments[1]) }
                guard let body = try? JSON(parsing: request.body), case .string(let label)? = body["label"] else {
                    throw AdminError.invalidRevision("the body must be {\"label\": LABEL}")
                }
                return Self.json(try await server.markRevision(label, scope: segments[1], user: identity.user).json)
            case ("POST", "backup", 1):
                return Self.json(try await backup(request.body).json)
            case (_, "sessions", _), (_, "users", _), (_, "scopes", _), (_, "backup", _):
                let known: Set<String> = ["GET", "POST"]
                return known.contains(method) ? Self.failure(404, "Not Found", "no such admin request")
                    : Self.failure(405, "Method Not Allowed", "use GET or POST", headers: ["Allow": "GET, POST"])
            default:
                return Self.failure(404, "Not Found", "no such admin request")
            }
        } catch {
            return Self.failure(error.status, Self.reason(error.status), error.description)
        }
    }

    /// A backup into ``ServerOptions/backupDirectory``, named by the body's `name` (letters,
    /// digits, `.`, `_`, `-`; not starting with `.`) or by the time.
    private func backup(_ body: [UInt8]) async throws(AdminError) -> BackupReport {
        guard let root = pages.core.options.backupDirectory else { throw .noBackupDirectory }
        var name = "backup-" + Self.timestamp(Date())
        if !body.isEmpty {
            guard let json = try? JSON(parsing: body), case .object(let members) = json else { throw .invalidState("the body is not a JSON object") }
            if let requested = members["name"] {
                guard case .string(let text) = requested, Self.isSafeName(text) else {
                    throw .invalidState("\"name\" must be 1 to 100 letters, digits, '.', '_' or '-', not starting with '.'")
                }
                name = text
            }
        }
        return try await server.backup(to: root.appending(path: name, directoryHint: .isDirectory))
    }

    /// The percent-decoded value of `name` in the query of `target`, if present.
    static func queryValue(_ target: String, _ name: String) -> String? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    /// Whether `name` is a plain file name: no separator, no `..`, nothing hidden.
    static func isSafeName(_ name: String) -> Bool {
        (1...100).contains(name.utf8.count) && !name.hasPrefix(".")
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// `20261127T040315Z`.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    private static func json(_ value: JSON) -> HTTPResponse {
        HTTPResponse(contentType: "application/json", headers: PageServer.headers, body: value.serialized(sortedKeys: true))
    }

    private static func forbidden(_ identity: SessionIdentity, _ access: ScopeAccess, _ scope: String) -> HTTPResponse {
        failure(403, "Forbidden", "user '\(identity.user)' may not \(access == .read ? "read" : "write") scope '\(scope.prefix(200))'")
    }

    private static func failure(_ status: Int, _ reason: String, _ message: String, headers: [String: String] = [:]) -> HTTPResponse {
        HTTPResponse(status: status, reason: reason, contentType: "application/json",
                     headers: PageServer.headers.merging(headers) { $1 },
                     body: JSON.object(["error": .string(message)]).serialized(sortedKeys: true))
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 404: "Not Found"
        case 409: "Conflict"
        case 422: "Unprocessable Content"
        case 503: "Service Unavailable"
        default: "Internal Server Error"
        }
    }
}
