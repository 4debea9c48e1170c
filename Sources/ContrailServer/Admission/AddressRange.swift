/// A range of IP addresses in CIDR notation (`10.0.0.0/8`, `192.0.2.7`, `2001:db8::/32`, `::1`):
/// the addresses whose first `prefixLength` bits match. A bare address is a range of one.
///
/// ```swift
/// var options = ServerOptions()
/// options.trustedProxies = [AddressRange("10.0.0.0/8")!, AddressRange("::1")!]
/// ```
public struct AddressRange: Hashable, Sendable, CustomStringConvertible {
    private let network: IPAddress
    /// The prefix length counted on the IPv6 form (an IPv4 `/n` is `/96+n`).
    private let bits: Int
    /// The range as given (normalised text).
    public let description: String

    /// Parses `ADDRESS` or `ADDRESS/PREFIX` (IPv4 prefixes 0...32, IPv6 0...128); nil when it is
    /// neither. Host bits set in `ADDRESS` are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let limit = address.isIPv4 && !parts[0].contains(":") ? 32 : 128
        var length = limit
        if parts.count == 2 {
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let parsed = Int(parts[1]), parsed <= limit else { return nil }
            length = parsed
        }
        bits = limit == 32 ? 96 + length : length
        network = address.masked(toBits: bits)
        description = "\(network)/\(length)"
    }

    /// Whether `address` lies in the range. O(1).
    func contains(_ address: IPAddress) -> Bool {
        address.masked(toBits: bits) == network
    }
}
