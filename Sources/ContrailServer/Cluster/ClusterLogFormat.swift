import ContrailNATS
import ContrailWire
import Foundation

/// The formats of a scope's log entries, and how a cluster agrees on the one its servers write.
///
/// Format 1: each log message is one genesis or one change set. Format 2 adds group-commit
/// batches (`{"batch":[…]}`), marked with the header `Contrail-Format: 2`. A server reads every
/// format up to its own (`ClusterOptions.logFormat`); a message of a newer one is an
/// ``UnknownFormat`` that stops the scope on that server (never skipped: skipping would make its
/// replica differ from the others').
///
/// Agreement: every server keeps itself in one record of the snapshot bucket (key `log-formats`:
/// `{"servers":{"<id>":{"reads":2,"seen":<epoch seconds>}}}`), refreshed every
/// `formatRefresh` by compare-and-set; entries not refreshed for `formatLifetime` are dropped. A
/// server writes the lowest format any live server reads (and at most its own), so during a
/// rolling upgrade the new servers keep writing what the old ones read until the last old one is
/// gone. Entries compare wall clocks: servers' clocks must agree within `formatLifetime`.
enum ClusterLogFormat {
    /// The newest format this code reads and writes.
    static let newest = 2
    /// The header naming a message's format (absent: format 1).
    static let header = "Contrail-Format"
    /// The record's key in the snapshot bucket (no scope's key: those are hex or `empty`).
    static let recordKey = "log-formats"

    /// A log message in a format this server does not read.
    struct UnknownFormat: Error, CustomStringConvertible {
        let scope: String
        let sequence: UInt64
        let format: String
        let reads: Int

        var description: String {
            "log message \(sequence) of scope '\(scope)' is in log format \(format); this server reads formats up to \(reads): "
                + "upgrade it (the scope stays stopped on this server until it is unloaded)"
        }
    }

    /// The format of a stored message (its header; a batch without one is format 2 all the same).
    static func format(of message: StoredMessage) -> String {
        if let declared = message.headers?[header] { return declared }
        return message.payload.starts(with: Array(#"{"batch":"#.utf8)) ? "2" : "1"
    }

    /// Whether a server reading formats up to `reads` can read `format`.
    static func readable(_ format: String, by reads: Int) -> Bool {
        guard let number = Int(format) else { return false }
        return number >= 1 && number <= reads
    }

    /// What a registration found.
    struct Agreement: Equatable {
        /// The format to write: the lowest any live server reads (at most this one's).
        var write: Int
        /// Whether another live server reads a newer format than this one (it may have been writing it
        /// until it sees this registration).
        var newerLive: Bool
    }

    /// Adds or refreshes `server` in the record (dropping entries older than `lifetime`) and returns
    /// what to write. Retries lost races. O(servers).
    /// - Throws: the bucket's errors.
    static func register(server: String, reads: Int, lifetime: Duration, now: Date, in bucket: KeyValueBucket)
        async throws(NATSError) -> Agreement
    {
        for _ in 0..<20 {
            let current = try await bucket.get(recordKey)
            var servers: [String: JSON] = [:]
            if let current, case .object(let members)? = (try? JSON(parsing: current.value))?["servers"] { servers = members }
            let cutoff = now.timeIntervalSince1970 - Double(lifetime.components.seconds)
            servers = servers.filter { ($0.value["seen"]?.doubleValue ?? 0) >= cutoff }
            servers[server] = .object(["reads": .int(Int64(reads)), "seen": .double(now.timeIntervalSince1970)])
            let record = JSON.object(["servers": .object(servers)]).serialized()
            do throws(NATSError) {
                _ = try await bucket.update(recordKey, record, revision: current?.revision ?? 0)
            } catch .jetStream(let error) where error.errorCode == JetStreamAPIError.wrongLastSequence {
                continue  // another server refreshed at the same time
            }
            let formats = servers.values.compactMap { $0["reads"]?.int64Value }.map(Int.init)
            return Agreement(write: min(reads, formats.min() ?? reads), newerLive: formats.contains { $0 > reads })
        }
        throw .timedOut("registering in the cluster's log-format record")
    }

    /// Drops `server` from the record (a graceful stop), so the others need not wait for it to expire.
    static func deregister(server: String, in bucket: KeyValueBucket) async {
        for _ in 0..<5 {
            guard let current = try? await bucket.get(recordKey),
                  case .object(var servers)? = (try? JSON(parsing: current.value))?["servers"],
                  servers[server] != nil else { return }
            servers[server] = nil
            let record = JSON.object(["servers": .object(servers)]).serialized()
            if (try? await bucket.update(recordKey, record, revision: current.revision)) != nil { return }
        }
    }
}
