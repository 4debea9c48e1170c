/// The lifecycle of a `Channel`, as one state machine.
///
/// ```
/// unregistered ──registered──▶ active(input, output) ──close──▶ closed
///                                 │  input:  reading ⇄ paused → ended (EOF)
///                                 │  output: open → sealed → shutdownWhenFlushed → shutDown
///                                 │          (any of them) → closeWhenFlushed
///                                 └─readFailed / writeFailed──▶ failed(errno) ──close──▶ closed
/// ```
///
/// The two directions of an active channel move independently (a peer may end its side while we
/// still write; we may seal ours while still reading), so `active` carries one small state per
/// direction. Queued bytes and waiting writers are data beside the state, not part of it.
///
/// `transition(from:on:)` is the whole table (nil: an event that cannot happen in that state);
/// `handle(_:)` applies it and returns the action the channel performs. Illegal transitions trap in
/// debug builds and change nothing in release builds. Touched under the channel's lock; the write
/// path's transitions are a switch on two bytes, with no allocation.
struct ChannelLifecycle: StateMachine, Equatable, Sendable {
    /// The reading direction of an active channel.
    enum Input: Equatable, Sendable, CaseIterable {
        /// The descriptor is watched for bytes.
        case reading
        /// Reading is paused (inbound back-pressure).
        case paused
        /// The peer closed its side: nothing more will be read.
        case ended
    }

    /// The writing direction of an active channel.
    enum Output: Equatable, Sendable, CaseIterable {
        /// Writes are accepted.
        case open
        /// The last write is queued (e.g. a WebSocket close frame): later writes are refused.
        case sealed
        /// Sealed; FIN goes out once the queue is flushed.
        case shutdownWhenFlushed
        /// Sealed and FIN sent.
        case shutDown
        /// Sealed; the descriptor closes once the queue is flushed.
        case closeWhenFlushed
    }

    enum State: Equatable, Sendable {
        /// Made, not yet registered with its loop.
        case unregistered
        /// Registered: reading and writing as the two directions say.
        case active(Input, Output)
        /// The socket failed (errno): everything queued is dropped, writes are refused, and the
        /// channel closes next.
        case failed(errno: Int32)
        /// The descriptor is closed; nothing happens any more.
        case closed

        /// Every state, for tests that walk the table.
        static var all: [State] {
            var all: [State] = [.unregistered, .failed(errno: 32), .closed]
            for input in Input.allCases {
                for output in Output.allCases { all.append(.active(input, output)) }
            }
            return all
        }
    }

    enum Event: Equatable, Sendable {
        /// The loop took the descriptor.
        case registered
        /// A writer queues bytes; `seal` makes them the last.
        case write(seal: Bool)
        /// Inbound back-pressure starts (false) or ends (true) reading.
        case setReading(Bool)
        /// A read returned end of stream.
        case inputEnded
        /// A read failed.
        case readFailed(errno: Int32)
        /// A write failed.
        case writeFailed(errno: Int32)
        /// A flush (of a write or of write readiness) left the queue empty or not.
        case flushed(queueEmpty: Bool)
        /// Someone asks for FIN once the queue is flushed.
        case shutdownOutputWhenFlushed(queueEmpty: Bool)
        /// Someone asks to close once the queue is flushed.
        case closeWhenFlushed(queueEmpty: Bool)
        /// Close now (also when the loop stops).
        case close

        /// One of each event, for tests that walk the table.
        static var all: [Event] {
            [.registered, .write(seal: false), .write(seal: true), .setReading(false), .setReading(true),
             .inputEnded, .readFailed(errno: 104), .writeFailed(errno: 32), .flushed(queueEmpty: false),
             .flushed(queueEmpty: true), .shutdownOutputWhenFlushed(queueEmpty: false),
             .shutdownOutputWhenFlushed(queueEmpty: true), .closeWhenFlushed(queueEmpty: false),
             .closeWhenFlushed(queueEmpty: true), .close]
        }
    }

    enum Action: Equatable, Sendable {
        /// Nothing to do.
        case none
        /// Queue the bytes and flush.
        case acceptWrite
        /// Refuse the write: the output is sealed.
        case refuseSealed
        /// Refuse the write: the channel failed or is closed.
        case refuseClosed
        /// Watch the descriptor for what the new state wants (reading on or off).
        case updateInterest
        /// Stop watching for reads and tell the delegate the input ended (errno nil) or failed.
        case reportEnd(errno: Int32?)
        /// Drop everything queued, resume waiting writers, tell the delegate, and close.
        case fail(errno: Int32)
        /// Send FIN now.
        case shutdownOutput
        /// Close the descriptor (through the loop: the caller may be any thread).
        case closeSoon
        /// Deregister, close the descriptor, resume waiting writers and tell the delegate.
        case tearDown
    }

