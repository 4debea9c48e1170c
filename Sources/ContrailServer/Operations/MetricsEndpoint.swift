import ContrailWebSocket

/// `GET /metrics` (``ServerOptions/servesMetrics``, `contrail serve --metrics`): the server's
/// metrics in the Prometheus text format, every name prefixed `contrail_`. With authentication on
/// (a ``ServerOptions/sessionHook``) it takes the same admin credential as the inspector's
/// overview (`Authorization: Bearer TOKEN` of an admin identity: 401 without, 403 otherwise).
///
/// Counters (`_total`) count since the server started; Prometheus's `rate()` turns them into per
/// second figures. A scrape reads the atomic counters and counts the gauges: O(sessions) for the
/// resend-buffer bytes, O(open descriptors) for the process figures; nothing on the hot path.
struct MetricsEndpoint: Sendable {
    let core: ServerCore

    /// The response to `GET /metrics`.
    func respond(to request: HTTPHead) async -> HTTPResponse {
        if case .failure(let refusal) = await PageServer(core: core).admin(request) { return refusal.response }
        return HTTPResponse(contentType: MetricsText.contentType, headers: ["Cache-Control": "no-store"],
                            body: Array(await text().utf8))
    }

    /// The exposition text.
    func text() async -> String {
        let metrics = core.metrics
        let (sessions, connections, held, outboxes) = core.gauges()
        var out = MetricsText()
        out.gauge("contrail_ready", help: "1 while the server accepts sessions (what /readyz answers), else 0.",
                  core.phase == .serving ? 1 : 0)
        out.gauge("contrail_sessions_open", help: "Sessions the server holds (attached or waiting for their client to resume).",
                  Double(sessions))
        out.gauge("contrail_connections_open", help: "Open client connections.", Double(connections))
        out.counter("contrail_sessions_created_total", help: "Sessions created.",
                    metrics.sessionsCreated.load(ordering: .relaxed))
        out.counter("contrail_sessions_resumed_total", help: "Sessions resumed on a new connection by their token.",
                    metrics.sessionsResumed.load(ordering: .relaxed))
        out.counter("contrail_sessions_closed_total", help: "Sessions ended, by reason.", label: "reason",
                    ServerMetrics.CloseReason.allCases.map { ($0.rawValue, metrics.sessionsClosed($0)) })
        out.counter("contrail_sessions_refused_total", help: "Connections that got no session, by reason.", label: "reason",
                    ServerMetrics.RefusalReason.allCases.map { ($0.rawValue, metrics.sessionsRefused($0)) })
        let loaded = core.cluster == nil ? core.scopeSlots.count : held
        out.gauge("contrail_scopes_loaded", help: "Scopes whose state is in memory.", Double(loaded))
        out.counter("contrail_change_sets_total", help: "Change sets (ScopeSync) from this server's sessions, by result.",
                    label: "result", [("accepted", metrics.changeSetsAccepted.load(ordering: .relaxed)),
                                      ("rejected", metrics.changeSetsRejected.load(ordering: .relaxed)),
                                      ("repeated", metrics.changeSetsRepeated.load(ordering: .relaxed))])
        out.counter("contrail_fragments_total", help: "Fragments of those change sets, by result.", label: "result",
                    [("accepted", metrics.fragmentsAccepted.load(ordering: .relaxed)),
                     ("rejected", metrics.fragmentsRejected.load(ordering: .relaxed))])
        out.counter("contrail_fanout_messages_total", help: "Change sets broadcast to sessions other than their sender (one per recipient).",
                    metrics.fanOutMessages.load(ordering: .relaxed))
        out.gauge("contrail_resend_buffer_bytes", help: "Estimated bytes of messages kept for resend until clients acknowledge them.",
                  Double(outboxes.reduce(0) { $0 + $1.unackedBytes }))
        out.histogram("contrail_fsync_seconds", help: "Duration of each fdatasync of a scope log.", metrics.fsync.snapshot())
        out.histogram("contrail_group_commit_seconds", help: "From a change set's log record handed to the writer until it is durable with its group.",
                      metrics.groupCommit.snapshot())
        if let cluster = core.cluster {
            out.gauge("contrail_nats_connected", help: "1 while the connection to NATS is up, else 0.",
                      await cluster.isConnected ? 1 : 0)
            out.histogram("contrail_nats_publish_seconds", help: "From a log publish to JetStream's acknowledgement.",
                          metrics.natsPublish.snapshot())
            out.histogram("contrail_nats_apply_lag_seconds", help: "From a wake-up naming a log message until this server applied it.",
                          metrics.natsApplyLag.snapshot())
        }
        let process = ProcessStatistics.current()
        if let bytes = process.residentBytes {
            out.gauge("contrail_process_resident_memory_bytes", help: "Resident memory of the server process.", Double(bytes))
        }
        if let open = process.openDescriptors {
            out.gauge("contrail_process_open_fds", help: "Open file descriptors of the server process.", Double(open))
        }
        if let limit = process.maxDescriptors {
            out.gauge("contrail_process_max_fds", help: "The soft limit on open file descriptors.", Double(limit))
        }
        return out.text
    }
}
