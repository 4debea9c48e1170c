import Testing
@testable import ContrailSupport

@Suite("Channel lifecycle")
struct ChannelLifecycleTests {
    typealias L = ChannelLifecycle

    private func step(_ state: L.State, _ event: L.Event) -> (L.State, L.Action)? {
        L.transition(from: state, on: event)
    }

    private func expect(_ state: L.State, _ event: L.Event, _ next: L.State, _ action: L.Action,
                        sourceLocation: SourceLocation = #_sourceLocation)
    {
        let got = step(state, event)
        #expect(got?.0 == next && got?.1 == action, "\(state) on \(event): got \(String(describing: got))",
                sourceLocation: sourceLocation)
    }

    @Test("illegal transitions are exactly: anything but close and back-pressure before registration, and registering twice")
    func illegalTransitions() {
        for state in L.State.all {
            for event in L.Event.all {
                let illegal: Bool
                switch (state, event) {
                case (.unregistered, .registered), (.unregistered, .close), (.unregistered, .setReading): illegal = false
                case (.unregistered, _): illegal = true
                case (_, .registered): illegal = true
                default: illegal = false
                }
                #expect((step(state, event) == nil) == illegal, "\(state) on \(event)")
            }
        }
    }

    @Test("registration and close")
    func registrationAndClose() {
        expect(.unregistered, .registered, .active(.reading, .open), .none)
        expect(.unregistered, .close, .closed, .tearDown)
        expect(.unregistered, .setReading(false), .unregistered, .none)
        for state in L.State.all where state != .closed && state != .unregistered {
            expect(state, .close, .closed, .tearDown)
        }
        // Closed is final: every legal event leaves it closed and does nothing (writes are refused).
        for event in L.Event.all where event != .registered {
            guard let (next, action) = step(.closed, event) else {
                Issue.record("closed on \(event) is illegal")
                continue
            }
            #expect(next == .closed)
            if case .write = event { #expect(action == .refuseClosed) } else { #expect(action == .none) }
        }
    }

    @Test("writes: accepted while the output is open, sealing makes the next one refused")
    func writes() {
        for input in L.Input.allCases {
            expect(.active(input, .open), .write(seal: false), .active(input, .open), .acceptWrite)
            expect(.active(input, .open), .write(seal: true), .active(input, .sealed), .acceptWrite)
            for output in L.Output.allCases where output != .open {
                expect(.active(input, output), .write(seal: false), .active(input, output), .refuseSealed)
            }
        }
        expect(.failed(errno: 32), .write(seal: false), .failed(errno: 32), .refuseClosed)
        expect(.closed, .write(seal: true), .closed, .refuseClosed)
    }

    @Test("reading: pause and resume, end of input once, failure")
    func reading() {
        expect(.active(.reading, .sealed), .setReading(false), .active(.paused, .sealed), .updateInterest)
        expect(.active(.paused, .open), .setReading(true), .active(.reading, .open), .updateInterest)
        expect(.active(.reading, .open), .setReading(true), .active(.reading, .open), .none)
        expect(.active(.paused, .open), .setReading(false), .active(.paused, .open), .none)
        expect(.active(.ended, .open), .setReading(true), .active(.ended, .open), .none)
        expect(.failed(errno: 5), .setReading(true), .failed(errno: 5), .none)
        expect(.active(.reading, .shutDown), .inputEnded, .active(.ended, .shutDown), .reportEnd(errno: nil))
        expect(.active(.paused, .open), .inputEnded, .active(.ended, .open), .reportEnd(errno: nil))
        expect(.active(.ended, .open), .inputEnded, .active(.ended, .open), .none)
        expect(.failed(errno: 5), .inputEnded, .failed(errno: 5), .none)
        expect(.active(.reading, .open), .readFailed(errno: 104), .failed(errno: 104), .reportEnd(errno: 104))
        expect(.failed(errno: 5), .readFailed(errno: 104), .failed(errno: 5), .none)
    }

    @Test("write failure drops the queue and closes")
    func writeFailure() {
        for input in L.Input.allCases {
            for output in L.Output.allCases {
                expect(.active(input, output), .writeFailed(errno: 32), .failed(errno: 32), .fail(errno: 32))
            }
        }
        expect(.failed(errno: 104), .writeFailed(errno: 32), .failed(errno: 104), .none)
        expect(.failed(errno: 104), .flushed(queueEmpty: true), .failed(errno: 104), .closeSoon)
        expect(.failed(errno: 104), .closeWhenFlushed(queueEmpty: false), .failed(errno: 104), .closeSoon)
        expect(.failed(errno: 104), .shutdownOutputWhenFlushed(queueEmpty: true), .failed(errno: 104), .none)
    }

    @Test("FIN once flushed: now when the queue is empty, else after the flush that empties it, once")
    func shutdownWhenFlushed() {
        expect(.active(.reading, .open), .shutdownOutputWhenFlushed(queueEmpty: true), .active(.reading, .shutDown), .shutdownOutput)
        expect(.active(.reading, .sealed), .shutdownOutputWhenFlushed(queueEmpty: false),
               .active(.reading, .shutdownWhenFlushed), .none)
        expect(.active(.ended, .shutdownWhenFlushed), .flushed(queueEmpty: false), .active(.ended, .shutdownWhenFlushed), .none)
        expect(.active(.ended, .shutdownWhenFlushed), .flushed(queueEmpty: true), .active(.ended, .shutDown), .shutdownOutput)
        expect(.active(.reading, .shutdownWhenFlushed), .shutdownOutputWhenFlushed(queueEmpty: true),
               .active(.reading, .shutDown), .shutdownOutput)
        expect(.active(.reading, .shutdownWhenFlushed), .shutdownOutputWhenFlushed(queueEmpty: false),
               .active(.reading, .shutdownWhenFlushed), .none)
        expect(.active(.reading, .shutDown), .shutdownOutputWhenFlushed(queueEmpty: true), .active(.reading, .shutDown), .none)
        expect(.active(.reading, .shutDown), .flushed(queueEmpty: true), .active(.reading, .shutDown), .none)
        expect(.active(.reading, .closeWhenFlushed), .shutdownOutputWhenFlushed(queueEmpty: true),
               .active(.reading, .closeWhenFlushed), .none)
    }

    @Test("close once flushed: now when the queue is empty, else after the flush that empties it")
    func closeWhenFlushed() {
        for output in L.Output.allCases {
            expect(.active(.paused, output), .closeWhenFlushed(queueEmpty: true), .active(.paused, .closeWhenFlushed), .closeSoon)
            expect(.active(.paused, output), .closeWhenFlushed(queueEmpty: false), .active(.paused, .closeWhenFlushed), .none)
        }
        expect(.active(.reading, .closeWhenFlushed), .flushed(queueEmpty: false), .active(.reading, .closeWhenFlushed), .none)
        expect(.active(.reading, .closeWhenFlushed), .flushed(queueEmpty: true), .active(.reading, .closeWhenFlushed), .closeSoon)
        expect(.active(.reading, .open), .flushed(queueEmpty: true), .active(.reading, .open), .none)
        expect(.active(.reading, .sealed), .flushed(queueEmpty: true), .active(.reading, .sealed), .none)
    }

    @Test("queries follow the state")
    func queries() {
        var lifecycle = L()
        #expect(!lifecycle.isReading && !lifecycle.isDone && !lifecycle.isClosed)
        #expect(lifecycle.handle(.registered) == .none)
        #expect(lifecycle.isReading && !lifecycle.inputEnded)
        #expect(lifecycle.handle(.inputEnded) == .reportEnd(errno: nil))
        #expect(!lifecycle.isReading && lifecycle.inputEnded && !lifecycle.isDone)
        #expect(lifecycle.handle(.writeFailed(errno: 32)) == .fail(errno: 32))
        #expect(lifecycle.isDone && !lifecycle.isClosed)
        #expect(lifecycle.handle(.close) == .tearDown)
        #expect(lifecycle.isDone && lifecycle.isClosed)
        #expect(lifecycle.handle(.close) == .none)
    }
}
