/// SHA-1 (FIPS 180-4), used only for the WebSocket handshake's `Sec-WebSocket-Accept` key.
///
/// SHA-1 is not collision resistant; do not use it for anything that needs security.
///
/// Shaped like CryptoKit's `Insecure.SHA1`: `hash(_:)` in one call, or `update` any number of
/// times and then `finalize` once.
package struct SHA1: Sendable {
    /// The 20-byte SHA-1 digest of `bytes`.
    ///
    /// Contiguous inputs (arrays, buffers, `String.UTF8View` of native strings) are hashed in place;
    /// other sequences are streamed through a 64-byte block buffer. O(n).
    package static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA1()
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            hasher.update(UnsafeRawBufferPointer(buffer))
        }
        if done == nil {
            var block: [UInt8] = []
            block.reserveCapacity(64)
            for byte in bytes {
                block.append(byte)
                if block.count == 64 {
                    block.withUnsafeBytes { hasher.update($0) }
                    block.removeAll(keepingCapacity: true)
                }
            }
            block.withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finalize()
    }

    private var h0: UInt32 = 0x6745_2301
    private var h1: UInt32 = 0xEFCD_AB89
    private var h2: UInt32 = 0x98BA_DCFE
    private var h3: UInt32 = 0x1032_5476
    private var h4: UInt32 = 0xC3D2_E1F0
    /// Bytes of an unfinished block.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var totalBytes: UInt64 = 0

    /// Starts a new digest.
    package init() {}

    /// Feeds more message bytes.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        totalBytes &+= UInt64(bytes.count)
        var offset = 0
        if pendingCount > 0 {
            let take = min(64 - pendingCount, bytes.count)
            withUnsafeMutableBytes(of: &pending) { p in
                p.baseAddress!.advanced(by: pendingCount).copyMemory(from: base, byteCount: take)
            }
            pendingCount += take
            offset = take
            if pendingCount == 64 {
                let block = pending
                withUnsafeBytes(of: block) { compress($0.baseAddress!) }
                pendingCount = 0
            }
        }
        while bytes.count - offset >= 64 {
            compress(base + offset)
            offset += 64
        }
        let rest = bytes.count - offset
        if rest > 0 {
            withUnsafeMutableBytes(of: &pending) { p in
                p.baseAddress!.copyMemory(from: base + offset, byteCount: rest)
            }
            pendingCount = rest
        }
    }

    /// Pads the message and returns the 20-byte digest.
    package mutating func finalize() -> [UInt8] {
        let bitLength = totalBytes &* 8
        var padding = [UInt8](repeating: 0, count: pendingCount < 56 ? 56 - pendingCount : 120 - pendingCount)
        padding[0] = 0x80
        for shift in stride(from: 56, through: 0, by: -8) {
            padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        let saved = totalBytes
        padding.withUnsafeBytes { update($0) }
        totalBytes = saved
        var digest: [UInt8] = []
        digest.reserveCapacity(20)
        for word in [h0, h1, h2, h3, h4] {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    private mutating func compress(_ block: UnsafeRawPointer) {
        var w = (
            UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0),
            UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0), UInt32(0)
        )
        withUnsafeMutableBytes(of: &w) { words in
            let ws = words.bindMemory(to: UInt32.self)
            for i in 0..<16 {
                ws[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
            }
            var a = h0, b = h1, c = h2, d = h3, e = h4
            for i in 0..<80 {
                let word: UInt32
                if i < 16 {
                    word = ws[i]
                } else {
                    let x = ws[(i - 3) & 15] ^ ws[(i - 8) & 15] ^ ws[(i - 14) & 15] ^ ws[i & 15]
                    word = (x << 1) | (x >> 31)
                    ws[i & 15] = word
                }
                let f: UInt32, k: UInt32
                switch i {
                case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
                case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
                case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
                default: f = b ^ c ^ d; k = 0xCA62_C1D6
                }
                let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ word
                e = d
                d = c
                c = (b << 30) | (b >> 2)
                b = a
                a = temp
            }
            h0 = h0 &+ a
            h1 = h1 &+ b
            h2 = h2 &+ c
            h3 = h3 &+ d
            h4 = h4 &+ e
        }
    }
}
