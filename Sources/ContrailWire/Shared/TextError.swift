/// Why a text operation or an encoded text state was refused (Protocol §8.21). Every refusal is
/// typed: bytes from the network never crash a `TextDocument`.
public enum TextError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The JSON does not have the shape of a text operation list or state.
    case malformed(String)
    /// An operation names a character this document does not hold (it was sent before what it
    /// depends on, or never existed).
    case unknownCharacter(replica: String, seq: Int)
    /// An insertion skips sequence numbers of its replica (an earlier insertion is missing).
    case gap(replica: String, expected: Int, got: Int)
    /// A position or range outside the visible text.
    case outOfRange(position: Int, count: Int)

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .malformed(let reason): "malformed text operations: \(reason)"
        case .unknownCharacter(let replica, let seq): "text operation names an unknown character \(replica):\(seq)"
        case .gap(let replica, let expected, let got): "text insertion of \(replica) at \(got) skips to it from \(expected)"
        case .outOfRange(let position, let count): "text position \(position) is outside 0...\(count)"
        }
    }
}
