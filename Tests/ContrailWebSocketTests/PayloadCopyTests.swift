import Testing
import ContrailWebSocket

/// A small seeded generator (xorshift64*), so every run feeds the same pieces.
private struct Xorshift: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
}

/// The payload passes of the decoder: unmasking while copying out of the input (lent or appended bytes,
/// which is what a read from the loop's shared buffer hands over), unmasking in place (bytes received
/// straight into the payload), and UTF-8 validation on the same blocks, each checked against a byte-at-a-time
/// reference written here.
@Suite struct PayloadCopyTests {
    /// Byte `i` of `payload`, masked with key bytes `key` starting at key byte `phase`.
    private func referenceMask(_ payload: [UInt8], key: [UInt8], phase: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        for (i, byte) in payload.enumerated() { out.append(byte ^ key[(i + phase) % 4]) }
        return out
    }

    /// A masked client frame built byte by byte (no `FrameEncoder`, no `Masking`).
    private func referenceFrame(fin: Bool = true, opcode: UInt8, _ payload: [UInt8], key: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        switch payload.count {
        case ..<126: out.append(0x80 | UInt8(payload.count))
        case ..<65_536: out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            out.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        return out + key + referenceMask(payload, key: key)
    }

    private func key(_ bytes: [UInt8]) -> UInt32 {
        bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    @Test func copyUnmaskMatchesTheByteWiseReferenceAtEveryStartLengthAndMaskPhase() {
        let keyBytes: [UInt8] = [0x9C, 0x21, 0xF7, 0x08]
        let source = (0..<96).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for start in 0...40 {
            for length in 0...40 {
                for phase in 0..<4 {
                    for high in [-1, length / 2, length - 1] where high < length {
                        // The unmasked bytes are ASCII except (at `high`) one that is not.
                        var plain = (0..<length).map { UInt8(0x20 + ($0 * 7 + start) % 90) }
                        if high >= 0 { plain[high] = 0xE9 }
                        var input = source
                        input.replaceSubrange(start..<start + length, with: referenceMask(plain, key: keyBytes, phase: phase))
                        // The destination is larger and starts at another alignment: nothing past `length` is touched.
                        var destination = [UInt8](repeating: 0xAA, count: length + 9)
                        let ascii = input.withUnsafeBytes { all in
                            destination.withUnsafeMutableBytes { out in
                                Masking.copyApplyingCheckingASCII(
                                    key: key(keyBytes), from: UnsafeRawBufferPointer(rebasing: all[start..<start + length]),
                                    to: UnsafeMutableRawBufferPointer(rebasing: out[1...]), offset: phase)
                            }
                        }
                        let context = "start \(start) length \(length) phase \(phase) high \(high)"
                        #expect(Array(destination[1..<1 + length]) == plain, "\(context)")
                        #expect(destination[0] == 0xAA && destination[(1 + length)...].allSatisfy { $0 == 0xAA }, "\(context)")
                        #expect(ascii == (high < 0), "\(context)")
                        // The source is left as it was.
                        #expect(Array(input[start..<start + length]) == referenceMask(plain, key: keyBytes, phase: phase))
                    }
                }
            }
        }
    }

    /// A stream of frames: binary frames of every length 0–40 (so the mask phase of every payload byte
    /// and every split point comes round), control frames between fragments, a text message fragmented
    /// so that multi-byte characters straddle its frames, and two frames longer than the decoder's
    /// 16 KiB blocks.
    private func stream() -> (wire: [UInt8], frames: [WebSocketFrame]) {
        var frames: [WebSocketFrame] = []
        var wire: [UInt8] = []
        var keys = Xorshift(state: 0x1234_5678_9ABC_DEF1)
        func add(fin: Bool = true, _ opcode: Opcode, _ payload: [UInt8]) {
            let key = withUnsafeBytes(of: UInt32(truncatingIfNeeded: keys.next())) { Array($0) }
            frames.append(WebSocketFrame(fin: fin, opcode: opcode, payload: payload))
            wire += referenceFrame(fin: fin, opcode: opcode.rawValue, payload, key: key)
        }
        for length in 0...40 { add(.binary, (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ length) }) }
        let text = Array("ascii at first, then κόσμε — €𝄞 🎉 and back to ascii for a while ".utf8)
        // Cuts inside two-, three- and four-byte sequences.
        let cuts = [0, 17, 22, 33, 37, 41, 46, 52, text.count]
        for i in 0..<cuts.count - 1 {
            add(fin: i == cuts.count - 2, i == 0 ? .text : .continuation, Array(text[cuts[i]..<cuts[i + 1]]))
            if i % 3 == 1 { add(.ping, Array("p\(i)".utf8)) }
        }
        add(.text, Array(String(repeating: "long ascii text with one é in it; ", count: 600).utf8))
        add(.binary, (0..<20_001).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
        add(.close, [0x03, 0xE8])
        return (wire, frames)
    }

    /// Feeds `wire` to a validating server decoder in pieces that end anywhere, each taken one of three
    /// ways, chosen at random: lent (decoded straight from the caller's bytes, as from the loop's read
    /// buffer), appended (copied into the decoder first), or received in place (`receivePayload`, when the
    /// decoder offers it).
    private func decodeMixed(_ wire: [UInt8], seed: UInt64, maxPiece: Int) throws -> [WebSocketFrame] {
        var random = Xorshift(state: seed)
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20, validatesUTF8: true)
        var frames: [WebSocketFrame] = []
        var offset = 0
        while offset < wire.count {
            let piece = Int.random(in: 1...maxPiece, using: &random)
            let end = min(offset + piece, wire.count)
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                try wire[offset..<end].withUnsafeBytes { lent in
                    decoder.lend(lent)
                    while let frame = try decoder.next() { frames.append(frame) }
                    decoder.endLoan()
                }
                offset = end
            case 1:
                wire[offset..<end].withUnsafeBytes { decoder.append($0) }
                offset = end
            default:
                // `receivePayload` never offers past the frame's end: count what it really took.
                var taken = 0
                let took = decoder.receivePayload { space in
                    taken = min(space.count, end - offset)
                    space.copyBytes(from: wire[offset..<offset + taken])
                    return taken
                }
                if took {
                    offset += taken
                } else {
                    wire[offset..<end].withUnsafeBytes { decoder.append($0) }
                    offset = end
                }
            }
            while let frame = try decoder.next() { frames.append(frame) }
        }
        #expect(decoder.isIdle)
        return frames
    }

