import Contrail

/// What a fetch of a big scope reported: each `FetchProgress`, and how many models the app saw
/// (`modelCount`) at each report. The checks every big-scope suite makes on it: the app never sees
/// half a state (``countsDuringFetch`` is `[0]`), and ``risesTo(_:)``.
@MainActor
public struct FetchRecord {
    /// The reports, in order.
    public private(set) var reports: [FetchProgress] = []
    /// The distinct model counts the app saw while the fetch reported.
    public private(set) var countsDuringFetch: Set<Int> = []

    /// Fetches `scope` through `session`, recording each report and `modelCount()` at it.
    public static func fetch(_ scope: Scope, in session: Session, modelCount: @escaping @MainActor () -> Int) async throws -> FetchRecord {
        var record = FetchRecord()
        try await session.fetch(scope) { progress in
            record.reports.append(progress)
            record.countsDuringFetch.insert(modelCount())
        }
        return record
    }

    /// Whether `received` rose at every report while `total` stayed, ending at `objects` of `objects`.
    public func risesTo(_ objects: Int) -> Bool {
        zip(reports, reports.dropFirst()).allSatisfy { $0.received < $1.received && $0.total == $1.total }
            && reports.last == FetchProgress(received: objects, total: objects)
    }
}
