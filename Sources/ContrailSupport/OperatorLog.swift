/// Where a server reports a condition worth an operator's attention, one line at a time.
public enum OperatorLog {
    /// Writes `line` and a newline to standard error in one `write(2)`.
    public static let standardError: @Sendable (String) -> Void = { line in
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
