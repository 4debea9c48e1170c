/// Everything an object needs once it takes part in a tree or is observed: its parents, its scope,
/// its observers. Objects that are none of these carry no tracking at all, which keeps their
/// property sets on the fast path.
@MainActor @usableFromInline
final class ModelTracking {
    var info: ModelClassInfo!
    var parents: [ParentLink] = []
    weak var scope: Scope?
    var observers: [ObserverEntry] = []
    /// The `NotificationQueue` turn in which this object's tree observers (and its ancestors') were
    /// last queued.
    var treeTurn: UInt = 0
    /// True for a class's probe instance, which only answers key-path probes.
    let isProbe: Bool

    init(isProbe: Bool = false) {
        self.isProbe = isProbe
    }
}
