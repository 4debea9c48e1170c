// `ClientOptions.tls` and the connectors take a `TLSClientConfiguration`, and `wss://` failures carry
// a `TLSError`: they come with the transports (and so with `Contrail`).
@_exported import ContrailTLS
