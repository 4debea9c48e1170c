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
/// `@Observable` getter pays too, and nothing else: the registrar is a `let` read in place (a `var`
/// or a pointer would make the resilient struct be copied through its value witnesses on every
/// get) and the probe is reached through an unretained reference.
///
/// A tracking that saw a model read is also registered with the probe's registrar. One that fires
/// is cancelled there too; one that never fires would keep its `onChange` closure there for as long
/// as that registrar lives, so every `rotation` detections a new probe replaces the current one,
/// which releases them (trackings in flight are unaffected: their access lists hold what they need).
///
/// `@unchecked Sendable`: `current` and `detections` are only read and written by `isTracking()`,
/// which only `@Property` getters call, on the main actor (asserted in debug builds); the marker's
/// hash count, which other threads may touch, is atomic.
final class ObservationProbe: Observable, @unchecked Sendable {
    /// Detections between two replacements of the probe.
    static let rotation = 256
    /// The probe getters ask, held by the one retain `passRetained` took (released on replacement).
    /// Nil until the first get: a constant initial value needs no lazy-initialisation check per get.
    nonisolated(unsafe) private static var current: Unmanaged<ObservationProbe>?
    /// How many times a `ProbeMarker` was hashed. Atomic because a tracking may be cancelled (and
    /// its key paths hashed) on another thread; such a hash at worst sends one read down the slow
    /// path, which registers it with its object's registrar: a spare registration, never a lost one.
    static let hashes = Atomic<Int>(0)

    private let keyPath: KeyPath<ObservationProbe, Int> = \ObservationProbe.[probe: ProbeMarker()]
    private let registrar = ObservationRegistrar()
    /// Detections by this probe; it is replaced at `rotation`.
    nonisolated(unsafe) private var detections = 0

    private init() {}

    /// The probe's key path reads this subscript.
    subscript(probe marker: ProbeMarker) -> Int { 0 }

    /// Whether the caller runs under observation tracking. Main actor only. O(1).
    @inline(__always)
    static func isTracking() -> Bool {
        #if DEBUG
        MainActor.assertIsolated("ObservationProbe is main-actor only")  // a call even in release builds
        #endif
        if current == nil { replaceCurrent() }
        let probe = current.unsafelyUnwrapped
        guard probe._withUnsafeGuaranteedRef({ $0.detect() }) else { return false }
        // Replaced out here, not inside `detect()`: the probe may be freed by it.
        if probe._withUnsafeGuaranteedRef({ $0.detections }) >= rotation { replaceCurrent() }
        return true
    }

    @inline(__always)
    private func detect() -> Bool {
        let before = Self.hashes.load(ordering: .relaxed)
        registrar.access(self, keyPath: keyPath)
        guard Self.hashes.load(ordering: .relaxed) != before else { return false }
        detections += 1
        return true
    }

    /// Replaces the current probe with a fresh one, releasing the trackings registered with it.
    static func replaceCurrent() {
        let old = current
        current = .passRetained(ObservationProbe())
        old?.release()
    }

    /// Detections since the current probe was made (for tests).
    static var currentDetections: Int { current?._withUnsafeGuaranteedRef { $0.detections } ?? 0 }
}

/// Whether a `@Property` getter runs under observation tracking: `ObservationProbe.isTracking()`
/// behind a free function, which a getter calls without loading the class's metadata.
@usableFromInline
func _isObservationTracking() -> Bool {
    ObservationProbe.isTracking()
}

/// The probe key path's argument: hashing it is how the probe learns the read was tracked.
struct ProbeMarker: Hashable, Sendable {
    static func == (lhs: ProbeMarker, rhs: ProbeMarker) -> Bool { true }

    func hash(into hasher: inout Hasher) {
        ObservationProbe.hashes.add(1, ordering: .relaxed)
    }
}

/// An `ObservationRegistrar` behind a class reference: `ObservationRegistrar` is a resilient struct,
/// so an optional one stored inline is copied and tested through value witnesses, a boxed one is a
/// pointer.
final class ObservationBox: Sendable {
    let registrar = ObservationRegistrar()
}
