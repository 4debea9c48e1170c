import Testing
import ContrailWebSocket

@Suite struct MessageAssemblerTests {
    /// Pushes frames in order; returns the non-nil events, or the close code of the error thrown.
    private func run(_ frames: [WebSocketFrame], maxMessageSize: Int = 1 << 20) -> (events: [WebSocketEvent], error: CloseCode?, pushed: Int) {
        var assembler = MessageAssembler(maxMessageSize: maxMessageSize)
        var events: [WebSocketEvent] = []
        for (index, frame) in frames.enumerated() {
            do {
                if let event = try assembler.push(frame) { events.append(event) }
            } catch {
                guard case .protocolViolation(let code, _) = error else { return (events, nil, index) }
                return (events, code, index)
            }
        }
        return (events, nil, frames.count)
    }

    private func close(_ code: UInt16, _ reason: [UInt8] = []) -> WebSocketFrame {
        WebSocketFrame(opcode: .close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + reason)
    }

    @Test func singleFrameMessages() {
        let result = run([
            WebSocketFrame(opcode: .text, payload: Array("hello".utf8)),
            WebSocketFrame(opcode: .binary, payload: [0, 255, 7]),
            WebSocketFrame(opcode: .text, payload: []),
        ])
        #expect(result.error == nil)
        #expect(result.events == [.text("hello"), .binary([0, 255, 7]), .text("")])
    }

