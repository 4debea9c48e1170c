import Foundation
import Synchronization

/// A fixed set of event loops, one thread each, over which connections are spread round-robin: servers
/// put each accepted connection on the next loop, clients open theirs on the next loop. By default one
/// loop per core (`EventLoopGroup.shared`), shared by every server and client in the process.
///
/// ```swift
/// let group = try EventLoopGroup(count: 4)
/// var options = WebSocketOptions()
/// options.eventLoopGroup = group
/// ```
public final class EventLoopGroup: Sendable {
    /// The loops, in the order `next()` hands them out.
    public let loops: [EventLoop]
    private let cursor = Atomic<Int>(0)

    /// The group used when options name none: `CONTRAIL_EVENT_LOOPS` loops if that environment variable
    /// holds a positive number, else one per active core. Started on first use; never stopped.
    public static let shared: EventLoopGroup = {
        // If the system cannot make a poller there is nothing to recover: fall back to the one loop
        // that `EventLoop.fallback` always gives.
        (try? EventLoopGroup(count: defaultCount, name: "contrail-loop")) ?? EventLoopGroup(loops: [.fallback])
    }()

    /// The number of loops of ``shared`` (and of a server's own): `CONTRAIL_EVENT_LOOPS` if that
    /// environment variable holds a positive number, else one per active core.
    package static var defaultCount: Int {
        let configured = ProcessInfo.processInfo.environment["CONTRAIL_EVENT_LOOPS"].flatMap { Int($0) }
        return max(1, configured ?? ProcessInfo.processInfo.activeProcessorCount)
    }

    /// Starts `count` loops (at least one) on threads named `name-0`, `name-1`, ...
    /// - Parameter clock: the clock every loop's timers follow (see `EventLoop.init(name:backend:clock:)`).
    /// - Throws: `io` when a poller cannot be created (the loops already started are stopped).
    public init(count: Int, name: String = "contrail-loop", backend: EventLoop.Backend? = nil,
                clock: any Clock<Duration> = ContinuousClock()) throws(NetworkError)
    {
        var loops: [EventLoop] = []
        for index in 0..<max(1, count) {
            do {
                loops.append(try EventLoop(name: "\(name)-\(index)", backend: backend, clock: clock))
            } catch {
                let started = loops
                Task { for loop in started { await loop.stop() } }
                throw error
            }
        }
        self.loops = loops
    }

    private init(loops: [EventLoop]) {
        self.loops = loops
    }

    /// The loop for the next connection (round-robin). Any thread; O(1).
    public func next() -> EventLoop {
        let index = cursor.add(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// Stops every loop (see `EventLoop.stop()`); never call it on `shared`.
    public func stop() async {
        for loop in loops { await loop.stop() }
    }
}
