/// An incremental WebSocket frame decoder (RFC 6455 §5.2) written as an explicit state machine.
///
/// Feed bytes as they arrive with `append(_:)`, then call `next()` until it returns nil (it needs more
/// bytes). Each call to `next()` moves every buffered payload byte into the frame being built, so the
/// internal buffer stays small; call `next()` after every `append` to keep memory bounded. A caller whose
/// bytes stay valid while it calls `next()` can lend them instead (`lend(_:)`, `endLoan()`): frames are
/// then decoded straight from them, without first copying them into the decoder's buffer.
///
/// The decoder checks everything a single frame can get wrong and throws
/// `WebSocketError.protocolViolation` with the close code to send:
/// - nonzero RSV1–3 bits (no extensions are negotiated), reserved opcodes 3–7 and 11–15,
///   a control frame with FIN clear or more than 125 payload bytes, a frame masked the wrong way for
///   our role, a 64-bit length with the top bit set: `protocolError` (1002);
/// - a frame longer than `maxFrameSize`: `messageTooBig` (1009).
///
/// With `validatesUTF8` on, the decoder also follows message boundaries and fails as early as possible:
/// - a continuation frame with no message open, or a new text/binary frame while one is open:
///   `protocolError` (1002), from the first header byte;
/// - invalid UTF-8 in a text message: `invalidFramePayloadData` (1007), as soon as the offending bytes
///   arrive, even in the middle of a frame; a text message ending inside a code point: 1007 on its last frame.
/// Pair it with a `MessageAssembler(maxMessageSize:validatesUTF8: false)` so text is checked only once.
///
/// Checks happen as soon as the bytes that decide them arrive, before the payload is read.
/// After an error the decoder stays failed: every later `next()` throws the same error.
/// Each frame's payload array is allocated once, at its full announced length (up to a cap), when the
/// header is complete. A payload that arrives after its header is unmasked while it is copied straight
/// from the input (appended or lent) into the array, or, with `receivePayload(minimum:_:)`, received
/// into it with no copy and unmasked in place: either way one pass over the bytes, a 64-bit word at a
/// time, in blocks that stay in the CPU cache for the UTF-8 check of text (which skips all-ASCII
/// blocks). `recycle(_:)` gives a payload array back for the next frame.
public struct FrameDecoder {
    /// Where the decoder is within the current frame.
    private enum State {
        /// Waiting for the first header byte.
        case idle
        /// Got the first byte (FIN, RSV, opcode); waiting for the mask bit and 7-bit length.
        case haveFirstByte(first: UInt8)
        /// Waiting for a 16-bit extended length.
        case waitingForLength16(first: UInt8, masked: Bool)
        /// Waiting for a 64-bit extended length.
        case waitingForLength64(first: UInt8, masked: Bool)
        /// Waiting for the 4-byte masking key.
        case waitingForMaskingKey(first: UInt8, length: Int)
        /// Reading `length` payload bytes into `payload`.
        case readingPayload(first: UInt8, length: Int, maskingKey: UInt32?)
    }

    /// Which end we are: servers require masked frames, clients require unmasked ones.
    public let role: WebSocketRole
    /// Frames whose payload is longer than this are refused with `messageTooBig` (1009).
    public var maxFrameSize: Int
    /// Whether the decoder tracks fragmented messages and validates text as UTF-8 while it arrives.
    public let validatesUTF8: Bool

    private var state: State = .idle
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Bytes lent with `lend(_:)`, read after `buffer[readIndex...]`; the first `inputIndex` are decoded.
    private var input: UnsafeRawBufferPointer?
    private var inputIndex = 0
    /// The payload of the frame in `.readingPayload`: allocated at the frame's length (at most
    /// `maxUpfrontReservation`); its first `filled` bytes are received, unmasked and validated.
    private var payload: [UInt8] = []
    /// How many bytes of `payload` hold received payload.
    private var filled = 0
    /// A payload array given back with `recycle(_:)`, for the next frame it fits.
    private var spare: [UInt8] = []
    private var failure: WebSocketError?
    /// With `validatesUTF8`: the opcode of the fragmented data message in progress, nil between messages.
    private var openMessage: Opcode?
    /// With `validatesUTF8`: whether the current frame's payload belongs to a text message.
    private var frameIsText = false
    private var utf8 = UTF8Validator()

