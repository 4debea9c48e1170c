/// A test failed for a reason its message says: a child process that did not start, a bounded
/// wait that ran out, an answer that did not come.
///
/// ```swift
/// guard let port else { throw TestFailure("the server did not print its port") }
/// ```
public struct TestFailure: Error, CustomStringConvertible, Equatable {
    /// What went wrong.
    public let description: String

    /// A failure saying `description`.
    public init(_ description: String) {
        self.description = description
    }

    /// A failure saying `description` (the memberwise spelling).
    public init(description: String) {
        self.description = description
    }
}
