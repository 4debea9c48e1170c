import ContrailNATS
import ContrailServer
import ContrailTestSupport

/// A server of a cluster on `urls`, as the cluster suites start them: no log, and 120 s for a
/// session to establish (a loaded machine, a NATS cluster electing its leaders); `configure` sets
/// anything else on the server's and the cluster's options before the server is made.
func clusterServer(_ urls: [NATSServerURL], configure: (inout ServerOptions, inout ClusterOptions) -> Void = { _, _ in }) throws -> ContrailServer {
    var options = ServerOptions()
    options.log = nil
    options.establishTimeout = .seconds(120)
    var cluster = ClusterOptions(servers: urls)
    configure(&options, &cluster)
    options.cluster = cluster
    return try ContrailServer(options: options)
}

/// The same on one NATS server.
func clusterServer(_ nats: NATSServerProcess, configure: (inout ServerOptions, inout ClusterOptions) -> Void = { _, _ in }) throws -> ContrailServer {
    try clusterServer([nats.url], configure: configure)
}
