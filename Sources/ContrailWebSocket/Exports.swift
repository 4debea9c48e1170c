// The WebSocket API takes an `EventLoopGroup` and hands out `TypedAsyncStream`s: they come with
// `ContrailWebSocket`.
@_exported import ContrailSupport
// `WebSocketOptions.tls` and `.serverTLS` take ContrailTLS's configuration types, and
// `WebSocketError.tls` carries its `TLSError`.
@_exported import ContrailTLS
