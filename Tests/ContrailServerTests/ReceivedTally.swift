import ContrailSupport
import ContrailTransport
import ContrailWire

/// Counts the broadcasts (`ScopeSync`) and the replies to its own change sets (`ScopeSyncReply`) a
/// client receives through its ``connector(_:)``s, as they arrive (whether or not the session holds
/// them back with `pauseIncoming`).
final class ReceivedTally: Sendable {
    private let tally = SanitizerVisibleMutex((broadcasts: 0, replies: 0))

    var counts: (broadcasts: Int, replies: Int) { tally.withLock { $0 } }

    /// `base`, with what its transports receive counted here.
    func connector(_ base: any SyncConnector) -> TappedConnector {
        TappedConnector(base: base) { [self] frame, direction in
            guard direction == .received else { return true }
            tally.withLock { counts in
                if frame.contains("ScopeSyncReply") { counts.replies += 1 } else if frame.contains("ScopeSync\"") { counts.broadcasts += 1 }
            }
            return true
        }
    }
}
