import ContrailWire

/// Connects to a ``ContrailServer`` in the same process through an ``InMemoryTransport`` pair.
struct InMemoryServerConnector: SyncConnector {
    let server: ContrailServer

    func connect(headers: [(String, String)]) async throws(SyncError) -> any SyncTransport {
        let (client, serverEnd) = InMemoryTransport.pair()
        server.accept(serverEnd, headers: headers)
        return client
    }
}
