/// An incremental parser of what a NATS server sends: feed it bytes as they arrive, take whole
/// operations out. Control lines are bounded by `maxControlLine`, payloads by `maxPayload`.
public struct NATSParser: Sendable {
    /// One server operation.
    public enum Operation: Sendable, Equatable {
        /// `INFO {json}`: the raw JSON bytes.
        case info([UInt8])
        /// `MSG` or `HMSG` for subscription `sid`.
        case message(sid: UInt64, NATSMessage)
        /// `PING`: answer with `PONG`.
        case ping
        /// `PONG`: answers our `PING`.
        case pong
        /// `+OK` (verbose mode only).
        case ok
        /// `-ERR 'message'`.
        case error(String)
    }

    /// The longest control line accepted (NATS's default is 4096).
    public let maxControlLine: Int
    /// The largest payload (headers included) accepted.
    public var maxPayload: Int
    private var buffer: [UInt8] = []
    private var head = 0

    /// Creates an empty parser with these limits.
    public init(maxControlLine: Int = 4096, maxPayload: Int = 64 << 20) {
        self.maxControlLine = maxControlLine
        self.maxPayload = maxPayload
    }

    /// Adds received bytes. O(count) amortized.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        if head > 0 && head * 2 >= buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received and not yet parsed.
    public var bufferedByteCount: Int { buffer.count - head }

    /// The next whole operation, or nil if more bytes are needed. O(operation size).
    /// - Throws: `protocolViolation` for an unknown or malformed operation or a limit exceeded.
    public mutating func next() throws(NATSError) -> Operation? {
        guard let lineEnd = findCRLF() else {
            if buffer.count - head > maxControlLine { throw .protocolViolation("control line longer than \(maxControlLine) bytes") }
            return nil
        }
        if lineEnd - head > maxControlLine { throw .protocolViolation("control line longer than \(maxControlLine) bytes") }
        let line = buffer[head..<lineEnd]
        let words = line.split { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let verb = words.first.map({ String(decoding: $0, as: UTF8.self).uppercased() }) else {
            throw .protocolViolation("empty control line")
        }
        switch verb {
        case "PING": head = lineEnd + 2; return .ping
        case "PONG": head = lineEnd + 2; return .pong
        case "+OK": head = lineEnd + 2; return .ok
        case "-ERR":
            let text = String(decoding: line.dropFirst(4), as: UTF8.self)[...].trimming(" '")
            head = lineEnd + 2
            return .error(text)
        case "INFO":
            let json = Array(line.dropFirst(4).drop { $0 == UInt8(ascii: " ") })
            head = lineEnd + 2
            return .info(json)
        case "MSG", "HMSG":
            return try message(words: words.dropFirst().map { String(decoding: $0, as: UTF8.self) },
                               hasHeaders: verb == "HMSG", lineEnd: lineEnd)
        default:
            throw .protocolViolation("unknown operation '\(verb.prefix(16))'")
        }
    }

    private mutating func message(words: [String], hasHeaders: Bool, lineEnd: Int) throws(NATSError) -> Operation? {
        // MSG <subject> <sid> [reply] <size>; HMSG <subject> <sid> [reply] <header size> <total size>
        let sizeCount = hasHeaders ? 2 : 1
        guard words.count == 2 + sizeCount || words.count == 3 + sizeCount,
              let sid = UInt64(words[1]) else {
            throw .protocolViolation("malformed \(hasHeaders ? "HMSG" : "MSG") line")
        }
        let sizes = words.suffix(sizeCount).compactMap { Int($0) }
        guard sizes.count == sizeCount, let total = sizes.last, total >= 0 else {
            throw .protocolViolation("malformed message size")
        }
        let headerSize = hasHeaders ? sizes[0] : 0
        guard headerSize <= total else { throw .protocolViolation("header size larger than total size") }
        guard total <= maxPayload else { throw .protocolViolation("message of \(total) bytes exceeds \(maxPayload)") }
        let start = lineEnd + 2
        guard buffer.count >= start + total + 2 else { return nil }
        guard buffer[start + total] == UInt8(ascii: "\r"), buffer[start + total + 1] == UInt8(ascii: "\n") else {
            throw .protocolViolation("message payload not followed by CRLF")
        }
        let headers = hasHeaders ? try NATSHeaders(parsing: buffer[start..<(start + headerSize)]) : nil
        let payload = Array(buffer[(start + headerSize)..<(start + total)])
        head = start + total + 2
        let reply = words.count == 3 + sizeCount ? words[2] : nil
        return .message(sid: sid, NATSMessage(subject: words[0], replyTo: reply, headers: headers, payload: payload))
    }

    private func findCRLF() -> Int? {
        var index = head
        while index + 1 < buffer.count {
            if buffer[index] == UInt8(ascii: "\r") && buffer[index + 1] == UInt8(ascii: "\n") { return index }
            index += 1
        }
        return nil
    }
}

