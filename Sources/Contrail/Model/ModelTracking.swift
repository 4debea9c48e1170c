/// Everything an object needs once it takes part in a tree or is observed: its parents, its scope,
/// its observers. Objects that are none of these carry no tracking at all, which keeps their
/// property sets on the fast path.
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
    /// True for a class's probe instance, which only answers key-path probes.
    let isProbe: Bool

    init(isProbe: Bool = false) {
        self.isProbe = isProbe
    }
}
