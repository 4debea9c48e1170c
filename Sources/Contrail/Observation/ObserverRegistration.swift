/// One registered callback: held by what it observes (a model object's observer entries, or an
/// `ObserverList`), belonging to a weakly held observer, stopped through its `ObservationToken`.
@MainActor
protocol ObserverRegistration: AnyObject {
    /// Whether it was cancelled or released: it never fires again and holds no closure.
    var isReleased: Bool { get }
    /// Stops it, drops its closure (and whatever the closure captured) and removes it from what it
    /// observes. Calling it again does nothing.
    func release()
}
