/// The header block of a NATS message (`NATS/1.0` with an optional status, then `Key: Value` lines).
/// Keys keep their order and spelling; lookups ignore ASCII case.
public struct NATSHeaders: Sendable, Equatable {
    /// The status code of the header line (e.g. 503 for "no responders"), if any.
    public var status: Int?
    /// The text after the status code, if any.
    public var statusDescription: String = ""
    /// The fields in order.
    public private(set) var fields: [(name: String, value: String)] = []

    /// Empty headers.
    public init() {}

    /// Headers with these fields.
    public init(_ fields: [(String, String)]) {
        for (name, value) in fields { append(name, value) }
    }

    /// Well-known JetStream header names.
    public static let messageID = "Nats-Msg-Id"
    /// Well-known JetStream header names.
    public static let expectedLastSubjectSequence = "Nats-Expected-Last-Subject-Sequence"

    /// The first value for `name`, if any. O(number of fields).
    public subscript(name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Adds a field (keeps earlier fields of the same name).
    public mutating func append(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name.lowercased() == name.lowercased() }
        fields.append((name, value))
    }

    /// Same status, description and fields in the same order. O(number of fields).
    public static func == (lhs: NATSHeaders, rhs: NATSHeaders) -> Bool {
        lhs.status == rhs.status && lhs.statusDescription == rhs.statusDescription
            && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The wire form, ending with the blank line. O(size).
    /// - Throws: `invalidName` when a name or value holds a line break or a name holds ':' or space.
    public func encoded() throws(NATSError) -> [UInt8] {
        var text = "NATS/1.0"
        if let status { text += " \(status)" + (statusDescription.isEmpty ? "" : " \(statusDescription)") }
        text += "\r\n"
        for (name, value) in fields {
            // Scalars, not Characters: "\r\n" is one Character.
            guard !name.isEmpty, !name.unicodeScalars.contains(where: { $0 == ":" || $0.properties.isWhitespace }),
                  !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" })
            else { throw .invalidName("header '\(name)'") }
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Parses a header block as it arrives in an `HMSG`. O(size).
    /// - Throws: `protocolViolation` when it does not start with `NATS/1.0` or a line has no ':'.
    public init(parsing bytes: some Collection<UInt8>) throws(NATSError) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .protocolViolation("header block is not UTF-8")
        }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true)[...]
        guard let first = lines.popFirst(), first.hasPrefix("NATS/1.0") else {
            throw .protocolViolation("header block does not start with NATS/1.0")
        }
        let statusPart = first.dropFirst("NATS/1.0".count).drop { $0 == " " }
        if !statusPart.isEmpty {
            let code = statusPart.prefix { $0.isNumber }
            guard let number = Int(code) else { throw .protocolViolation("bad status line '\(first)'") }
            status = number
            statusDescription = String(statusPart.dropFirst(code.count).drop { $0 == " " })
        }
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw .protocolViolation("header line without ':'") }
            let name = line[..<colon].trimming(" \t")
            let value = line[line.index(after: colon)...].trimming(" \t")
            fields.append((name, value))
        }
    }
}

extension Substring {
    /// This text without the given characters at either end.
    func trimming(_ characters: String) -> String {
        String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}
