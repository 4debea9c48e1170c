/// The lifecycle of an `EventLoop`, as one state machine: `running` → `stopping` → `stopped`.
///
/// `running`: work is accepted and run. `stopping`: `stop()` was called; work submitted meanwhile is
/// still accepted and run, and the loop thread exits at the first pass that finds no work. `stopped`:
/// the thread has left its loop (it then closes what is still registered); work is refused with
/// `EventLoopError.stopped` and never runs.
///
/// `transition(from:on:)` is the whole table (nil: an event that cannot happen in that state);
/// `handle(_:)` applies it and returns what the loop must do. Illegal transitions trap in debug
/// builds and change nothing in release builds. Touched under the loop's `pending` lock.
struct EventLoopLifecycle: StateMachine, Sendable {
    enum State: Equatable, Sendable, CaseIterable {
        case running
        case stopping
        case stopped
    }

    enum Event: Equatable, Sendable, CaseIterable {
        /// Some thread hands the loop work (`execute`, `submit`).
        case workSubmitted
        /// Some thread calls `stop()`.
        case stopRequested
        /// The loop thread took the queued work and found it empty.
        case drainedEmpty
        /// The loop thread took the queued work and found some.
        case drainedWork
    }

    enum Action: Equatable, Sendable {
        /// Nothing to do.
        case none
        /// Queue the work (and wake the loop if it is not already woken).
        case accept
        /// Do not queue the work: the loop has stopped.
        case refuse
        /// Wake the loop so that it notices the stop.
        case wake
        /// Run the drained work and go on looping.
        case keepRunning
        /// Leave the loop: close what is still registered and resume `stop()`'s waiters.
        case exit
    }

    var state = State.running

    /// The table: the next state and the action, or nil for an event that cannot happen in `state`.
    static func transition(from state: State, on event: Event) -> (State, Action)? {
        switch (state, event) {
        case (.running, .workSubmitted), (.stopping, .workSubmitted): (state, .accept)
        case (.stopped, .workSubmitted): (.stopped, .refuse)

        case (.running, .stopRequested): (.stopping, .wake)
        case (.stopping, .stopRequested), (.stopped, .stopRequested): (state, .none)

        case (.running, .drainedEmpty), (.running, .drainedWork), (.stopping, .drainedWork): (state, .keepRunning)
        case (.stopping, .drainedEmpty): (.stopped, .exit)

        // The loop thread has left its loop: it drains nothing more.
        case (.stopped, .drainedEmpty), (.stopped, .drainedWork): nil
        }
    }

    /// Applies `event` and returns what to do (see `StateMachine.handle`); nothing, for an illegal
    /// event in a release build.
    @inline(__always)
    mutating func handle(_ event: Event) -> Action { handle(event, fallback: .none) }
}
