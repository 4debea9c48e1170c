/// One explicit state machine: one enum of states, and one transition function that takes an event
/// and returns the next state with the action its owner performs, or nil when the event cannot
/// happen in that state. The event loop, a socket channel and the WebSocket close handshake are
/// each one (NIO's `SocketChannelLifecycleManager` is the model); their tests walk every
/// state × event pair of `transition`.
package protocol StateMachine {
    associatedtype State
    associatedtype Event
    associatedtype Action
    /// The current state. Only `handle` changes it.
    var state: State { get set }
    /// The next state and what to do, or nil when `event` cannot happen in `state`. Pure.
    static func transition(from state: State, on event: Event) -> (State, Action)?
}

extension StateMachine {
    /// Applies `event` and returns what to do. An illegal event traps in debug builds; in release
    /// builds it changes nothing and returns `fallback`.
    @inlinable @inline(__always)
    package mutating func handle(_ event: Event, fallback: Action) -> Action {
        guard let (next, action) = Self.transition(from: state, on: event) else {
            #if DEBUG
            preconditionFailure("\(Self.self): \(event) cannot happen while \(state)")
            #else
            return fallback
            #endif
        }
        state = next
        return action
    }
}
