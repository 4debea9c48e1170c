// ContrailWebSocket: RFC 6455 client and server (in progress).
