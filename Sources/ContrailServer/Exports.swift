// A server's hooks speak wire types (`SyncFragment`, `JSON`, `WireErrorBody`): they come with
// `ContrailServer`.
@_exported import ContrailWire
// `ServerOptions.tls` takes a `TLSServerContext`: it comes with `ContrailServer`.
@_exported import ContrailTLS
