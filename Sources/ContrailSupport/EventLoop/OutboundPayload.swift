/// Bytes handed to a `Channel` by reference: it keeps the value alive and writes straight from its
/// storage (with `sendmsg`, gathered with the bytes around it), so a large payload is never copied
/// into the write buffer.
package enum OutboundPayload {
    /// An array's bytes.
    case bytes([UInt8])
    /// A string's UTF-8 bytes.
    case text(String)

    /// The number of bytes. O(1) for native strings.
    package var count: Int {
        switch self {
        case .bytes(let bytes): bytes.count
        case .text(let text): text.utf8.count
        }
    }

    /// Calls `body` with the bytes. O(1) for arrays and native strings (every string on Linux; others
    /// are made contiguous first).
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .bytes(let bytes):
            return bytes.withUnsafeBytes(body)
        case .text(let text):
            var text = text
            return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
    }
}
