/// What model objects belong to and report to: the base class of `Scope`, through which the model
/// layer reaches a scope without knowing it. A host installs itself on the objects it holds
/// (`ModelObject.attach(to:)`); from then on their property sets, attaches, detaches and refused
/// links are reported here. This base keeps nothing (every report is ignored); `Scope` overrides
/// each report. It cannot be subclassed outside Contrail.
@MainActor
public class ModelObjectHost {
    init() {}

    /// Whether the host records its members' property sets now (false while it applies changes
    /// from elsewhere): checked before `record` is called, so a set it would ignore costs a load.
    @exclusivity(unchecked) final var recordsSets = true

    /// Whether the host wants to hear of every property set of its members, applied from elsewhere
    /// or local, recorded or not (while it has live queries): checked before `memberChanged`.
    @exclusivity(unchecked) final var watchesSets = false

    /// The host's name, for error messages.
    var hostName: String { "" }

    /// The root of the host's tree; setting nil lets go of it (an object moving out takes its
    /// host's root with it).
    var hostRoot: ModelObject? {
        get { nil }
        set {}
    }

    /// `object` joined the host (it is already marked as a member).
    func didAttach(_ object: ModelObject) {}

    /// `object` left the host (it is already unmarked).
    func didDetach(_ object: ModelObject) {}

    /// Property `property` of member `object` (whose tracking record is `tracking`) changed from
    /// `old`; its new value is stored and its observers are notified.
    func record(_ object: ModelObject, tracking: ModelTracking, property: Int, old: consuming Any) {}

    /// A property of member `object` changed (its new value is stored, its observers notified);
    /// called only while `watchesSets`.
    func memberChanged(_ object: ModelObject) {}

    /// A link into the host was refused by the one-host rule; the set was undone.
    func refuseLink(_ error: ScopeMembershipError) {}

    /// Whether the host keeps `object` attached whatever its parents say: something the host holds
    /// outside the model tree refers to it (a scope keeps objects of classes its app does not know,
    /// and what they refer to).
    func keepsAttached(_ object: ModelObject) -> Bool { false }
}