    @Test(arguments: [1, 2, 3, 5, 8, 13, 40, 1_000, 40_000])
    func decodingInPiecesOfAnySizeGivesTheReferenceFrames(maxPiece: Int) throws {
        let (wire, frames) = stream()
        for seed in 1...4 as ClosedRange<UInt64> {
            let decoded = try decodeMixed(wire, seed: seed &* 0x9E37_79B9_7F4A_7C15, maxPiece: maxPiece)
            #expect(decoded.count == frames.count, "seed \(seed) pieces ≤ \(maxPiece)")
            for (got, expected) in zip(decoded, frames) {
                #expect(got == expected, "seed \(seed) pieces ≤ \(maxPiece): \(got) != \(expected)")
            }
        }
    }

    /// Random byte strings near UTF-8: valid text of every sequence length, with now and then a byte
    /// replaced, dropped or inserted (overlongs, surrogates, stray continuations, truncations...).
    private func nearlyUTF8(_ random: inout Xorshift) -> [UInt8] {
        let alphabet = ["a", "Z", " ", "é", "ß", "€", "κ", "你", "\u{FFFD}", "\u{10FFFF}", "𝄞", "🎉", "\u{7F}", "\u{80}", "\u{7FF}", "\u{800}"]
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 0...24, using: &random) { bytes += Array(alphabet.randomElement(using: &random)!.utf8) }
        for _ in 0..<Int.random(in: 0...2, using: &random) where !bytes.isEmpty {
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.remove(at: at)
            default: bytes.insert([0x80, 0xBF, 0xC0, 0xC1, 0xED, 0xF4, 0xF5, 0xFF].randomElement(using: &random)!, at: at)
            }
        }
        return bytes
    }

    @Test func textSplitAcrossFramesIsAcceptedExactlyWhenTheStandardLibraryAcceptsIt() throws {
        var random = Xorshift(state: 0xC0FF_EE12_3456_7891)
        var valid = 0
        var invalid = 0
        for _ in 0..<3_000 {
            let text = nearlyUTF8(&random)
            let expected = String(validating: text, as: UTF8.self) != nil
            // One to four frames, cut anywhere (inside code points too), then a ping.
            var cuts = (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: 0...text.count, using: &random) }
            cuts = [0] + cuts.sorted() + [text.count]
            var wire: [UInt8] = []
            for i in 0..<cuts.count - 1 {
                let key = (0..<4).map { _ in UInt8.random(in: 0...255, using: &random) }
                wire += referenceFrame(fin: i == cuts.count - 2, opcode: i == 0 ? 0x1 : 0x0, Array(text[cuts[i]..<cuts[i + 1]]), key: key)
            }
            wire += referenceFrame(opcode: 0x9, [], key: [1, 2, 3, 4])
            var accepted = true
            var pieces: [UInt8] = []
            do {
                // In random pieces, lent, appended or received in place.
                for frame in try decodeMixed(wire, seed: random.next() | 1, maxPiece: 7) where frame.opcode != .ping {
                    pieces += frame.payload
                }
            } catch let error as WebSocketError {
                guard case .protocolViolation(.invalidFramePayloadData, _) = error else { throw error }
                accepted = false
            }
            #expect(accepted == expected, "\(text)")
            if accepted { #expect(pieces == text) }
            if expected { valid += 1 } else { invalid += 1 }
            // The validator on its own agrees too.
            #expect(text.withUnsafeBytes { UTF8Validator.isValid($0) } == expected, "\(text)")
        }
        // Both outcomes were exercised many times.
        #expect(valid > 500 && invalid > 500, "valid \(valid), invalid \(invalid)")
    }
}
