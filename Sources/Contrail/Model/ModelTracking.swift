import Foundation

/// Everything an object needs once it takes part in a tree, is observed or is asked for its
/// identity: its parents, its host (scope), its observers, its uuid, the change its host is
/// recording for it. Objects that are none of these carry no tracking at all, which keeps their property sets on
/// the fast path and their instances small.
///
/// The stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are only
/// touched on the main actor, and no access to them is held across a call that could reach them
/// again (loops iterate copies of the arrays).
@MainActor @usableFromInline
final class ModelTracking {
    @exclusivity(unchecked) var info: ModelClassInfo!
    @exclusivity(unchecked) var parents: [ParentLink] = []
    /// The host (scope) the object belongs to, unretained: a recorded set reaches its host without
    /// a weak load or any reference counting (a scope has a side table, which makes both slow).
    /// Invariant: a host clears this on every member before it goes away (`leave(dying:)`, from
    /// `Scope.deinit`), and detaching clears it; debug builds check it through a weak shadow.
    @exclusivity(unchecked) private var hostReference: Unmanaged<ModelObjectHost>?
    #if DEBUG
    private weak var hostCheck: ModelObjectHost?
    #endif

    /// The host the object belongs to, if any.
    var host: ModelObjectHost? {
        get {
            assertHostAlive()
            return hostReference?.takeUnretainedValue()
        }
        set {
            hostReference = newValue.map { Unmanaged.passUnretained($0) }
            #if DEBUG
            hostCheck = newValue
            #endif
        }
    }

    /// Calls `body` with the object's host, if it has one, without retaining it.
    @inline(__always)
    func withHost(_ body: (ModelObjectHost) -> Void) {
        assertHostAlive()
        // `body` is passed on as it is: a closure literal here would be checked for main-actor
        // isolation at run time on every set.
        hostReference?._withUnsafeGuaranteedRef(body)
    }

    /// Clears the host if it is `host`, which is going away (its weak references are already
    /// nil, so this compares identities and checks nothing). Returns whether it was.
    func leave(dying host: ModelObjectHost) -> Bool {
        guard hostReference?.toOpaque() == Unmanaged.passUnretained(host).toOpaque() else { return false }
        hostReference = nil
        return true
    }

    @inline(__always)
    private func assertHostAlive() {
        #if DEBUG
        assert(hostReference == nil || hostCheck != nil, "an object outlived its host's deinit, which should have cleared it")
        #endif
    }
    @exclusivity(unchecked) var observers: [ObserverEntry] = []
    /// The `ChangeDelivery` turn in which this object's tree observers (and its ancestors') were
    /// last queued.
    @exclusivity(unchecked) var treeTurn: UInt = 0
    /// The object's identity across replicas, made when first asked for.
    lazy var uuid = UUID.random()
    /// The change the host is recording for this object in its current flush; valid only while
    /// `pendingGeneration` is that flush's generation (the host's bookkeeping, kept here so that
    /// finding it is a load and a compare).
    @exclusivity(unchecked) var pending: PendingChange?
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
