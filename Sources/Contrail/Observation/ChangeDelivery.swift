import Foundation

/// Delivers queued notifications once per turn of the main run loop: however many changes happen
/// in one turn, each queued observer fires once, after the turn. Scopes flush their change sets here too.
///
/// Tests and apps can await delivery instead of sleeping:
/// ```swift
/// shape.x = 10
/// await ChangeDelivery.main.drain()   // every queued observer has now fired
/// ```
@MainActor
public final class ChangeDelivery {
    /// The queue of the main actor, the only one Contrail uses.
    public static let main = ChangeDelivery()

    /// Every registration under its observer: releases those of observers that are gone at the
    /// end of each delivery.
    let sweep = ObserverSweep()

    private var entries: [ObserverEntry] = []
    private var flushers: [ObjectIdentifier: () -> Void] = [:]
    private var flushOrder: [ObjectIdentifier] = []
    private var isScheduled = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Tree-change marks are valid for one value of this counter (see `notifyTreeChange`). It moves
    /// at every delivery and whenever a tree observer is registered. Starts at 1, so a zeroed mark
    /// never matches.
    private(set) var turn: UInt = 1

    private init() {}

    /// Whether anything is waiting for delivery.
    package var hasPending: Bool { !entries.isEmpty || !flushOrder.isEmpty }

    func enqueue(_ entry: ObserverEntry) {
        guard !entry.isPending else { return }
        entry.isPending = true
        entries.append(entry)
        schedule()
    }

    /// Forgets which objects queued their tree observers already (a new tree observer must be reached).
    func invalidateTreeMarks() {
        turn &+= 1
        hasTreeObservers = true
    }

    /// Whether a tree observer was ever registered: until then a set has no ancestors to notify.
    private(set) var hasTreeObservers = false

    /// Runs `flush` at the end of this turn, once however often it is asked for.
    func enqueueFlush(for owner: AnyObject, _ flush: @escaping () -> Void) {
        let id = ObjectIdentifier(owner)
        if flushers.updateValue(flush, forKey: id) == nil { flushOrder.append(id) }
        schedule()
    }

    private func schedule() {
        guard !isScheduled else { return }
        isScheduled = true
        DispatchQueue.main.async {
            MainActor.assumeIsolated { self.deliverTurn() }
        }
    }

    private func deliverTurn() {
        isScheduled = false
        deliverPending()
        if !hasPending {
            let waiting = waiters
            waiters.removeAll()
            for waiter in waiting { waiter.resume() }
        }
    }

    /// Delivers what is pending now: scope flushes first, then queued observers. Work queued by the
    /// callbacks themselves is left for the next turn. Then releases the callbacks (and what they
    /// captured) of observers that are gone, including those that died in this turn's callbacks:
    /// O(observers) up to `ObserverSweep.budget` of them.
    package func deliverPending() {
        turn &+= 1
        let order = flushOrder
        let flushes = flushers
        flushOrder.removeAll()
        flushers.removeAll()
        for id in order { flushes[id]?() }
        let batch = entries
        entries.removeAll()
        for entry in batch {
            entry.isPending = false
            entry.fire()
        }
        sweep.sweep()
    }

    /// Delivers everything pending, including what the callbacks queue in turn, and returns when
    /// nothing is left. Gives other main-actor work a chance to run between rounds. Runs at least
    /// one delivery, so the callbacks of observers that are gone are released even when nothing
    /// was pending.
    public func drain() async {
        var rounds = 0
        repeat {
            deliverPending()
            rounds += 1
            await Task.yield()
        } while hasPending && rounds < 1000
    }

    /// Suspends until the next turn's delivery has happened (or returns at once if nothing is pending).
    public func nextDelivery() async {
        guard hasPending else { return }
        await withCheckedContinuation { waiters.append($0) }
    }
}
