/// Writes WebSocket frames (RFC 6455 §5.2): header with 7-, 16- or 64-bit length, optional masking key,
/// and the payload, masked when a key is given.
///
/// The encoder does not check frame rules (control payload ≤ 125 bytes, FIN on control frames); the caller
/// builds valid frames. Clients pass a fresh `MaskingKeyGenerator` key per frame; servers pass nil.
public enum FrameEncoder {
    /// The largest possible header: 2 bytes + 8-byte length + 4-byte masking key.
    public static let maxHeaderSize = 14

    /// The header size for a payload of `payloadCount` bytes.
    @inlinable
    public static func headerSize(payloadCount: Int, masked: Bool) -> Int {
        let lengthBytes = payloadCount < 126 ? 0 : (payloadCount <= 0xFFFF ? 2 : 8)
        return 2 + lengthBytes + (masked ? 4 : 0)
    }

    /// Appends the header and the (masked) payload of `frame` to `buffer`.
    public static func encode(_ frame: WebSocketFrame, maskingKey: UInt32?, into buffer: inout [UInt8]) {
        frame.payload.withUnsafeBytes { payload in
            encode(opcode: frame.opcode, fin: frame.fin, payload: payload, maskingKey: maskingKey, into: &buffer)
        }
    }

    /// Appends a frame built from `payload` to `buffer` without an intermediate `WebSocketFrame` or copy of the payload.
    public static func encode(
        opcode: Opcode, fin: Bool, payload: UnsafeRawBufferPointer, maskingKey: UInt32?, into buffer: inout [UInt8]
    ) {
        let start = buffer.count
        buffer.reserveCapacity(start + headerSize(payloadCount: payload.count, masked: maskingKey != nil) + payload.count)
        encodeHeader(opcode: opcode, fin: fin, payloadCount: payload.count, maskingKey: maskingKey, into: &buffer)
        guard payload.count > 0 else { return }
        let payloadStart = buffer.count
        buffer.append(contentsOf: payload)
        if let maskingKey {
            buffer.withUnsafeMutableBytes { all in
                Masking.apply(key: maskingKey, to: UnsafeMutableRawBufferPointer(rebasing: all[payloadStart...]))
            }
        }
    }

    /// Appends only a frame header to `buffer`, for callers that write the payload separately (e.g. with
    /// `writev`). With a masking key the caller must mask the payload itself (`Masking.apply`).
    public static func encodeHeader(
        opcode: Opcode, fin: Bool, payloadCount: Int, maskingKey: UInt32?, into buffer: inout [UInt8]
    ) {
        buffer.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        if payloadCount < 126 {
            buffer.append(maskBit | UInt8(truncatingIfNeeded: payloadCount))
        } else if payloadCount <= 0xFFFF {
            buffer.append(maskBit | 126)
            buffer.append(UInt8(truncatingIfNeeded: payloadCount >> 8))
            buffer.append(UInt8(truncatingIfNeeded: payloadCount))
        } else {
            buffer.append(maskBit | 127)
            let length = UInt64(payloadCount)
            for shift in stride(from: 56, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
            }
        }
        if let maskingKey {
            buffer.append(UInt8(truncatingIfNeeded: maskingKey >> 24))
            buffer.append(UInt8(truncatingIfNeeded: maskingKey >> 16))
            buffer.append(UInt8(truncatingIfNeeded: maskingKey >> 8))
            buffer.append(UInt8(truncatingIfNeeded: maskingKey))
        }
    }

    /// The payload of a close frame: the code in network byte order followed by the reason in UTF-8,
    /// truncated on a character boundary so the payload stays within the 125-byte control frame limit.
    /// A nil code gives an empty payload (and the reason is dropped, as RFC 6455 requires).
    public static func closePayload(code: CloseCode?, reason: String) -> [UInt8] {
        guard let code else { return [] }
        var payload: [UInt8] = [UInt8(truncatingIfNeeded: code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)]
        let utf8 = Array(reason.utf8)
        var cut = min(utf8.count, 123)
        // Back off to the start of a character if the cut falls inside one (continuation bytes are 10xxxxxx).
        while cut < utf8.count, cut > 0, utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
        payload.append(contentsOf: utf8[..<cut])
        return payload
    }
}
