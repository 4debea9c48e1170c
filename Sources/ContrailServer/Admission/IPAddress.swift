import Foundation

/// An IPv4 or IPv6 address parsed from its text form, as 16 bytes (IPv4 as an IPv4-mapped IPv6
/// address, `::ffff:a.b.c.d`, so that both spellings of one IPv4 peer are the same address).
/// A pure parser: no system call, nothing resolved; anything else (names, ports, zones) is nil.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address in network byte order.
    let bytes: [UInt8]

    /// Whether this is an IPv4 address (or an IPv4-mapped IPv6 one).
    var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    /// Parses `a.b.c.d` or an IPv6 literal (with `::`, an embedded IPv4 tail, or in brackets).
    /// O(length); nil for anything else, including text longer than 64 bytes.
    init?(_ text: some StringProtocol) {
        var text = Substring(text)
        guard text.utf8.count <= 64 else { return nil }
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let v4 = Self.parseIPv4(text) {
            bytes = Array(repeating: 0, count: 10) + [0xFF, 0xFF] + v4
        } else if let v6 = Self.parseIPv6(text) {
            bytes = v6
        } else {
            return nil
        }
    }

    init(bytes: [UInt8]) {
        precondition(bytes.count == 16, "an IPAddress has 16 bytes")
        self.bytes = bytes
    }

    /// The first `bits` bits of the address, the rest zero (`bits` counts from the IPv6 form).
    func masked(toBits bits: Int) -> IPAddress {
        var copy = bytes
        for index in 0..<16 {
            let keep = min(8, max(0, bits - index * 8))
            copy[index] &= keep == 8 ? 0xFF : UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
        return IPAddress(bytes: copy)
    }

    /// `a.b.c.d` for IPv4, else the eight groups in hex (not compressed).
    var description: String {
        if isIPv4 { return bytes[12...].map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var result: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let value = UInt8(part) else { return nil }
            result.append(value)
        }
        return result
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, allowIPv4Tail: Bool) -> [UInt8]? {
            if part.isEmpty { return [] }
            var result: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (position, piece) in pieces.enumerated() {
                if allowIPv4Tail, position == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    result += v4
                    continue
                }
                guard (1...4).contains(piece.utf8.count), let value = UInt16(piece, radix: 16),
                      piece.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) })
                else { return nil }
                result += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return result
        }
        if halves.count == 1 {
            guard let all = groups(halves[0], allowIPv4Tail: true), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(halves[0], allowIPv4Tail: false), let tail = groups(halves[1], allowIPv4Tail: true),
              head.count + tail.count <= 14 else { return nil }
        return head + Array(repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
