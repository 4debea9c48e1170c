/// The WebSocket close codes the Jetstream protocol uses (Protocol §1.9, §8.6, §8.7).
public enum JetstreamCloseCode {
    /// Connection or session denied: the app's connection hook said no, `SessionCreate` was missing,
    /// invalid or late, or a resume token is unknown. The reason is a `{message,type}` JSON text.
    public static let denied: UInt16 = 4096
    /// The server closed the session's transport because the session expired.
    public static let expired: UInt16 = 4097
    /// Contrail extension: the peer sent input that is not JSON, not a known message, or over a
    /// limit. The reason is a `{message,type}` JSON text; the session survives and can resume.
    public static let badInput: UInt16 = 4098
    /// Contrail extension (Protocol §8.22): the server is draining (shutting down gracefully) and
    /// keeps no session: reconnect, preferably to another server, with a new session, refetch and
    /// resend what is pending. The reason is a `{message,type}` JSON text of type `server-draining`.
    /// An original Jetstream client takes it as any other close and reconnects.
    public static let draining: UInt16 = 4099
}
