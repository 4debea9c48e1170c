// Placeholder: replaced by the full JSON implementation on the wire branch.
public enum JSON: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])
}
