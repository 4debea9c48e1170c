/// Why a convergence run failed.
package struct FuzzFailure: Error, Sendable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// Replicas, the server, or a fresh fetch disagree once everything settled.
        case divergent
        /// An insert the server acknowledged is gone, and no change removed it.
        case lostInsert
        /// Change sets still pending (or clients offline) once everyone was back online.
        case stuck
        /// The run could not start (a server or a first fetch failed).
        case setup
    }

    package let kind: Kind
    package let details: String

    package init(kind: Kind, details: String) {
        self.kind = kind
        self.details = details
    }

    package var description: String { "\(kind.rawValue): \(details)" }
}
