import ContrailNATS
import Foundation

/// A server's one connection to NATS, shared by its scopes: connected on first use (and again
/// after a failure, so a server that could not reach NATS keeps trying with each request), with
/// the scopes' stream and the snapshot bucket created if missing.
actor ClusterLink {
    /// The connected JetStream API and the snapshot bucket.
    struct Handles: Sendable {
        let jetStream: JetStream
        let snapshots: KeyValueBucket
        /// Revisions and past snapshots (``ClusterHistory``).
        let history: KeyValueBucket
        /// The log format to write, as the log-format record said when this server registered.
        let format: Int
        /// Whether the stream has one replica on a NATS that is not clustered: its leader checks a
        /// publish's expected last subject sequence as it stores it, one publish at a time (a
        /// replicated stream of nats-server 2.9 may let two publishes expecting the same one in).
        let checksExpectationOnStore: Bool
    }

    let options: ClusterOptions
    private let log: ServerLog
    /// This server's entry in the cluster's log-format record.
    private let serverID = UUID().uuidString
    /// The log format this server writes now: the lowest any live server reads (1 until the record
    /// was read).
    private(set) var writeFormat = 1
    /// Refreshes this server's entry in the log-format record every `formatRefresh`.
    private var formatRefresher: Task<Void, Never>?
    private var formatFailures = 0
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
            let serverID = serverID
            task = Task { () -> Result<Handles, NATSError> in
                do throws(NATSError) { return .success(try await Self.connect(options, serverID: serverID)) } catch { return .failure(error) }
            }
            connecting = task
        }
        let result = await task.value
        if case .success(let handles) = result {
            if formatRefresher == nil || connected?.jetStream.connection !== handles.jetStream.connection {
                // A new connection (the first, or one replacing a closed one) registered while connecting.
                formatRefresher?.cancel()
                setWriteFormat(handles.format)
                startFormatRefresher(handles)
            }
            connected = handles
        }
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

    /// Refreshes this server's entry in the log-format record every `formatRefresh` (the first
    /// registration is part of connecting); a failed refresh keeps the last format.
    private func startFormatRefresher(_ handles: Handles) {
        let options = options
        let serverID = serverID
        formatRefresher = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: options.formatRefresh)
                do throws(NATSError) {
                    let agreement = try await ClusterLogFormat.register(server: serverID, reads: options.logFormat,
                                                                        lifetime: options.formatLifetime, now: Date(), in: handles.snapshots)
                    guard let self else { return }
                    await self.setWriteFormat(agreement.write)
                } catch {
                    guard let self else { return }
                    await self.formatRefreshFailed(error)
                }
            }
        }
    }

    private func setWriteFormat(_ format: Int) {
        if format != writeFormat {
            log.write("cluster.log_format", "cluster: writing log format \(format) (the lowest any live server reads; this one reads \(options.logFormat))")
        }
        writeFormat = format
    }

    /// Logs the first few failed refreshes (NATS down: the connection's own errors say the rest).
    private func formatRefreshFailed(_ error: NATSError) {
        formatFailures += 1
        if formatFailures <= 3 { log.write("cluster.log_format_failed", level: .warning, "cluster: refreshing the log-format record: \(error)") }
    }

    private static func connect(_ options: ClusterOptions, serverID: String) async throws(NATSError) -> Handles {
        var natsOptions = NATSOptions(servers: options.servers)
        natsOptions.name = "contrail-serve"
        natsOptions.credentials = options.credentials
        natsOptions.tls = options.tls
        natsOptions.tlsHandshakeFirst = options.tlsHandshakeFirst
        natsOptions.requestTimeout = options.requestTimeout
        // A scope's own appends are applied from the publish's acknowledgement: their wake-ups (a copy
        // of every batch back over the socket, and a catch-up read each) are not needed.
        natsOptions.echo = false
        let connection = try await NATSConnection.connect(natsOptions)
        do throws(NATSError) {
            let jetStream = JetStream(connection: connection)
            var stream = StreamConfig(name: options.streamName, subjects: [options.subjectPrefix + ".>"])
            stream.numReplicas = options.replicas
            stream.allowDirect = true
            _ = try await jetStream.createStream(stream)
            let snapshots = try await KeyValueBucket(jetStream: jetStream, name: options.snapshotBucket, replicas: options.replicas)
            let agreement = try await ClusterLogFormat.register(server: serverID, reads: options.logFormat,
                                                                lifetime: options.formatLifetime, now: Date(), in: snapshots)
            if agreement.newerLive {
                // Servers that read a newer format may be writing it until their next refresh sees
                // this one: wait that out before reading any scope (a rollback or a late old server).
                try? await Task.sleep(for: options.formatRefresh * 3 / 2)
            }
            let history = try await KeyValueBucket(jetStream: jetStream, name: options.historyBucket, replicas: options.replicas)
            let info = await connection.serverInfo
            let standalone = options.servers.count == 1 && info?.cluster == nil && (info?.connectURLs ?? []).isEmpty
            return Handles(jetStream: jetStream, snapshots: snapshots, history: history, format: agreement.write,
                           checksExpectationOnStore: standalone && options.replicas == 1)
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Closes the connection; later calls fail with `closed`.
    func close() async {
        isClosed = true
        formatRefresher?.cancel()
        formatRefresher = nil
        if let connected { await ClusterLogFormat.deregister(server: serverID, in: connected.snapshots) }
        if case .success(let handles)? = await connecting?.value { await handles.jetStream.connection.close() }
        connecting = nil
    }
}
