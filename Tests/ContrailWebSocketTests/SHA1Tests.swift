import Testing
import ContrailWebSocket

@Suite struct SHA1Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test func abc() {
        #expect(hex(SHA1.hash("abc".utf8)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test func empty() {
        #expect(hex(SHA1.hash([UInt8]())) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    }

    @Test func fourHundredFortyEightBits() {
        let message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(hex(SHA1.hash(message.utf8)) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    @Test func eightHundredNinetySixBits() {
        let message = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(hex(SHA1.hash(message.utf8)) == "a49b2446a02c645bf419f995b67091253a04a259")
    }

    @Test func oneMillionA() {
        #expect(hex(SHA1.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func nonContiguousSequenceMatchesArray() {
        // A lazy map is not contiguous, so this goes through the streaming path; lengths around block edges.
        for length in [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            #expect(SHA1.hash(bytes.lazy.map { $0 }) == SHA1.hash(bytes), "length \(length)")
        }
    }

    @Test func incrementalHasherMatchesOneShot() {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var hasher = SHA1()
        var offset = 0
        for size in [1, 3, 60, 64, 100, 1, 771] {
            bytes[offset..<offset + size].withUnsafeBytes { hasher.update($0) }
            offset += size
        }
        #expect(offset == bytes.count)
        #expect(hasher.finalize() == SHA1.hash(bytes))
    }
}
