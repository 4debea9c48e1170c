// The WebSocket API takes an `EventLoopGroup` and hands out `TypedAsyncStream`s: they come with
// `ContrailWebSocket`.
@_exported import ContrailSupport
