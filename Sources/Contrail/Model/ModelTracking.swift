import Foundation

/// Everything an object needs once it takes part in a tree, is observed or is asked for its
/// identity: its parents, its scope, its observers, its uuid, the change its scope is recording for
/// it. Objects that are none of these carry no tracking at all, which keeps their property sets on
/// the fast path and their instances small.
///
/// The stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are only
/// touched on the main actor, and no access to them is held across a call that could reach them
/// again (loops iterate copies of the arrays).
@MainActor @usableFromInline
final class ModelTracking {
    @exclusivity(unchecked) var info: ModelClassInfo!
    @exclusivity(unchecked) var parents: [ParentLink] = []
    weak var scope: Scope?
    @exclusivity(unchecked) var observers: [ObserverEntry] = []
    /// The `ChangeDelivery` turn in which this object's tree observers (and its ancestors') were
    /// last queued.
    @exclusivity(unchecked) var treeTurn: UInt = 0
    /// The object's identity across replicas, made when first asked for.
    lazy var uuid = UUID()
    /// The fragment the scope is building for this object in the current flush; valid only while
    /// `pendingGeneration` is that flush's generation (see `PendingFragments`).
    @exclusivity(unchecked) var pending: PendingFragment?
    @exclusivity(unchecked) var pendingGeneration: UInt = 0
    /// Made the first time a property of the object is read under observation tracking
    /// (`withObservationTracking`, SwiftUI); nil for objects nobody tracks.
    @exclusivity(unchecked) var observation: ObservationBox?
    /// True for a class's probe instance, which only answers key-path probes.
    let isProbe: Bool

    init(isProbe: Bool = false) {
        self.isProbe = isProbe
    }
}