    /// Buffers larger than this are released rather than kept for reuse once drained.
    private static let retainedCapacity = 256 * 1024
    /// Payload arrays of these capacities are kept by `recycle(_:)`: smaller ones are cheap to allocate,
    /// larger ones too costly to hold on to.
    private static let recycledCapacities = 16 * 1024...(4 << 20)
    /// The most payload capacity reserved before the bytes arrive.
    private static let maxUpfrontReservation = 64 * 1024 * 1024
    /// Consumed bytes at the front of the buffer are compacted away beyond this size.
    private static let compactThreshold = 4096

    /// A decoder for the frames a `role` endpoint receives.
    /// - Parameter validatesUTF8: also check message sequencing and UTF-8 of text, failing fast
    ///   (see the type's documentation). Off by default.
    public init(role: WebSocketRole, maxFrameSize: Int, validatesUTF8: Bool = false) {
        self.role = role
        self.maxFrameSize = max(0, maxFrameSize)
        self.validatesUTF8 = validatesUTF8
    }

    /// Bytes received but not yet decoded (header bytes and payload bytes not yet moved into a frame).
    public var bufferedByteCount: Int { buffer.count - readIndex + (input?.count ?? 0) - inputIndex }

    /// True when no frame is partly decoded and nothing is buffered.
    public var isIdle: Bool {
        if case .idle = state, bufferedByteCount == 0 { return true }
        return false
    }

    /// Lends received bytes: `next()` decodes straight from them (each payload byte is copied once, into
    /// its frame). `bytes` must stay valid until `endLoan()`, which copies whatever `next()` did not reach
    /// into the decoder's buffer; call it before `bytes` goes away, and before the next `lend` or `append`.
    /// Ignored once the decoder has failed. O(1).
    public mutating func lend(_ bytes: UnsafeRawBufferPointer) {
        precondition(input == nil, "FrameDecoder.lend: the previous loan was not ended")
        guard failure == nil, bytes.count > 0 else { return }
        input = bytes
        inputIndex = 0
    }

    /// Ends the loan of `lend(_:)`: the bytes `next()` did not decode are copied into the decoder's
    /// buffer (as `append` would). O(bytes left).
    public mutating func endLoan() {
        guard let lent = input else { return }
        let rest = UnsafeRawBufferPointer(rebasing: lent[inputIndex...])
        input = nil
        inputIndex = 0
        append(rest)
    }

