/// The changes of a live query as an `AsyncSequence` (`LiveQuery.changes()`): one element per
/// delivery that changed the contents, or one for several when the consumer fell behind. Iterate it
/// on the main actor, where the query's contents match each element as it arrives.
///
/// ```swift
/// for await changes in query.changes() {
///     apply(changes)            // the query already holds the contents after them
/// }
/// ```
public struct QueryChangeSequence: AsyncSequence, Sendable {
    /// One set of changes.
    public typealias Element = QueryChanges
    /// The sequence never throws.
    public typealias Failure = Never

    let buffer: QueryChangeBuffer

    /// Reads the changes of one consumer.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let buffer: QueryChangeBuffer

        /// The next changes, or nil when the query is gone or the task is cancelled.
        public mutating func next() async -> QueryChanges? {
            await buffer.next()
        }

        /// The next changes, read without leaving the caller's actor when that is the main actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> QueryChanges? {
            await buffer.next()
        }
    }

    /// An iterator over the changes. Make one per consumer: they share the buffer.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(buffer: buffer)
    }
}
