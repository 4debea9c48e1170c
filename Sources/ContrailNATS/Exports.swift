// `NATSOptions.tls` takes ContrailTLS's `TLSClientConfiguration`, and `NATSError.tls` carries its
// `TLSError`.
@_exported import ContrailTLS
