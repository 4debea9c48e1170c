/// The identity of one character of a `TextDocument`: the replica that typed it and its sequence
/// number among that replica's insertions. It never changes, wherever the character moves.
public struct TextID: Hashable, Sendable, CustomStringConvertible {
    /// The replica that inserted the character (1–64 characters of `[A-Za-z0-9_-]`).
    public var replica: String
    /// The character's number among its replica's insertions, from 0.
    public var seq: Int

    /// An identity.
    public init(replica: String, seq: Int) {
        self.replica = replica
        self.seq = seq
    }

    /// `replica:seq`.
    public var description: String { "\(replica):\(seq)" }

    /// Whether `name` is a valid replica name: 1–64 ASCII letters, digits, `_` or `-` (so Swift and
    /// JavaScript order names alike, byte by byte).
    public static func isValidReplica(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...64).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x2D
        }
    }
}
