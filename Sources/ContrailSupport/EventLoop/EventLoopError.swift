/// Why an `EventLoop` did not take work.
public enum EventLoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The loop has stopped (`EventLoop.stop()`): the work was refused and never runs.
    case stopped

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .stopped: "the event loop has stopped"
        }
    }
}

extension NetworkError {
    /// The network error for work an event loop refused: `.closed("the event loop has stopped")`.
    package init(_ error: EventLoopError) {
        self = .closed(error.description)
    }
}
