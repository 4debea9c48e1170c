import ContrailWebSocket

/// The operator's HTTP paths, answered before the pages (and also with ``ServerOptions/servesPages``
/// off): `/healthz`, `/readyz` (``HealthEndpoint``) and, with ``ServerOptions/servesMetrics``,
/// `/metrics` (``MetricsEndpoint``). GET and HEAD only (405 otherwise).
struct OperationsRoutes: Sendable {
    let core: ServerCore

    /// The response for `request`, or nil when its path is not one of these.
    func respond(to request: HTTPHead) async -> HTTPResponse? {
        let target = request.path ?? "/"
        let path = target[..<(target.firstIndex(of: "?") ?? target.endIndex)]
        let isMetrics = path == "/metrics" && core.options.servesMetrics
        guard path == "/healthz" || path == "/readyz" || isMetrics else { return nil }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .error(status: 405, reason: "Method Not Allowed", headers: ["Allow": "GET, HEAD"])
        }
        if isMetrics { return await MetricsEndpoint(core: core).respond(to: request) }
        return await HealthEndpoint(core: core).respond(ready: path == "/readyz")
    }
}