    /// Adds received bytes. Ignored once the decoder has failed.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(input == nil, "FrameDecoder.append during a loan: call endLoan() first")
        guard failure == nil, bytes.count > 0 else { return }
        var rest = bytes
        // Payload that follows an already decoded header goes straight into the payload array.
        if case .readingPayload(_, let length, let key) = state, readIndex == buffer.count {
            let take = min(length - filled, rest.count)
            do {
                try appendPayload(UnsafeRawBufferPointer(rebasing: rest[..<take]), maskingKey: key)
            } catch {
                fail(error)
                return
            }
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if rest.isEmpty { return }
        }
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
            readIndex = 0
        }
        buffer.append(contentsOf: rest.assumingMemoryBound(to: UInt8.self))
    }

    /// Adds received bytes. See `append(_: UnsafeRawBufferPointer)`.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Decodes the next complete frame, unmasked.
    /// - Returns: the frame, or nil when more bytes are needed.
    /// - Throws: `WebSocketError.protocolViolation` with the close code to send (see the type's documentation).
    public mutating func next() throws(WebSocketError) -> WebSocketFrame? {
        if let failure { throw failure }
        do {
            let frame = try step()
            compact()
            return frame
        } catch {
            fail(error)
            throw error
        }
    }

    private mutating func fail(_ error: WebSocketError) {
        failure = error
        buffer = []
        payload = []
        filled = 0
        input = nil
        inputIndex = 0
        readIndex = 0
    }

    // MARK: - State machine

    private mutating func step() throws(WebSocketError) -> WebSocketFrame? {
        while true {
            switch state {
            case .idle:
                guard let first = readByte() else { return nil }
                guard first & 0x70 == 0 else {
                    throw .protocolViolation(.protocolError, "reserved bits set (RSV=\((first >> 4) & 7)) but no extension was negotiated")
                }
                guard let opcode = Opcode(rawValue: first & 0x0F) else {
                    throw .protocolViolation(.protocolError, "reserved opcode \(first & 0x0F)")
                }
                if validatesUTF8 { try trackMessage(opcode: opcode, fin: first & 0x80 != 0) }
                state = .haveFirstByte(first: first)

            case .haveFirstByte(let first):
                guard let second = readByte() else { return nil }
                let masked = second & 0x80 != 0
                let length7 = second & 0x7F
                if first & 0x08 != 0 {  // control frame
                    guard first & 0x80 != 0 else {
                        throw .protocolViolation(.protocolError, "fragmented control frame (FIN clear on opcode \(first & 0x0F))")
                    }
                    guard length7 <= 125 else {
                        throw .protocolViolation(.protocolError, "control frame payload longer than 125 bytes")
                    }
                }
                switch role {
                case .server where !masked:
                    throw .protocolViolation(.protocolError, "client sent an unmasked frame")
                case .client where masked:
                    throw .protocolViolation(.protocolError, "server sent a masked frame")
                default:
                    break
                }
                switch length7 {
                case 126: state = .waitingForLength16(first: first, masked: masked)
                case 127: state = .waitingForLength64(first: first, masked: masked)
                default:
                    if let frame = try lengthKnown(first: first, length: Int(length7), masked: masked) { return frame }
                }

            case .waitingForLength16(let first, let masked):
                guard gather(2) else { return nil }
                let length = Int(buffer[readIndex]) << 8 | Int(buffer[readIndex + 1])
                readIndex += 2
                if let frame = try lengthKnown(first: first, length: length, masked: masked) { return frame }

            case .waitingForLength64(let first, let masked):
                guard gather(8) else { return nil }
                var length64: UInt64 = 0
                for i in 0..<8 { length64 = length64 << 8 | UInt64(buffer[readIndex + i]) }
                readIndex += 8
                guard length64 & (1 << 63) == 0 else {
                    throw .protocolViolation(.protocolError, "64-bit payload length with the most significant bit set")
                }
                guard let length = Int(exactly: length64), length <= maxFrameSize else {
                    throw .protocolViolation(.messageTooBig, "frame of \(length64) bytes exceeds the limit of \(maxFrameSize) bytes")
                }
                if let frame = try lengthKnown(first: first, length: length, masked: masked) { return frame }

            case .waitingForMaskingKey(let first, let length):
                guard gather(4) else { return nil }
                let key = UInt32(buffer[readIndex]) << 24 | UInt32(buffer[readIndex + 1]) << 16
                    | UInt32(buffer[readIndex + 2]) << 8 | UInt32(buffer[readIndex + 3])
                readIndex += 4
                if let frame = try startPayload(first: first, length: length, maskingKey: key) { return frame }

            case .readingPayload(let first, let length, let key):
                let take = min(length - filled, buffer.count - readIndex)
                if take > 0 {
                    // Hold the storage in a local so `buffer` is not accessed while `self` is mutated.
                    let input = buffer
                    let start = readIndex
                    let result = input.withUnsafeBytes { all in
                        Result { () throws(WebSocketError) in
                            try appendPayload(UnsafeRawBufferPointer(rebasing: all[start..<start + take]), maskingKey: key)
                        }
                    }
                    try result.get()
                    readIndex += take
                }
                if let lent = input, case let fromInput = min(length - filled, lent.count - inputIndex), fromInput > 0 {
                    try appendPayload(UnsafeRawBufferPointer(rebasing: lent[inputIndex..<inputIndex + fromInput]),
                                      maskingKey: key)
                    inputIndex += fromInput
                }
                guard filled == length else { return nil }
                return try finishFrame(first: first)
            }
        }
    }

    /// The payload length is known: check it against the limit, then read the masking key or the payload.
    private mutating func lengthKnown(first: UInt8, length: Int, masked: Bool) throws(WebSocketError) -> WebSocketFrame? {
        guard length <= maxFrameSize else {
            throw .protocolViolation(.messageTooBig, "frame of \(length) bytes exceeds the limit of \(maxFrameSize) bytes")
        }
        if masked {
            state = .waitingForMaskingKey(first: first, length: length)
            return nil
        }
        return try startPayload(first: first, length: length, maskingKey: nil)
    }

    /// The header is complete. Returns the frame at once when it has no payload.
    private mutating func startPayload(first: UInt8, length: Int, maskingKey: UInt32?) throws(WebSocketError) -> WebSocketFrame? {
        if length == 0 {
            state = .idle
            try checkTextComplete(first: first)
            return makeFrame(first: first, payload: [])
        }
        // Allocate the whole payload up front (one allocation), but never trust a huge announced
        // length beyond the cap: past it the array grows as the bytes arrive (`makeRoom`).
        let count = min(length, Self.maxUpfrontReservation)
        if spare.capacity >= count {
            // Reused storage: no fresh pages for the kernel to fault in and zero.
            swap(&payload, &spare)
            spare = []
            if payload.count > count {
                payload.removeLast(payload.count - count)
            } else {
                payload.append(contentsOf: repeatElement(0, count: count - payload.count))
            }
        } else {
            payload = Self.uninitializedArray(count: count)
        }
        filled = 0
        state = .readingPayload(first: first, length: length, maskingKey: maskingKey)
        return nil
    }

    private mutating func finishFrame(first: UInt8) throws(WebSocketError) -> WebSocketFrame {
        let done = payload
        payload = []
        filled = 0
        state = .idle
        try checkTextComplete(first: first)
        return makeFrame(first: first, payload: done)
    }

    /// With `validatesUTF8`: follows message boundaries from a data or control frame's first byte.
    private mutating func trackMessage(opcode: Opcode, fin: Bool) throws(WebSocketError) {
        switch opcode {
        case .text, .binary:
            if let openMessage {
                throw .protocolViolation(.protocolError, "new \(opcode) frame while a fragmented \(openMessage) message is still open")
            }
            frameIsText = opcode == .text
            if frameIsText { utf8.reset() }
            openMessage = fin ? nil : opcode
        case .continuation:
            guard let open = openMessage else {
                throw .protocolViolation(.protocolError, "continuation frame without a message to continue")
            }
            frameIsText = open == .text
            if fin { openMessage = nil }
        case .close, .ping, .pong:
            frameIsText = false
        }
    }

    /// With `validatesUTF8`: the last frame of a text message must end on a code point boundary.
    private func checkTextComplete(first: UInt8) throws(WebSocketError) {
        guard frameIsText, first & 0x80 != 0, !utf8.isComplete else { return }
        throw .protocolViolation(.invalidFramePayloadData, "text message ends in the middle of a UTF-8 sequence")
    }

    private func makeFrame(first: UInt8, payload: [UInt8]) -> WebSocketFrame {
        // The opcode was validated when the first byte arrived.
        WebSocketFrame(fin: first & 0x80 != 0, opcode: Opcode(rawValue: first & 0x0F) ?? .binary, payload: payload)
    }

    /// Copies `bytes` to the end of the received payload, unmasking and validating them on the way.
    private mutating func appendPayload(_ bytes: UnsafeRawBufferPointer, maskingKey: UInt32?) throws(WebSocketError) {
        guard bytes.count > 0 else { return }
        makeRoom(bytes.count)
        try acceptPayload(copying: bytes, count: bytes.count, maskingKey: maskingKey)
    }

    /// Gives back a frame's payload array once nothing else holds it (e.g. after its text was copied into a
    /// `String`), so a later frame of up to its capacity reuses the storage instead of allocating.
    /// Keeps one array, of 16 KiB to 4 MiB.
    public mutating func recycle(_ payload: [UInt8]) {
        guard Self.recycledCapacities.contains(payload.capacity), payload.capacity > spare.capacity else { return }
        spare = payload
    }

    /// Receives payload bytes straight into the frame being decoded, with no copy: for a caller that
    /// reads from a socket (`append` copies from the caller's buffer instead).
    ///
    /// Calls `receive` only while a frame's payload is being read, nothing undecoded is buffered and at
    /// least `minimum` payload bytes are still missing. `receive` gets the space for the rest of the
    /// payload (never past the frame's end), fills a prefix of it and returns how many bytes it wrote
    /// (0 for none). The bytes are then unmasked and validated; call `next()` afterwards, as after
    /// `append` (it throws if they were invalid).
    /// - Returns: whether `receive` was called. O(bytes received).
    public mutating func receivePayload(minimum: Int = 1, _ receive: (UnsafeMutableRawBufferPointer) -> Int) -> Bool {
        guard failure == nil, case .readingPayload(_, let length, let key) = state, bufferedByteCount == 0,
              length - filled >= max(1, minimum) else { return false }
        makeRoom(1)
        let offset = filled
        let space = min(length, payload.count) - offset
        let count = payload.withUnsafeMutableBytes { all in
            receive(UnsafeMutableRawBufferPointer(rebasing: all[offset..<offset + space]))
        }
        precondition(count <= space, "receivePayload: the receiver claims more bytes than it was given")
        guard count > 0 else { return true }
        do {
            try acceptPayload(copying: nil, count: count, maskingKey: key)
        } catch {
            fail(error)
        }
        return true
    }

    /// Grows `payload` (only for frames longer than `maxUpfrontReservation`) so `count` more bytes fit,
    /// never past the frame's length; amortized O(1) per byte.
    private mutating func makeRoom(_ count: Int) {
        guard case .readingPayload(_, let length, _) = state, filled + count > payload.count,
              payload.count < length else { return }
        let target = min(length, max(filled + count, payload.count * 2))
        payload.append(contentsOf: repeatElement(0, count: target - payload.count))
    }

    /// Takes `count` payload bytes after the first `filled`: copied from `source`, or already written
    /// there (received in place) when it is nil. Unmasks and validates them, then counts them as received.
    /// Works in cache-sized blocks, one pass over each: the copy (if any), the unmasking and the ASCII
    /// check together; the UTF-8 validator then reads only the blocks that are not all ASCII. O(count).
    private mutating func acceptPayload(copying source: UnsafeRawBufferPointer?, count: Int,
                                        maskingKey: UInt32?) throws(WebSocketError)
    {
        let offset = filled
        filled += count
        let text = frameIsText
        if maskingKey == nil && !text {
            guard let source else { return }
            payload.withUnsafeMutableBytes { all in
                UnsafeMutableRawBufferPointer(rebasing: all[offset..<offset + count]).copyMemory(from: source)
            }
            return
        }
        let valid = payload.withUnsafeMutableBytes { all in
            var start = offset
            let end = offset + count
            while start < end {
                let block = UnsafeMutableRawBufferPointer(rebasing: all[start..<min(end, start + Self.blockSize)])
                let from = source.map { UnsafeRawBufferPointer(rebasing: $0[(start - offset)..<(start - offset + block.count)]) }
                let ascii: Bool
                switch (maskingKey, from) {
                case (let key?, let from?): ascii = Masking.copyApplyingCheckingASCII(key: key, from: from, to: block, offset: start)
                case (let key?, nil): ascii = Masking.applyCheckingASCII(key: key, to: block, offset: start)
                case (nil, let from?):
                    block.copyMemory(from: from)
                    ascii = false
                case (nil, nil): ascii = false
                }
                if text && !(ascii && utf8.isComplete) && !utf8.validate(UnsafeRawBufferPointer(block)) { return false }
                start += block.count
            }
            return true
        }
        guard valid else {
            throw .protocolViolation(.invalidFramePayloadData, "text message is not valid UTF-8")
        }
    }

    /// Payload bytes unmasked and validated together, so they are still in the cache for the second pass.
    private static let blockSize = 16 * 1024

    /// A byte array of `count` elements that the caller overwrites before anything reads them. `UInt8` is
    /// a trivial type, and the decoder hands out a payload only once all of it is received, so skipping the
    /// zero fill (a pass over the whole payload) exposes nothing.
    private static func uninitializedArray(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    /// Makes sure at least `count` undecoded bytes are in `buffer`, moving the missing ones from the lent
    /// input (a header's few bytes); false, moving nothing, when there are not enough yet.
    private mutating func gather(_ count: Int) -> Bool {
        let missing = count - (buffer.count - readIndex)
        guard missing > 0 else { return true }
        guard let lent = input, lent.count - inputIndex >= missing else { return false }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: lent[inputIndex..<inputIndex + missing]))
        inputIndex += missing
        return true
    }

    private mutating func readByte() -> UInt8? {
        guard gather(1) else { return nil }
        defer { readIndex += 1 }
        return buffer[readIndex]
    }

    /// Drops consumed bytes so the buffer never holds more than what is still undecoded (plus slack).
    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
            readIndex = 0
        } else if readIndex >= Self.compactThreshold && readIndex * 2 >= buffer.count {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
