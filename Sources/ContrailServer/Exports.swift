// A server's hooks speak wire types (`SyncFragment`, `JSON`, `WireErrorBody`): they come with
// `ContrailServer`.
@_exported import ContrailWire
