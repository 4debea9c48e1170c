import ContrailWire
import Foundation

/// The rule for scope names a server accepts: 1 to ``maxBytes`` bytes of UTF-8, no control
/// characters. Checked before a fetch reaches the app's hook or any scope.
enum ScopeName {
    /// The longest name, in UTF-8 bytes.
    static let maxBytes = 200

    /// Why `name` is not acceptable, as a fetch error; nil when it is. O(length).
    static func problem(with name: String) -> WireErrorBody? {
        let bytes = name.utf8.count
        if bytes == 0 { return .invalidScopeName("the name is empty") }
        if bytes > maxBytes { return .invalidScopeName("\(bytes) bytes of UTF-8, over the limit of \(maxBytes)") }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || (0x80..<0xA0).contains($0.value) }) {
            return .invalidScopeName("it contains a control character")
        }
        return nil
    }

    /// The root UUID of a scope that does not exist yet (``ScopeCreation/write``), and of the scope
    /// its first write creates: derived from the name (SHA-256, in the layout of a name-based UUID),
    /// so every fetch before the first write, across sessions, expiries and restarts, sees the same
    /// root, and edits made on it apply once the scope exists.
    static func unwrittenRootUUID(of name: String) -> UUID {
        var bytes = Array(SHA256.hash(Array(("contrail-scope-root:" + name).utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // version 5 layout (name-based)
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
