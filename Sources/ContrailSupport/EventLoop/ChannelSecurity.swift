/// A record layer a `Channel` drives between its socket and its delegate (TLS): ciphertext from the
/// socket goes in and plaintext comes out for the delegate; plaintext the owner writes goes in and
/// ciphertext comes out for the socket. It never touches the socket itself.
///
/// The channel calls every method under its own lock (so from any thread, one call at a time): an
/// implementation needs no lock of its own for its state (hence `Sendable`: the channel moves it
/// between threads only under that lock).
package protocol ChannelSecurity: AnyObject, Sendable {
    /// Whether the handshake has finished (and the peer has been verified): plaintext can be sent.
    var isEstablished: Bool { get }
    /// Starts the handshake; a client's first flight goes to the output.
    func start()
    /// Takes ciphertext the socket delivered. False: the layer failed.
    func receive(_ ciphertext: UnsafeRawBufferPointer) -> Bool
    /// Advances the handshake with what was received, then decrypts the next plaintext into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ChannelSecurityRead
    /// Encrypts `plaintext` (only once established). False: the layer failed.
    func send(_ plaintext: UnsafeRawBufferPointer) -> Bool
    /// Moves the ciphertext produced so far (handshake, records, alerts) to the end of `out`.
    func takeOutput(into out: inout [UInt8])
    /// Queues the closing alert (TLS close_notify) once established; nothing otherwise.
    func close()
}

/// What `ChannelSecurity.read(into:)` produced.
package enum ChannelSecurityRead: Equatable {
    /// This many plaintext bytes are at the start of the buffer.
    case plaintext(Int)
    /// Nothing more until more ciphertext arrives.
    case needMore
    /// The peer closed the secure stream (close_notify): the end of input.
    case closed
    /// The layer failed (its owner knows why).
    case failed
}
