import Contrail
import ContrailServer
import ContrailTestSupport

/// A client syncing a fresh "Deck" scope through `connector` (a server's in-process connector),
/// with the deck it edits: the replica the cluster tests write on one server and watch on another.
@MainActor
func deckReplica(_ connector: any SyncConnector, options: ClientOptions = ClientOptions()) async throws -> (Client, Deck) {
    let scope = Scope(name: "Deck")
    let deck = Deck()
    scope.root = deck
    return (try await Client.sync(scope, connector: connector, options: options), deck)
}

/// A deck replica of `server` whose client waits up to 60 s for replies (a loaded machine, many
/// writers at once).
@MainActor
func patientDeckReplica(_ server: ContrailServer) async throws -> (Client, Deck) {
    var options = ClientOptions()
    options.replyTimeout = .seconds(60)
    return try await deckReplica(server.connector(), options: options)
}

/// The same over WebSocket, to a `contrail serve` child process at `url`.
@MainActor
func deckReplica(url: String) async throws -> (Client, Deck) {
    let scope = Scope(name: "Deck")
    let deck = Deck()
    scope.root = deck
    return (try await Client.sync(scope, url: url), deck)
}