    var state = State.unregistered

    /// Whether the descriptor is watched for bytes.
    var isReading: Bool { if case .active(.reading, _) = state { true } else { false } }
    /// Whether the peer has closed its side.
    var inputEnded: Bool { if case .active(.ended, _) = state { true } else { false } }
    /// Whether the channel failed or is closed (writes are refused, writers need not wait).
    var isDone: Bool {
        switch state {
        case .failed, .closed: true
        case .unregistered, .active: false
        }
    }
    /// Whether the descriptor is closed.
    var isClosed: Bool { state == .closed }

    /// The table: the next state and the action, or nil for an event that cannot happen in `state`.
    static func transition(from state: State, on event: Event) -> (State, Action)? {
        switch (state, event) {
        // Registration.
        case (.unregistered, .registered): return (.active(.reading, .open), .none)
        case (_, .registered): return nil

        // Writing.
        case (.active(let input, .open), .write(let seal)): return (.active(input, seal ? .sealed : .open), .acceptWrite)
        case (.active, .write): return (state, .refuseSealed)
        case (.failed, .write), (.closed, .write): return (state, .refuseClosed)
        case (.unregistered, .write): return nil

        // Inbound back-pressure.
        case (.active(.reading, let output), .setReading(false)): return (.active(.paused, output), .updateInterest)
        case (.active(.paused, let output), .setReading(true)): return (.active(.reading, output), .updateInterest)
        case (.active, .setReading), (.unregistered, .setReading), (.failed, .setReading), (.closed, .setReading):
            return (state, .none)

        // End of input. A hang-up can report it again once ended: it is told once.
        case (.active(.reading, let output), .inputEnded), (.active(.paused, let output), .inputEnded):
            return (.active(.ended, output), .reportEnd(errno: nil))
        case (.active(.ended, _), .inputEnded), (.failed, .inputEnded), (.closed, .inputEnded): return (state, .none)
        case (.unregistered, .inputEnded): return nil

        case (.active, .readFailed(let code)): return (.failed(errno: code), .reportEnd(errno: code))
        case (.failed, .readFailed), (.closed, .readFailed): return (state, .none)
        case (.unregistered, .readFailed): return nil

        case (.active, .writeFailed(let code)): return (.failed(errno: code), .fail(errno: code))
        case (.failed, .writeFailed), (.closed, .writeFailed): return (state, .none)
        case (.unregistered, .writeFailed): return nil

        // A flush ended.
        case (.active(let input, .shutdownWhenFlushed), .flushed(queueEmpty: true)): return (.active(input, .shutDown), .shutdownOutput)
        case (.active(_, .closeWhenFlushed), .flushed(queueEmpty: true)): return (state, .closeSoon)
        case (.active, .flushed): return (state, .none)
        case (.failed, .flushed): return (state, .closeSoon)
        case (.closed, .flushed): return (state, .none)
        case (.unregistered, .flushed): return nil

        // FIN once flushed.
        case (.active(let input, .open), .shutdownOutputWhenFlushed(let empty)),
             (.active(let input, .sealed), .shutdownOutputWhenFlushed(let empty)):
            return empty ? (.active(input, .shutDown), .shutdownOutput) : (.active(input, .shutdownWhenFlushed), .none)
        case (.active(let input, .shutdownWhenFlushed), .shutdownOutputWhenFlushed(queueEmpty: true)):
            return (.active(input, .shutDown), .shutdownOutput)
        case (.active, .shutdownOutputWhenFlushed), (.failed, .shutdownOutputWhenFlushed), (.closed, .shutdownOutputWhenFlushed):
            return (state, .none)
        case (.unregistered, .shutdownOutputWhenFlushed): return nil

        // Close once flushed.
        case (.active(let input, _), .closeWhenFlushed(let empty)): return (.active(input, .closeWhenFlushed), empty ? .closeSoon : .none)
        case (.failed, .closeWhenFlushed): return (state, .closeSoon)
        case (.closed, .closeWhenFlushed): return (state, .none)
        case (.unregistered, .closeWhenFlushed): return nil

        // Close now.
        case (.unregistered, .close), (.active, .close), (.failed, .close): return (.closed, .tearDown)
        case (.closed, .close): return (.closed, .none)
        }
    }

    /// Applies `event` and returns what to do (see `StateMachine.handle`); nothing, for an illegal
    /// event in a release build.
    @inline(__always)
    mutating func handle(_ event: Event) -> Action { handle(event, fallback: .none) }
}