    @Test func fragmentsWithInterleavedControlFrames() {
        let result = run([
            WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8)),
            WebSocketFrame(opcode: .ping, payload: [1]),
            WebSocketFrame(fin: false, opcode: .continuation, payload: Array("lo, ".utf8)),
            WebSocketFrame(opcode: .pong, payload: [2]),
            WebSocketFrame(fin: false, opcode: .continuation, payload: []),
            WebSocketFrame(fin: true, opcode: .continuation, payload: Array("world".utf8)),
            WebSocketFrame(fin: false, opcode: .binary, payload: [1, 2]),
            WebSocketFrame(opcode: .ping, payload: []),
            WebSocketFrame(fin: true, opcode: .continuation, payload: [3]),
            close(1000, Array("done".utf8)),
        ])
        #expect(result.error == nil)
        #expect(result.events == [.ping([1]), .pong([2]), .text("Hello, world"), .ping([]), .binary([1, 2, 3]), .close(.normal, "done")])
    }

    @Test func continuationWithoutStartIsProtocolError() {
        #expect(run([WebSocketFrame(fin: true, opcode: .continuation, payload: [1])]).error == .protocolError)
        // Also after a completed message.
        let afterComplete = run([WebSocketFrame(opcode: .text, payload: [0x61]), WebSocketFrame(fin: false, opcode: .continuation, payload: [])])
        #expect(afterComplete.error == .protocolError)
        #expect(afterComplete.events == [.text("a")])
    }

    @Test(arguments: [Opcode.text, .binary])
    func newMessageWhileFragmentedMessageIsOpenIsProtocolError(opcode: Opcode) {
        let result = run([WebSocketFrame(fin: false, opcode: .binary, payload: [1]), WebSocketFrame(opcode: opcode, payload: [2])])
        #expect(result.error == .protocolError)
        #expect(result.pushed == 1)
    }

    @Test func utf8SplitAcrossFragmentsIsAccepted() {
        let bytes = Array("κόσμε €𝄞".utf8)
        // Split in the middle of every multi-byte sequence.
        for cut in 1..<bytes.count {
            let result = run([
                WebSocketFrame(fin: false, opcode: .text, payload: Array(bytes[..<cut])),
                WebSocketFrame(fin: true, opcode: .continuation, payload: Array(bytes[cut...])),
            ])
            #expect(result.error == nil, "cut \(cut)")
            #expect(result.events == [.text("κόσμε €𝄞")])
        }
    }

    @Test func invalidUTF8FailsFastOnTheFragmentThatBringsIt() {
        // 0xF4 0x90 cannot start valid UTF-8; the second fragment fails before the message is complete.
        let result = run([
            WebSocketFrame(fin: false, opcode: .text, payload: Array("κόσμε".utf8) + [0xF4]),
            WebSocketFrame(fin: false, opcode: .continuation, payload: [0x90, 0x80]),
            WebSocketFrame(fin: true, opcode: .continuation, payload: [0x80]),
        ])
        #expect(result.error == .invalidFramePayloadData)
        #expect(result.pushed == 1)
    }

    @Test func invalidUTF8InFirstFragmentFailsImmediately() {
        let result = run([WebSocketFrame(fin: false, opcode: .text, payload: [0x61, 0xC0, 0xAF])])
        #expect(result.error == .invalidFramePayloadData)
        #expect(result.pushed == 0)
    }

    @Test func textEndingInsideACodePointIsInvalid() {
        #expect(run([WebSocketFrame(opcode: .text, payload: [0xE2, 0x82])]).error == .invalidFramePayloadData)
        let fragmented = run([
            WebSocketFrame(fin: false, opcode: .text, payload: [0x61]),
            WebSocketFrame(fin: true, opcode: .continuation, payload: [0xE2, 0x82]),
        ])
        #expect(fragmented.error == .invalidFramePayloadData)
    }

    @Test func binaryIsNotValidated() {
        #expect(run([WebSocketFrame(opcode: .binary, payload: [0xFF, 0xC0])]).events == [.binary([0xFF, 0xC0])])
    }

    @Test func messageSizeLimit() {
        #expect(run([WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 1, count: 10))], maxMessageSize: 10).error == nil)
        #expect(run([WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 1, count: 11))], maxMessageSize: 10).error == .messageTooBig)
        let fragmented = run([
            WebSocketFrame(fin: false, opcode: .text, payload: Array("abcdef".utf8)),
            WebSocketFrame(fin: false, opcode: .continuation, payload: Array("ghij".utf8)),
            WebSocketFrame(fin: true, opcode: .continuation, payload: Array("k".utf8)),
        ], maxMessageSize: 10)
        #expect(fragmented.error == .messageTooBig)
        #expect(fragmented.pushed == 2)
        // Control frames do not count towards the message.
        let withPing = run([
            WebSocketFrame(fin: false, opcode: .binary, payload: [UInt8](repeating: 0, count: 8)),
            WebSocketFrame(opcode: .ping, payload: [UInt8](repeating: 0, count: 100)),
            WebSocketFrame(fin: true, opcode: .continuation, payload: [0, 0]),
        ], maxMessageSize: 10)
        #expect(withPing.error == nil)
    }

    @Test func closeFrames() {
        #expect(run([WebSocketFrame(opcode: .close, payload: [])]).events == [.close(nil, "")])
        #expect(run([close(1000)]).events == [.close(.normal, "")])
        #expect(run([close(4000, Array("ünicode reason".utf8))]).events == [.close(CloseCode(4000), "ünicode reason")])
    }

    @Test func closePayloadOfOneByteIsProtocolError() {
        #expect(run([WebSocketFrame(opcode: .close, payload: [0x03])]).error == .protocolError)
    }

    @Test(arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] as [UInt16])
    func invalidCloseCodesAreProtocolErrors(code: UInt16) {
        #expect(!CloseCode(code).isValidOnWire)
        #expect(run([close(code)]).error == .protocolError)
    }

    @Test(arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999] as [UInt16])
    func validCloseCodesAreAccepted(code: UInt16) {
        #expect(CloseCode(code).isValidOnWire)
        #expect(run([close(code)]).events == [.close(CloseCode(code), "")])
    }

    @Test func closeReasonMustBeUTF8() {
        #expect(run([close(1000, [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80])]).error
            == .invalidFramePayloadData)
        #expect(run([close(1000, [0xE2, 0x82])]).error == .invalidFramePayloadData)
    }

    @Test func closeMayInterruptAFragmentedMessage() {
        let result = run([WebSocketFrame(fin: false, opcode: .text, payload: [0x61]), close(1001)])
        #expect(result.events == [.close(.goingAway, "")])
        #expect(result.error == nil)
    }

    @Test func assemblerStaysFailedUntilReset() throws {
        var assembler = MessageAssembler(maxMessageSize: 100)
        #expect(throws: WebSocketError.self) { try assembler.push(WebSocketFrame(opcode: .continuation, payload: [])) }
        #expect(throws: WebSocketError.self) { try assembler.push(WebSocketFrame(opcode: .text, payload: [0x61])) }
        assembler.reset()
        #expect(try assembler.push(WebSocketFrame(opcode: .text, payload: [0x61])) == .text("a"))
    }

    @Test func decoderAndAssemblerTogether() throws {
        // A fragmented text message with a ping in between, masked, fed through the decoder in 3-byte chunks.
        var wire: [UInt8] = []
        var keys = MaskingKeyGenerator()
        for frame in [
            WebSocketFrame(fin: false, opcode: .text, payload: Array("frag".utf8)),
            WebSocketFrame(opcode: .ping, payload: Array("p".utf8)),
            WebSocketFrame(fin: true, opcode: .continuation, payload: Array("mented €".utf8)),
        ] {
            FrameEncoder.encode(frame, maskingKey: keys.next(), into: &wire)
        }
        var decoder = FrameDecoder(role: .server, maxFrameSize: 1000)
        var assembler = MessageAssembler(maxMessageSize: 1000)
        var events: [WebSocketEvent] = []
        var offset = 0
        while offset < wire.count {
            let end = min(offset + 3, wire.count)
            wire[offset..<end].withUnsafeBytes { decoder.append($0) }
            offset = end
            while let frame = try decoder.next() {
                if let event = try assembler.push(frame) { events.append(event) }
            }
        }
        #expect(events == [.ping(Array("p".utf8)), .text("fragmented €")])
    }

    @Test func takeWholeMessageReturnsSingleFrameMessagesAsBytesAndDeclinesTheRest() throws {
        var assembler = MessageAssembler(maxMessageSize: 10)
        let text = Array("héllo".utf8)
        #expect(try assembler.takeWholeMessage(WebSocketFrame(opcode: .text, payload: text)) == text)
        #expect(try assembler.takeWholeMessage(WebSocketFrame(opcode: .binary, payload: [0xFF])) == [0xFF])
        // Not whole messages: declined, and nothing is taken (push handles them as usual).
        let start = WebSocketFrame(fin: false, opcode: .text, payload: Array("ab".utf8))
        #expect(try assembler.takeWholeMessage(start) == nil)
        #expect(try assembler.takeWholeMessage(WebSocketFrame(opcode: .ping, payload: [1])) == nil)
        #expect(try assembler.push(start) == nil)
        // A message is open: even a final data frame is declined (push reports the violation).
        #expect(try assembler.takeWholeMessage(WebSocketFrame(opcode: .text, payload: [0x61])) == nil)
        #expect(try assembler.push(WebSocketFrame(opcode: .continuation, payload: Array("c".utf8))) == .text("abc"))
    }

    @Test func takeWholeMessageValidatesTextAndSizeAndStaysFailed() {
        // Invalid, truncated, too big; each against a fresh assembler, with a valid control first.
        let cases: [([UInt8], Opcode, CloseCode)] = [
            ([0x61, 0xED, 0xA0, 0x80], .text, .invalidFramePayloadData),
            ([0x61, 0xE2, 0x82], .text, .invalidFramePayloadData),
            ([UInt8](repeating: 0x61, count: 11), .binary, .messageTooBig),
        ]
        for (payload, opcode, code) in cases {
            var assembler = MessageAssembler(maxMessageSize: 10)
            #expect((try? assembler.takeWholeMessage(WebSocketFrame(opcode: opcode, payload: [0x61]))) == [0x61])
            #expect(throws: WebSocketError.self) { try assembler.takeWholeMessage(WebSocketFrame(opcode: opcode, payload: payload)) }
            do {
                _ = try assembler.takeWholeMessage(WebSocketFrame(opcode: .binary, payload: [1]))
                Issue.record("the assembler did not stay failed")
            } catch {
                guard case .protocolViolation(let thrown, _) = error else { Issue.record("\(error)"); continue }
                #expect(thrown == code)
            }
        }
        // Text is not validated when the assembler leaves that to the decoder.
        var unchecked = MessageAssembler(maxMessageSize: 10, validatesUTF8: false)
        #expect((try? unchecked.takeWholeMessage(WebSocketFrame(opcode: .text, payload: [0xFF]))) == [0xFF])
    }
}
