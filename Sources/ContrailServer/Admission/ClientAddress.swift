import Foundation

/// Where a connection comes from, as the throttle and the log see it: the peer's address, or, when
/// the peer is a trusted proxy (``ServerOptions/trustedProxies``), the address its
/// `X-Forwarded-For` names. Nothing else (no other header, no query parameter) is believed.
enum ClientAddress {
    /// The address of a connection made in the process (``ContrailServer/connector()``): the
    /// app's own, never throttled.
    static let inProcess = "in-process"

    /// The most `X-Forwarded-For` entries read (from the right); a longer chain is cut there.
    static let maxForwardedEntries = 32

    /// The client's address. `peer`: the socket's peer (nil for an in-process connection).
    /// When `peer` is in `trusted`, the rightmost `X-Forwarded-For` entry (over every such header,
    /// in order) that is not itself a trusted proxy is the client; if every entry is trusted, the
    /// leftmost is; an entry that is not an IP address ends the walk at the last address believed.
    /// O(header bytes).
    static func resolve(peer: String?, headers: [(String, String)], trusted: [AddressRange]) -> String {
        guard let peer else { return inProcess }
        guard let peerAddress = IPAddress(peer) else { return peer }
        let normalized = peerAddress.description
        guard isTrusted(peerAddress, trusted) else { return normalized }
        var chain: [Substring] = []
        for (name, value) in headers where name.lowercased() == "x-forwarded-for" {
            chain += value.split(separator: ",")
        }
        var client = peerAddress
        for entry in chain.reversed().prefix(maxForwardedEntries) {
            guard let address = IPAddress(entry.trimmingCharacters(in: .whitespaces)) else { break }
            client = address
            if !isTrusted(address, trusted) { break }
        }
        return client.description
    }

    private static func isTrusted(_ address: IPAddress, _ trusted: [AddressRange]) -> Bool {
        trusted.contains { $0.contains(address) }
    }
}
