import Testing
import ContrailWebSocket

@Suite struct FrameCodecTests {
    /// Decodes `bytes` fed in chunks of `chunk` bytes (nil: all at once), calling `next()` after every append.
    private func decode(_ bytes: [UInt8], role: WebSocketRole, maxFrameSize: Int = 1 << 20, chunk: Int? = nil) throws -> [WebSocketFrame] {
        var decoder = FrameDecoder(role: role, maxFrameSize: maxFrameSize)
        var frames: [WebSocketFrame] = []
        let size = chunk ?? max(bytes.count, 1)
        var offset = 0
        repeat {
            let end = min(offset + size, bytes.count)
            bytes[offset..<end].withUnsafeBytes { decoder.append($0) }
            offset = end
            while let frame = try decoder.next() { frames.append(frame) }
        } while offset < bytes.count
        #expect(decoder.bufferedByteCount == 0)
        return frames
    }

    /// The close code of the `protocolViolation` thrown while decoding `bytes`, nil if nothing was thrown.
    private func closeCode(decoding bytes: [UInt8], role: WebSocketRole, maxFrameSize: Int = 1 << 20) -> CloseCode? {
        do {
            _ = try decode(bytes, role: role, maxFrameSize: maxFrameSize)
            return nil
        } catch let error as WebSocketError {
            guard case .protocolViolation(let code, _) = error else { return nil }
            return code
        } catch {
            return nil
        }
    }

    private func payload(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
    }

    // MARK: Round trips

    @Test(arguments: [0, 125, 126, 65535, 65536], [false, true])
    func roundTripAllAtOnce(size: Int, masked: Bool) throws {
        let frame = WebSocketFrame(fin: true, opcode: .binary, payload: payload(size))
        var wire: [UInt8] = []
        FrameEncoder.encode(frame, maskingKey: masked ? 0x1234_5678 : nil, into: &wire)
        #expect(wire.count == FrameEncoder.headerSize(payloadCount: size, masked: masked) + size)
        let decoded = try decode(wire, role: masked ? .server : .client)
        #expect(decoded == [frame])
    }

    @Test(arguments: [0, 125, 126, 65535, 65536], [false, true])
    func roundTripByteByByte(size: Int, masked: Bool) throws {
        let frame = WebSocketFrame(fin: false, opcode: .text, payload: payload(size))
        var wire: [UInt8] = []
        FrameEncoder.encode(frame, maskingKey: masked ? 0xA1B2_C3D4 : nil, into: &wire)
        let decoded = try decode(wire, role: masked ? .server : .client, chunk: 1)
        #expect(decoded == [frame])
    }

    @Test func roundTripManyFramesInOddChunks() throws {
        let frames = [
            WebSocketFrame(fin: false, opcode: .text, payload: Array("hel".utf8)),
            WebSocketFrame(opcode: .ping, payload: [1, 2, 3]),
            WebSocketFrame(fin: true, opcode: .continuation, payload: Array("lo".utf8)),
            WebSocketFrame(opcode: .binary, payload: payload(70_000)),
            WebSocketFrame(opcode: .pong, payload: []),
            WebSocketFrame(opcode: .close, payload: FrameEncoder.closePayload(code: .normal, reason: "bye")),
        ]
        var wire: [UInt8] = []
        var keys = MaskingKeyGenerator()
        for frame in frames { FrameEncoder.encode(frame, maskingKey: keys.next(), into: &wire) }
        for chunk in [1, 2, 3, 7, 13, 1000, 4096, 65_537] {
            #expect(try decode(wire, role: .server, chunk: chunk) == frames, "chunk \(chunk)")
        }
    }

