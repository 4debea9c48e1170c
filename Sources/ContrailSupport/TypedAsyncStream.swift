/// An asynchronous sequence whose iteration throws one error type: `AsyncThrowingStream` only
/// takes `any Error`, so `for try await` over this one lets `catch` see the concrete `Failure`.
///
/// Elements come from a producer closure called once per `next()` (``init(unfolding:)``: no
/// buffer, the consumer paces the producer) or from a ``Continuation`` (``makeStream(bufferingPolicy:)``:
/// the buffer is the policy given). After the first error or `nil`, an iterator returns `nil`.
/// A consumer whose task is cancelled sees the sequence end (`nil`), as with `AsyncStream`.
public struct TypedAsyncStream<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
    private let base: AsyncStream<Result<Element, Failure>>

    /// A sequence pulling each element from `produce` (nil ends it; a thrown error ends it after the
    /// consumer has seen the error).
    public init(unfolding produce: @escaping @Sendable () async throws(Failure) -> Element?) {
        base = AsyncStream(unfolding: {
            do throws(Failure) {
                return try await produce().map { .success($0) }
            } catch {
                return .failure(error)
            }
        })
    }

    private init(base: AsyncStream<Result<Element, Failure>>) {
        self.base = base
    }

    /// A sequence and the continuation feeding it, buffering as `bufferingPolicy` says
    /// (unbounded by default; a bounded policy drops elements past its limit, never an end).
    public static func makeStream(
        bufferingPolicy: AsyncStream<Result<Element, Failure>>.Continuation.BufferingPolicy = .unbounded
    ) -> (stream: TypedAsyncStream, continuation: Continuation) {
        let (base, continuation) = AsyncStream.makeStream(of: Result<Element, Failure>.self, bufferingPolicy: bufferingPolicy)
        return (TypedAsyncStream(base: base), Continuation(base: continuation))
    }

    /// The producer side of ``makeStream(bufferingPolicy:)``.
    public struct Continuation: Sendable {
        fileprivate let base: AsyncStream<Result<Element, Failure>>.Continuation

        /// Hands `element` to the consumer (buffered as the stream's policy says).
        public func yield(_ element: Element) {
            base.yield(.success(element))
        }

        /// Ends the sequence: the consumer gets what is buffered, then `error` (if any) or `nil`.
        /// Later calls do nothing.
        public func finish(throwing error: Failure? = nil) {
            if let error { base.yield(.failure(error)) }
            base.finish()
        }

    }

    /// Creates the iterator (one consumer at a time).
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator())
    }

    /// Iterates a ``TypedAsyncStream``.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: AsyncStream<Result<Element, Failure>>.Iterator
        private var ended = false

        fileprivate init(base: AsyncStream<Result<Element, Failure>>.Iterator) {
            self.base = base
        }

        /// The next element; nil at the end; throws the error the sequence ended with (once).
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(Failure) -> Element? {
            guard !ended, let result = await base.next(isolation: actor) else { return nil }
            switch result {
            case .success(let element):
                return element
            case .failure(let error):
                ended = true
                throw error
            }
        }

        /// The next element; nil at the end; throws the error the sequence ended with (once).
        public mutating func next() async throws(Failure) -> Element? {
            try await next(isolation: nil)
        }
    }
}
