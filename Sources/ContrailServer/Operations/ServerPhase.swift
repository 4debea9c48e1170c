import ContrailSupport

/// Where a server stands, as `/readyz` reports it: starting (made, not listening yet), serving,
/// draining (SIGTERM: sessions told to reconnect elsewhere, logs being written out), stopped.
/// Only a serving server is ready; the phases only move forward.
///
/// ```
///  starting ──started──▶ serving ──drain──▶ draining ──stop──▶ stopped
///      │                     └──────────────stop─────────────────▲
///      └──────────drain / stop───────────────────────────────────┘ (drain: via draining)
/// ```
struct ServerPhase: StateMachine, Equatable, Sendable {
    enum State: String, Equatable, Sendable {
        case starting, serving, draining, stopped
    }

    enum Event: Equatable, Sendable {
        /// ``ContrailServer/start()`` bound its listener.
        case started
        /// ``ContrailServer/drain(timeout:)`` began.
        case drain
        /// ``ContrailServer/stop()`` (or the end of a drain).
        case stop
    }

    enum Action: Equatable, Sendable {
        /// The event changed the phase: the caller does what it means.
        case proceed
        /// Already there or past it (a second drain, a start after a stop): nothing to do.
        case ignore
    }

    var state: State = .starting

    /// Every pair is legal: the phases only move forward, and a late or repeated event is ignored.
    static func transition(from state: State, on event: Event) -> (State, Action)? {
        switch (state, event) {
        case (.starting, .started): (.serving, .proceed)
        case (.serving, .started), (.draining, .started), (.stopped, .started): (state, .ignore)
        case (.starting, .drain), (.serving, .drain): (.draining, .proceed)
        case (.draining, .drain), (.stopped, .drain): (state, .ignore)
        case (.stopped, .stop): (.stopped, .ignore)
        case (_, .stop): (.stopped, .proceed)
        }
    }
}
