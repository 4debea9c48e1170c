/// How far a fetch has come: objects of the scope's state received of its total (Protocol §8.25).
/// A large state arrives in parts, each reported as it comes; a state in one message is reported
/// once, whole. The scope changes only when the last part has arrived, all at once.
///
/// ```swift
/// try await session.fetch(scope) { progress in
///     print("\(progress.received) of \(progress.total)")   // drives a progress bar
/// }
/// ```
public struct FetchProgress: Sendable, Equatable {
    /// Objects received so far.
    public let received: Int
    /// Objects in the whole state.
    public let total: Int

    /// The share received, from 0 to 1.
    public var fraction: Double { total == 0 ? 1 : Double(received) / Double(total) }

    /// A progress of `received` objects of `total`.
    public init(received: Int, total: Int) {
        self.received = received
        self.total = total
    }
}
