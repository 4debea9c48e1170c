// An app imports `Contrail` alone: the wire types its API speaks (`SyncFragment`, `JSON`,
// `SyncError`) and the WebSocket connectors come with it.
@_exported import ContrailTransport
@_exported import ContrailWire
