@testable import ContrailServer
import Testing

/// When a cluster server may apply the batch it just appended without reading it back: only when
/// the message is known to be the subject's next after what it applied.
@Suite struct ClusterOwnApplyTests {
    typealias Appended = ClusterScope.Appended

    @Test func aStoreCheckedOnASingleReplicaFollowsWhatWasAppliedWhateverOtherScopesStoredBetween() {
        // Other scopes' messages took stream sequences 11…41: still the subject's next.
        #expect(Appended(sequence: 42, previous: 10, duplicate: false, checked: true).follows(10))
        // Nothing at all stored between: the next whatever the stream checks.
        #expect(Appended(sequence: 11, previous: 10, duplicate: false, checked: false).follows(10))
    }

    @Test func anythingElseIsReadBack() {
        // A replicated stream or a NATS cluster (not checked on store), with other messages between.
        #expect(!Appended(sequence: 42, previous: 10, duplicate: false, checked: false).follows(10))
        // A duplicate was stored on an earlier try's expectation.
        #expect(!Appended(sequence: 42, previous: 10, duplicate: true, checked: true).follows(10))
        // A catch-up applied more since the publish went out (or the message itself).
        #expect(!Appended(sequence: 42, previous: 10, duplicate: false, checked: true).follows(12))
        #expect(!Appended(sequence: 42, previous: 42, duplicate: false, checked: true).follows(42))
    }
}
