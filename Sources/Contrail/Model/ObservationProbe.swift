import Observation
import Synchronization

/// Tells a `@Property` getter whether it runs under observation tracking (`withObservationTracking`,
/// a SwiftUI view's `body`), so that only objects read that way get an `ObservationRegistrar`.
///
/// Observation keeps "tracking is on" in a thread-local it does not export. What it does, through
/// public API, is add every key path read under tracking to the tracking's access list, a set,
/// which hashes the key path and with it the key path's subscript argument. So the probe reads a
/// key path whose argument is a `ProbeMarker` on a registrar of its own and counts the marker's
/// hashes: one more means tracking is on. Outside tracking that read is the thread-local load an
/// `@Observable` getter pays too.
///
/// A tracking that saw a model read is also registered with the probe's registrar. One that fires
/// is cancelled there too; one that never fires would keep its `onChange` closure there for as long
/// as that registrar lives, so the probe replaces its registrar every `rotation` detections, which
/// releases them (trackings in flight are unaffected: their access lists hold what they need).
@MainActor @usableFromInline
final class ObservationProbe: Observable {
    /// The one probe.
    @usableFromInline nonisolated static let shared = ObservationProbe()
    /// Detections between two replacements of the probe's registrar.
    static let rotation = 256

    /// How many times a `ProbeMarker` was hashed. Atomic because a tracking may be cancelled (and
    /// its key paths hashed) on another thread; such a hash at worst sends one read down the slow
    /// path, which registers it with its object's registrar: a spare registration, never a lost one.
    nonisolated let hashes = Atomic<Int>(0)
    private let keyPath: KeyPath<ObservationProbe, Int> = \ObservationProbe.[probe: ProbeMarker()]
    /// Main actor only, never held across a call that reaches it again: no dynamic exclusivity check.
    @exclusivity(unchecked) private var box = ObservationBox()
    /// Detections since the last replacement of `box` (internal for tests).
    @exclusivity(unchecked) var detections = 0

    private nonisolated init() {}

    /// The probe's key path reads this subscript.
    nonisolated subscript(probe marker: ProbeMarker) -> Int { 0 }

    /// Whether the caller runs under observation tracking. O(1).
    @usableFromInline
    func isTracking() -> Bool {
        let before = hashes.load(ordering: .relaxed)
        // Nothing replaces `box` during the access (a marker's hash only counts): no retain needed.
        unowned(unsafe) let current = box
        current.registrar.access(self, keyPath: keyPath)
        guard hashes.load(ordering: .relaxed) != before else { return false }
        detections += 1
        if detections >= Self.rotation {
            detections = 0
            box = ObservationBox()
        }
        return true
    }
}

/// The probe key path's argument: hashing it is how the probe learns the read was tracked.
struct ProbeMarker: Hashable, Sendable {
    static func == (lhs: ProbeMarker, rhs: ProbeMarker) -> Bool { true }

    func hash(into hasher: inout Hasher) {
        ObservationProbe.shared.hashes.add(1, ordering: .relaxed)
    }
}

/// An `ObservationRegistrar` behind a class reference: `ObservationRegistrar` is a resilient struct,
/// so an optional one stored inline is copied and tested through value witnesses, a boxed one is a
/// pointer.
final class ObservationBox: Sendable {
    let registrar = ObservationRegistrar()
}