    @Test(arguments: [1, 2, 3, 7, 13, 1000, 4096, 65_537, 1 << 20], [true, false])
    func lentBytesDecodeLikeAppendedOnes(chunk: Int, drain: Bool) throws {
        let frames = [
            WebSocketFrame(fin: false, opcode: .text, payload: Array("hel".utf8)),
            WebSocketFrame(opcode: .ping, payload: [1, 2, 3]),
            WebSocketFrame(fin: true, opcode: .continuation, payload: Array("lo".utf8)),
            WebSocketFrame(opcode: .binary, payload: payload(20_000)),
            WebSocketFrame(opcode: .text, payload: Array(String(repeating: "ab€", count: 300).utf8)),
            WebSocketFrame(opcode: .pong, payload: []),
        ]
        let bytes = wire(frames)
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20, validatesUTF8: true)
        var decoded: [WebSocketFrame] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            try bytes[offset..<end].withUnsafeBytes { lent in
                decoder.lend(lent)
                // Without draining, at most one frame per loan: endLoan must keep the rest, in order.
                if drain {
                    while let frame = try decoder.next() { decoded.append(frame) }
                } else if let frame = try decoder.next() {
                    decoded.append(frame)
                }
                decoder.endLoan()
            }
            offset = end
        }
        while let frame = try decoder.next() { decoded.append(frame) }
        #expect(decoded == frames)
        #expect(decoder.isIdle)
    }

    @Test func invalidTextInLentBytesFailsAndTheDecoderStaysFailed() {
        let bytes = wire([WebSocketFrame(opcode: .text, payload: [0x61, 0xFF, 0x61]), WebSocketFrame(opcode: .ping, payload: [])])
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20, validatesUTF8: true)
        bytes.withUnsafeBytes { lent in
            decoder.lend(lent)
            #expect(throws: WebSocketError.protocolViolation(.invalidFramePayloadData, "text message is not valid UTF-8")) {
                try decoder.next()
            }
            decoder.endLoan()
        }
        #expect(throws: WebSocketError.self) { try decoder.next() }
    }

    @Test func headerLengthEncodings() {
        func header(_ count: Int) -> [UInt8] {
            var out: [UInt8] = []
            FrameEncoder.encodeHeader(opcode: .binary, fin: true, payloadCount: count, maskingKey: nil, into: &out)
            return out
        }
        #expect(header(0) == [0x82, 0])
        #expect(header(125) == [0x82, 125])
        #expect(header(126) == [0x82, 126, 0x00, 0x7E])
        #expect(header(65535) == [0x82, 126, 0xFF, 0xFF])
        #expect(header(65536) == [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00])
        var masked: [UInt8] = []
        FrameEncoder.encodeHeader(opcode: .text, fin: false, payloadCount: 5, maskingKey: 0x37FA_213D, into: &masked)
        #expect(masked == [0x01, 0x85, 0x37, 0xFA, 0x21, 0x3D])
    }

    @Test func rfcMaskedHelloExample() throws {
        // RFC 6455 §5.7: a single-frame masked text message containing "Hello".
        let wire: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(try decode(wire, role: .server) == [WebSocketFrame(opcode: .text, payload: Array("Hello".utf8))])
        var encoded: [UInt8] = []
        FrameEncoder.encode(WebSocketFrame(opcode: .text, payload: Array("Hello".utf8)), maskingKey: 0x37FA_213D, into: &encoded)
        #expect(encoded == wire)
    }

    @Test func maskingMatchesByteWiseReferenceForEveryLengthAndOffset() {
        let key: UInt32 = 0xDEAD_BEEF
        let keyBytes: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
        for length in [0, 1, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 130] {
            for offset in 0..<4 {
                let original = payload(length)
                var fast = original
                Masking.apply(key: key, to: &fast, offset: offset)
                let reference = original.enumerated().map { $0.element ^ keyBytes[($0.offset + offset) % 4] }
                #expect(fast == reference, "length \(length) offset \(offset)")
                Masking.apply(key: key, to: &fast, offset: offset)
                #expect(fast == original)
            }
        }
    }

    @Test func maskingKeysVary() {
        var generator = MaskingKeyGenerator()
        let keys = Set((0..<64).map { _ in generator.next() })
        #expect(keys.count > 60)
    }

    @Test func closePayloadEncodesCodeAndTruncatesReasonOnCharacterBoundary() {
        #expect(FrameEncoder.closePayload(code: nil, reason: "ignored") == [])
        #expect(FrameEncoder.closePayload(code: .goingAway, reason: "") == [0x03, 0xE9])
        let long = String(repeating: "é", count: 100)  // 200 bytes of 2-byte characters
        let payload = FrameEncoder.closePayload(code: .normal, reason: long)
        #expect(payload.count <= 125)
        #expect(payload.count == 2 + 122)
        #expect(payload[2...].withUnsafeBytes { UTF8Validator.isValid($0) })
    }

    // MARK: Malformed frames

    @Test(arguments: [0x40, 0x20, 0x10, 0x70] as [UInt8])
    func reservedBitsAreProtocolErrors(rsv: UInt8) {
        #expect(closeCode(decoding: [0x80 | rsv | 0x1, 0x80, 0, 0, 0, 0], role: .server) == .protocolError)
    }

    @Test(arguments: [3, 4, 5, 6, 7, 11, 12, 13, 14, 15] as [UInt8])
    func reservedOpcodesAreProtocolErrors(opcode: UInt8) {
        #expect(closeCode(decoding: [0x80 | opcode, 0x80, 0, 0, 0, 0], role: .server) == .protocolError)
    }

    @Test(arguments: [Opcode.close, .ping, .pong])
    func fragmentedControlFrameIsProtocolError(opcode: Opcode) {
        #expect(closeCode(decoding: [opcode.rawValue, 0x80, 0, 0, 0, 0], role: .server) == .protocolError)
    }

    @Test(arguments: [Opcode.close, .ping, .pong])
    func controlFrameLongerThan125IsProtocolError(opcode: Opcode) {
        var wire: [UInt8] = []
        FrameEncoder.encode(WebSocketFrame(opcode: opcode, payload: payload(126)), maskingKey: 1, into: &wire)
        #expect(closeCode(decoding: wire, role: .server) == .protocolError)
        // 125 bytes is fine.
        var ok: [UInt8] = []
        FrameEncoder.encode(WebSocketFrame(opcode: opcode, payload: payload(125)), maskingKey: 1, into: &ok)
        #expect(closeCode(decoding: ok, role: .server) == nil)
    }

    @Test func serverRejectsUnmaskedFrames() {
        #expect(closeCode(decoding: [0x81, 0x02, 0x68, 0x69], role: .server) == .protocolError)
    }

    @Test func clientRejectsMaskedFrames() {
        #expect(closeCode(decoding: [0x81, 0x82, 1, 2, 3, 4, 0x69, 0x6B], role: .client) == .protocolError)
    }

    @Test func sixtyFourBitLengthWithTopBitIsProtocolError() {
        #expect(closeCode(decoding: [0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1], role: .client) == .protocolError)
    }

    @Test func framesOverTheLimitAreTooBig() {
        // 7-bit, 16-bit and 64-bit lengths; refused from the header alone, before any payload arrives.
        #expect(closeCode(decoding: [0x82, 11], role: .client, maxFrameSize: 10) == .messageTooBig)
        #expect(closeCode(decoding: [0x82, 126, 0x01, 0x00], role: .client, maxFrameSize: 255) == .messageTooBig)
        #expect(closeCode(decoding: [0x82, 127, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], role: .client) == .messageTooBig)
        // Exactly the limit is fine.
        #expect(closeCode(decoding: [0x82, 10] + payload(10), role: .client, maxFrameSize: 10) == nil)
    }

    @Test func errorsAreDetectedFromTheHeaderBeforeThePayload() throws {
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20)
        // RSV1 set: only the first byte has arrived.
        decoder.append([0xC1])
        #expect(throws: WebSocketError.self) { try decoder.next() }
    }

    @Test func decoderStaysFailedAfterAnError() throws {
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20)
        decoder.append([0x83, 0x80, 0, 0, 0, 0])
        var first: WebSocketError?
        do { _ = try decoder.next() } catch { first = error }
        var wire: [UInt8] = []
        FrameEncoder.encode(WebSocketFrame(opcode: .text, payload: [0x61]), maskingKey: 9, into: &wire)
        decoder.append(wire)
        var second: WebSocketError?
        do { _ = try decoder.next() } catch { second = error }
        #expect(first != nil)
        #expect(first == second)
    }

    @Test func nonMinimalLengthEncodingIsAccepted() throws {
        // RFC 6455 asks senders for the minimal length form; receiving a longer form is harmless.
        let wire: [UInt8] = [0x82, 126, 0x00, 0x03, 1, 2, 3]
        #expect(try decode(wire, role: .client) == [WebSocketFrame(opcode: .binary, payload: [1, 2, 3])])
    }

    @Test func partialFramesKeepBufferBounded() throws {
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 22)
        var wire: [UInt8] = []
        FrameEncoder.encode(WebSocketFrame(opcode: .binary, payload: payload(1 << 21)), maskingKey: 0x0102_0304, into: &wire)
        var frames: [WebSocketFrame] = []
        var offset = 0
        while offset < wire.count {
            let end = min(offset + 65_536, wire.count)
            wire[offset..<end].withUnsafeBytes { decoder.append($0) }
            offset = end
            while let frame = try decoder.next() { frames.append(frame) }
            // Payload bytes are moved out of the buffer at once.
            #expect(decoder.bufferedByteCount == 0)
        }
        #expect(frames == [WebSocketFrame(opcode: .binary, payload: payload(1 << 21))])
        #expect(decoder.isIdle)
    }

    // MARK: Fail-fast UTF-8 and sequencing in the decoder (validatesUTF8)

    /// Feeds `chunks` one at a time to a validating server decoder; returns the frames decoded and,
    /// if one was thrown, the close code and the index of the chunk after which it was thrown.
    private func feedValidating(_ chunks: [[UInt8]]) -> (frames: [WebSocketFrame], code: CloseCode?, chunk: Int?) {
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20, validatesUTF8: true)
        var frames: [WebSocketFrame] = []
        for (index, chunk) in chunks.enumerated() {
            decoder.append(chunk)
            do {
                while let frame = try decoder.next() { frames.append(frame) }
            } catch {
                guard case .protocolViolation(let code, _) = error else { return (frames, nil, index) }
                return (frames, code, index)
            }
        }
        return (frames, nil, nil)
    }

    private func wire(_ frames: [WebSocketFrame]) -> [UInt8] {
        var out: [UInt8] = []
        for frame in frames { FrameEncoder.encode(frame, maskingKey: 0x5A5A_1234, into: &out) }
        return out
    }

    @Test func invalidUTF8InsideOneFrameFailsBeforeTheFrameEnds() {
        // Like Autobahn 6.4.3: one text frame sent in three chops; the second chop holds the bad bytes.
        let good = Array("κόσμε".utf8)
        let bad: [UInt8] = [0xF4, 0x90, 0x80, 0x80]
        let rest = Array("edited".utf8)
        let bytes = wire([WebSocketFrame(opcode: .text, payload: good + bad + rest)])
        let header = FrameEncoder.headerSize(payloadCount: good.count + bad.count + rest.count, masked: true)
        let cut1 = header + good.count
        let cut2 = cut1 + bad.count
        let result = feedValidating([Array(bytes[..<cut1]), Array(bytes[cut1..<cut2]), Array(bytes[cut2...])])
        #expect(result.code == .invalidFramePayloadData)
        #expect(result.chunk == 1)
    }

    @Test func invalidUTF8InALaterFragmentFailsBeforeTheMessageEnds() {
        // Like Autobahn 6.4.1: the second fragment is bad; the final fragment never needs to arrive.
        let chunks = [
            wire([WebSocketFrame(fin: false, opcode: .text, payload: Array("κόσμε".utf8))]),
            wire([WebSocketFrame(opcode: .ping, payload: [1])]),
            wire([WebSocketFrame(fin: false, opcode: .continuation, payload: [0xF4, 0x90, 0x80, 0x80])]),
            wire([WebSocketFrame(fin: true, opcode: .continuation, payload: Array("edited".utf8))]),
        ]
        let result = feedValidating(chunks)
        #expect(result.code == .invalidFramePayloadData)
        #expect(result.chunk == 2)
        #expect(result.frames.count == 2)
    }

    @Test func validTextSplitAcrossFramesAndChunksIsAccepted() throws {
        let text = Array("a€𝄞 κόσμε 🎉".utf8)
        for cut in 1..<text.count {
            let bytes = wire([
                WebSocketFrame(fin: false, opcode: .text, payload: Array(text[..<cut])),
                WebSocketFrame(opcode: .pong, payload: []),
                WebSocketFrame(fin: true, opcode: .continuation, payload: Array(text[cut...])),
            ])
            let result = feedValidating(bytes.map { [$0] })  // byte by byte
            #expect(result.code == nil, "cut \(cut)")
            var assembler = MessageAssembler(maxMessageSize: 1000, validatesUTF8: false)
            var events: [WebSocketEvent] = []
            for frame in result.frames {
                if let event = try assembler.push(frame) { events.append(event) }
            }
            #expect(events == [.pong([]), .text("a€𝄞 κόσμε 🎉")])
        }
    }

    @Test func textEndingInsideACodePointFailsOnTheLastFrame() {
        #expect(feedValidating([wire([WebSocketFrame(opcode: .text, payload: [0x61, 0xE2, 0x82])])]).code == .invalidFramePayloadData)
        let fragmented = feedValidating([
            wire([WebSocketFrame(fin: false, opcode: .text, payload: [0xE2, 0x82])]),
            wire([WebSocketFrame(fin: true, opcode: .continuation, payload: [])]),
        ])
        #expect(fragmented.code == .invalidFramePayloadData)
        #expect(fragmented.chunk == 1)
    }

    @Test func binaryIsNotValidatedByTheDecoder() {
        let result = feedValidating([wire([WebSocketFrame(fin: false, opcode: .binary, payload: [0xFF]), WebSocketFrame(fin: true, opcode: .continuation, payload: [0xC0])])])
        #expect(result.code == nil)
        #expect(result.frames.count == 2)
    }

    @Test func sequencingErrorsFailOnTheFirstHeaderByte() {
        // Continuation with nothing open: only the first byte is needed.
        #expect(feedValidating([[0x80]]).code == .protocolError)
        // New text while a binary message is open.
        let result = feedValidating([wire([WebSocketFrame(fin: false, opcode: .binary, payload: [1])]), [0x81]])
        #expect(result.code == .protocolError)
        #expect(result.chunk == 1)
    }

    // MARK: Receiving payloads in place (receivePayload) and the fused unmask + ASCII check

    /// Feeds a masked frame's header (and `prefix` payload bytes) with `append`, then the rest of the wire
    /// through `receivePayload` in pieces of `piece` bytes. Returns the frames, the close code thrown (if
    /// any) and the sizes of the spaces `receivePayload` offered.
    private func receiveInPlace(_ bytes: [UInt8], headerAndPrefix: Int, piece: Int, minimum: Int = 1)
        -> (frames: [WebSocketFrame], code: CloseCode?, spaces: [Int])
    {
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 22, validatesUTF8: true)
        var frames: [WebSocketFrame] = []
        var spaces: [Int] = []
        var offset = headerAndPrefix
        decoder.append(Array(bytes[..<offset]))
        do {
            while let frame = try decoder.next() { frames.append(frame) }
            while offset < bytes.count {
                let took = decoder.receivePayload(minimum: minimum) { space in
                    spaces.append(space.count)
                    let count = min(piece, space.count, bytes.count - offset)
                    space.copyBytes(from: bytes[offset..<offset + count])
                    return count
                }
                if !took {
                    // Not inside a payload (or too little of it missing): take the next piece the usual way.
                    let end = min(offset + piece, bytes.count)
                    decoder.append(Array(bytes[offset..<end]))
                    offset = end
                } else {
                    offset += min(piece, spaces.last ?? 0, bytes.count - offset)
                }
                while let frame = try decoder.next() { frames.append(frame) }
            }
        } catch {
            guard case .protocolViolation(let code, _) = error else { return (frames, nil, spaces) }
            return (frames, code, spaces)
        }
        return (frames, nil, spaces)
    }

    @Test(arguments: [1, 7, 4093, 1 << 20])
    func payloadReceivedInPlaceIsUnmaskedAndStopsAtTheFrameEnd(piece: Int) throws {
        // Kept small: piece 1 means a call per byte, slow under ThreadSanitizer.
        let text = Array(String(repeating: "plain ascii, then κόσμε 🎉 ", count: 400).utf8)
        let frames = [
            WebSocketFrame(opcode: .text, payload: text),
            WebSocketFrame(opcode: .binary, payload: payload(20_000)),
            WebSocketFrame(opcode: .ping, payload: [1, 2, 3]),
        ]
        let bytes = wire(frames)
        let header = FrameEncoder.headerSize(payloadCount: text.count, masked: true)
        let result = receiveInPlace(bytes, headerAndPrefix: header + 5, piece: piece)
        #expect(result.code == nil)
        #expect(result.frames == frames)
        // The first space offered is exactly the rest of the first payload, never the next frame's bytes.
        #expect(result.spaces.first == text.count - 5)
        #expect(result.spaces.allSatisfy { $0 <= max(text.count, 20_000) })
    }

    @Test func receivePayloadDeclinesOutsideAPayloadAndBelowItsMinimum() throws {
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 20, validatesUTF8: true)
        var called = false
        // Idle: nothing to receive into.
        #expect(!decoder.receivePayload { _ in called = true; return 0 })
        let bytes = wire([WebSocketFrame(opcode: .binary, payload: payload(1000))])
        let header = FrameEncoder.headerSize(payloadCount: 1000, masked: true)
        decoder.append(Array(bytes[..<header]))
        #expect(try decoder.next() == nil)
        // 1000 bytes missing: declined with a larger minimum, taken with a smaller one (positive control).
        #expect(!decoder.receivePayload(minimum: 1001) { _ in called = true; return 0 })
        #expect(!called)
        var offered = 0
        #expect(decoder.receivePayload(minimum: 1000) { space in offered = space.count; return 0 })
        #expect(offered == 1000)
        // The rest of the payload and the next frame's first byte, not yet decoded: declined, so bytes
        // are never taken out of order; then the frame completes as usual.
        decoder.append(Array(bytes[header...]) + [0x82])
        #expect(!decoder.receivePayload { _ in called = true; return 0 })
        #expect(!called)
        #expect(try decoder.next() == WebSocketFrame(opcode: .binary, payload: payload(1000)))
    }

    @Test func invalidUTF8ReceivedInPlaceFailsAtOnce() {
        let good = Array(String(repeating: "a", count: 40_000).utf8)
        let bad: [UInt8] = [0xED, 0xA0, 0x80]  // a surrogate
        let bytes = wire([WebSocketFrame(opcode: .text, payload: good + bad + good)])
        let header = FrameEncoder.headerSize(payloadCount: 2 * good.count + bad.count, masked: true)
        let failed = receiveInPlace(bytes, headerAndPrefix: header, piece: good.count + bad.count)
        #expect(failed.code == .invalidFramePayloadData)
        #expect(failed.spaces.count == 1)
        // Positive control: the same frame with valid text in the middle.
        let valid = Array("é".utf8) + [0x61]
        let fine = receiveInPlace(wire([WebSocketFrame(opcode: .text, payload: good + valid + good)]),
                                  headerAndPrefix: header, piece: good.count + bad.count)
        #expect(fine.code == nil)
        #expect(fine.frames.first?.payload == good + valid + good)
    }

    @Test func unmaskingReportsASCIIForEveryPositionOfANonASCIIByte() {
        let key: UInt32 = 0x8001_7F80
        let keyBytes: [UInt8] = [0x80, 0x01, 0x7F, 0x80]
        for length in [1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 70, 130] {
            for offset in 0..<4 {
                let ascii = (0..<length).map { UInt8(truncatingIfNeeded: 0x20 + $0 % 90) }
                for high in [-1] + Array(0..<length) {
                    var plain = ascii
                    if high >= 0 { plain[high] = 0xC3 }
                    var masked = plain.enumerated().map { $0.element ^ keyBytes[($0.offset + offset) % 4] }
                    let allASCII = masked.withUnsafeMutableBytes {
                        Masking.applyCheckingASCII(key: key, to: $0, offset: offset)
                    }
                    #expect(masked == plain, "length \(length) offset \(offset)")
                    #expect(allASCII == (high < 0), "length \(length) offset \(offset) high byte at \(high)")
                }
            }
        }
    }
}
