import ContrailWebSocket

/// `GET /healthz` and `GET /readyz`, for load balancers and Kubernetes probes. Open even with
/// authentication on: they say only "ok" or why the server is not ready.
///
/// - `/healthz`: 200 `ok` while the process serves HTTP at all (liveness).
/// - `/readyz`: 200 `ready` while the server accepts sessions; 503 with the reason while it is
///   starting, draining (``ContrailServer/drain(timeout:)``) or stopped, or, in a cluster, cut off
///   from NATS (one round trip to NATS per probe, as a new session's check).
struct HealthEndpoint: Sendable {
    let core: ServerCore

    /// The response to `GET /healthz` (`ready: false`) or `GET /readyz` (`ready: true`).
    func respond(ready: Bool) async -> HTTPResponse {
        guard ready else { return Self.plain(200, "OK", "ok") }
        if let reason = await notReady() { return Self.plain(503, "Service Unavailable", "not ready: \(reason)") }
        return Self.plain(200, "OK", "ready")
    }

    /// Why the server is not ready, or nil when it is.
    func notReady() async -> String? {
        switch core.phase {
        case .starting: return "starting"
        case .draining: return "draining"
        case .stopped: return "stopped"
        case .serving: break
        }
        return await core.cluster?.unavailability()
    }

    private static func plain(_ status: Int, _ reason: String, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, reason: reason, contentType: "text/plain; charset=utf-8",
                     headers: ["Cache-Control": "no-store"], body: Array((text + "\n").utf8))
    }
}
