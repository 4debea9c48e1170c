import ContrailNATS

/// A server's one connection to NATS, shared by its scopes: connected on first use (and again
/// after a failure, so a server that could not reach NATS keeps trying with each request), with
/// the scopes' stream and the snapshot bucket created if missing.
actor ClusterLink {
    /// The connected JetStream API and the snapshot bucket.
    struct Handles: Sendable {
        let jetStream: JetStream
        let snapshots: KeyValueBucket
    }

    let options: ClusterOptions
    private let log: ServerLog
    private var connecting: Task<Result<Handles, NATSError>, Never>?
    /// The handles of the last connect that succeeded (for ``isConnected``, which must not wait).
    private var connected: Handles?
    private var isClosed = false

    init(options: ClusterOptions, log: ServerLog) {
        self.options = options
        self.log = log
    }

    /// The handles, connecting first if needed.
    /// - Throws: the connection's or JetStream's error (the next call tries again); `closed` after `close()`.
    func handles() async throws(NATSError) -> Handles {
        if isClosed { throw .closed }
        let task: Task<Result<Handles, NATSError>, Never>
        if let connecting {
            task = connecting
        } else {
            let options = options
            task = Task { () -> Result<Handles, NATSError> in
                do throws(NATSError) { return .success(try await Self.connect(options)) } catch { return .failure(error) }
            }
            connecting = task
        }
        let result = await task.value
        if case .success(let handles) = result { connected = handles }
        if case .failure(let error) = result {
            log.write("cluster.error", level: .error, "cluster: \(error)")
            if connecting == task { connecting = nil }
        }
        return try result.get()
    }

    /// Why the server cannot take new sessions now, or nil while NATS answers (one round trip to it).
    /// Connects first if needed, so a server that could not reach NATS tries again with each call;
    /// a connection that gave up reconnecting is replaced at the next call.
    func unavailability() async -> String? {
        let handles: Handles
        do throws(NATSError) { handles = try await self.handles() } catch { return "cannot reach NATS (\(error))" }
        switch await handles.jetStream.connection.status {
        case .connected:
            // A round trip: a socket that just died may still look connected.
            do throws(NATSError) { try await handles.jetStream.connection.flush(timeout: options.requestTimeout) } catch {
                return "NATS does not answer (\(error))"
            }
            return nil
        case .reconnecting:
            return "lost its connection to NATS; reconnecting"
        case .closed:
            if !isClosed { connecting = nil }
            return "lost its connection to NATS; reconnecting"
        }
    }

    /// Whether the connection to NATS is up now, without a round trip or a connect (false before
    /// the first connect succeeded). For `/metrics`.
    var isConnected: Bool {
        get async {
            guard !isClosed, let connected else { return false }
            if case .connected = await connected.jetStream.connection.status { return true }
            return false
        }
    }

    private static func connect(_ options: ClusterOptions) async throws(NATSError) -> Handles {
        var natsOptions = NATSOptions(servers: options.servers)
        natsOptions.name = "contrail-serve"
        natsOptions.credentials = options.credentials
        natsOptions.tls = options.tls
        natsOptions.tlsHandshakeFirst = options.tlsHandshakeFirst
        natsOptions.requestTimeout = options.requestTimeout
        let connection = try await NATSConnection.connect(natsOptions)
        do throws(NATSError) {
            let jetStream = JetStream(connection: connection)
            var stream = StreamConfig(name: options.streamName, subjects: [options.subjectPrefix + ".>"])
            stream.numReplicas = options.replicas
            stream.allowDirect = true
            _ = try await jetStream.createStream(stream)
            let snapshots = try await KeyValueBucket(jetStream: jetStream, name: options.snapshotBucket, replicas: options.replicas)
            return Handles(jetStream: jetStream, snapshots: snapshots)
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Closes the connection; later calls fail with `closed`.
    func close() async {
        isClosed = true
        if case .success(let handles)? = await connecting?.value { await handles.jetStream.connection.close() }
        connecting = nil
    }
}
