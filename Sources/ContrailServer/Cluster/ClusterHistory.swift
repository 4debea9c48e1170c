import ContrailNATS
import ContrailWire
import Foundation

/// A cluster scope's history (Protocol §8.26), read from JetStream.
///
/// Numbering: the change sets the scope accepted, in the order of its subject (a batch's members in
/// order), counted by every server's replica as it applies them (``ScopeStore/sequence``, kept in
/// every snapshot). Each change set's entry carries the time its server took it and the sending
/// session's user (``ClusterEntry/stamped(_:user:time:)``).
///
/// The state at a point is replayed from a base at or before it: the subject's genesis while the
/// stream still holds it, the latest snapshot (the snapshot bucket), or, with a retention, a past
/// snapshot kept in the history bucket under `snap.SCOPE.SEQ` (``keep(_:at:previous:of:_:retention:now:)``).
/// A base serves only while the subject still holds every message after it.
///
/// Revisions live in the history bucket under `rev.SCOPE.LABEL` (the label in hex), written
/// create-only, so a label is taken once across every server.
enum ClusterHistory {
    /// A point replay can start from.
    private struct Base {
        /// The stream sequence of the last message it includes (0: the genesis, before any message).
        let streamSequence: UInt64
        /// The state (nil: the genesis's, an empty scope).
        let store: ScopeStore?
        /// Its change-set number.
        var number: Int { store?.sequence ?? 0 }
    }

    /// Why a replay stopped short.
    private enum ReplayFailure: Error {
        /// The subject no longer holds every message after the base (trimmed).
        case gap
        case failed(AdminError)
    }

    /// The history bucket's key of a past snapshot: the scope's key and the stream sequence, zero-padded.
    static func snapshotKey(_ scope: String, _ sequence: UInt64) -> String {
        "snap.\(scope)." + String(format: "%020llu", sequence)
    }

    /// The history bucket's key of a revision: the scope's key and the label in hex.
    static func revisionKey(_ scope: String, _ label: String) -> String { "rev.\(scope).\(ClusterEntry.token(for: label))" }

    /// Keeps the snapshot `state` written at stream sequence `sequence` of scope `key` in the
    /// history bucket, deletes the past snapshots that are no longer needed and returns where the
    /// subject may be trimmed: behind the newest snapshot taken more than `retention` ago (and
    /// never past `previous`, the snapshot before this one), so every change set younger than
    /// `retention` stays readable and rebuildable. 0: nothing to trim. O(snapshots kept).
    static func keep(_ state: JSON, at sequence: UInt64, previous: UInt64, of key: String, _ handles: ClusterLink.Handles,
                     retention: Duration, now: Date) async throws(NATSError) -> UInt64 {
        let record = JSON.object(["seq": .int(Int64(sequence)), "time": .int(HistoryEntry.milliseconds(now)), "state": state])
        _ = try await handles.history.put(snapshotKey(key, sequence), record.serialized())
        let cutoff = HistoryEntry.milliseconds(now) - Int64(retention.components.seconds) * 1000
        var old: [(key: String, sequence: UInt64)] = []
        for entry in try await handles.history.entries(matching: "snap.\(key).*") {
            guard let json = try? JSON(parsing: entry.value), let seq = json["seq"]?.uint64Value else { continue }
            if (json["time"]?.int64Value ?? 0) < cutoff { old.append((entry.key, seq)) }
        }
        old.sort { $0.sequence < $1.sequence }
        guard let newestOld = old.last else { return 0 }
        for expired in old.dropLast() { try await handles.history.purge(expired.key) }
        return min(previous, newestOld.sequence)
    }

    /// The history of the scope `name` (key `key`, subject `subject`) after `since`: every change set
    /// from the oldest base that still serves, its revisions. O(what the stream and bucket hold for it).
    static func history(of name: String, key: String, subject: String, since: HistoryPoint?, limits: ServerLimits,
                        _ handles: ClusterLink.Handles, options: ClusterOptions) async throws(AdminError) -> ScopeHistory {
        let revisions = try await self.revisions(key, handles)
        var after: Int?
        switch since {
        case .sequence(let number)?: after = number
        case .revision(let label)?:
            guard let revision = revisions.last(where: { $0.label == label }) else { throw .unknownRevision(label) }
            after = revision.sequence
        case .time?, nil: after = nil
        }
        let bases = try await self.bases(name, key: key, subject: subject, handles, options: options)
        for base in bases {
            do throws(ReplayFailure) {
                let (store, entries) = try await replay(from: base, through: nil, name: name, subject: subject, limits: limits, handles, options: options)
                var kept = entries
                if let after { kept.removeAll { $0.sequence <= after } }
                if case .time(let date)? = since { kept.removeAll { ($0.time ?? .distantPast) < date } }
                return ScopeHistory(scope: name, oldest: base.number, latest: store.sequence, entries: kept, revisions: revisions)
            } catch {
                guard case .failed(let reason) = error else { continue }  // a gap: try a later base
                throw reason
            }
        }
        throw .historyUnavailable("no state of scope '\(name)' can be rebuilt from what the cluster keeps")
    }

    /// The scope's state after `point` and the sequence number it stands for, replayed from the
    /// newest base at or before it. O(the messages between them).
    static func state(of name: String, key: String, subject: String, at point: HistoryPoint, limits: ServerLimits,
                      _ handles: ClusterLink.Handles, options: ClusterOptions) async throws(AdminError) -> (sequence: Int, store: ScopeStore) {
        let sequence: Int
        switch point {
        case .sequence(let number): sequence = number
        case .revision(let label):
            guard let revision = try await revisions(key, handles).last(where: { $0.label == label }) else { throw .unknownRevision(label) }
            sequence = revision.sequence
        case .time(let date):
            let history = try await history(of: name, key: key, subject: subject, since: nil, limits: limits, handles, options: options)
            if let last = history.entries.filter({ ($0.time ?? .distantFuture) <= date }).last {
                sequence = last.sequence
            } else {
                guard history.oldest == 0 else { throw .historyUnavailable("no change set kept was accepted at or before \(point)") }
                sequence = 0
            }
        }
        guard sequence >= 0 else { throw .historyUnavailable("there is no change set \(sequence)") }
        var latest: Int?
        for base in try await bases(name, key: key, subject: subject, handles, options: options).reversed() where base.number <= sequence {
            do throws(ReplayFailure) {
                let (store, _) = try await replay(from: base, through: sequence, name: name, subject: subject, limits: limits, handles, options: options)
                guard store.sequence == sequence else {
                    latest = store.sequence
                    break
                }
                return (sequence, store)
            } catch {
                guard case .failed(let reason) = error else { continue }  // a gap: try an older base
                throw reason
            }
        }
        if let latest { throw .historyUnavailable("the scope has \(latest) change set(s); there is no \(sequence)") }
        throw .historyUnavailable("change set \(sequence) is no longer kept")
    }

    /// Names the state after change set `sequence` `label`, created once across the cluster.
    /// - Throws: ``AdminError/revisionExists(_:)`` when another server or client took the label first.
    static func mark(_ revision: ScopeRevision, of key: String, _ handles: ClusterLink.Handles) async throws(AdminError) {
        do throws(NATSError) {
            _ = try await handles.history.update(revisionKey(key, revision.label), revision.json.serialized(), revision: 0)
        } catch .jetStream(let error) where error.errorCode == JetStreamAPIError.wrongLastSequence {
            throw .revisionExists(revision.label)
        } catch {
            throw .storage("the revision could not be stored in the cluster: \(error)")
        }
    }

    /// Whether the cluster holds the scope: a message in its subject or a snapshot.
    static func exists(key: String, subject: String, _ handles: ClusterLink.Handles, options: ClusterOptions) async throws(AdminError) -> Bool {
        do throws(NATSError) {
            if try await handles.jetStream.lastMessage(stream: options.streamName, subject: subject) != nil { return true }
            return try await handles.snapshots.get(key) != nil
        } catch {
            throw .storage("the cluster is unavailable: \(error)")
        }
    }

    /// The scope's revisions, oldest mark first.
    static func revisions(_ key: String, _ handles: ClusterLink.Handles) async throws(AdminError) -> [ScopeRevision] {
        do throws(NATSError) {
            return try await handles.history.entries(matching: "rev.\(key).*").compactMap { entry in
                (try? JSON(parsing: entry.value)).flatMap(ScopeRevision.init(json:))
            }
        } catch {
            throw .storage("the revisions cannot be read from the cluster: \(error)")
        }
    }

    /// The bases replay can start from, oldest first: the genesis while the subject starts with it,
    /// the past snapshots kept, the latest snapshot.
    private static func bases(_ name: String, key: String, subject: String, _ handles: ClusterLink.Handles,
                              options: ClusterOptions) async throws(AdminError) -> [Base] {
        var bases: [Base] = []
        do throws(NATSError) {
            if let first = try await handles.jetStream.nextMessage(stream: options.streamName, subject: subject, from: 1),
               case .genesis? = try? ClusterEntry(decoding: first.payload) {
                bases.append(Base(streamSequence: 0, store: nil))
            }
            var records = try await handles.history.entries(matching: "snap.\(key).*").map(\.value)
            if let latest = try await handles.snapshots.get(key) { records.append(latest.value) }
            for record in records {
                guard let json = try? JSON(parsing: record), let seq = json["seq"]?.uint64Value, let state = json["state"],
                      let store = ScopeStore(snapshot: state) else { continue }
                if !bases.contains(where: { $0.streamSequence == seq }) { bases.append(Base(streamSequence: seq, store: store)) }
            }
        } catch {
            throw .storage("the history of '\(name)' cannot be read from the cluster: \(error)")
        }
        guard !bases.isEmpty else { throw .unknownScope(name) }
        return bases.sorted { $0.streamSequence < $1.streamSequence }
    }

    /// Replays the subject's messages after `base`, applying each change set as every server's
    /// replica does (``ClusterScope``: an unreadable message skipped whole, a batch's members in
    /// order), up to change set `target` (nil: to the end). Returns the state and the entries of the
    /// change sets accepted, with their effective fragments.
    private static func replay(from base: Base, through target: Int?, name: String, subject: String, limits: ServerLimits,
                               _ handles: ClusterLink.Handles, options: ClusterOptions)
        async throws(ReplayFailure) -> (ScopeStore, [HistoryEntry])
    {
        var next = base.streamSequence + 1
        var store: ScopeStore
        if let based = base.store {
            store = based
        } else {
            // The genesis: the subject's first message.
            guard let genesis = try await message(after: 0, name: name, subject: subject, handles, options: options),
                  case .genesis(let root)? = try? ClusterEntry(decoding: genesis.payload) else { throw .gap }
            store = ScopeStore(rootUUID: root)
            next = genesis.sequence + 1
        }
        var core = ScopeCore(name: name, limits: limits, procedures: [], metrics: nil)
        var entries: [HistoryEntry] = []
        var first = base.store != nil
        while target.map({ store.sequence < $0 }) ?? true,
              let message = try await message(after: next - 1, name: name, subject: subject, handles, options: options) {
            next = message.sequence + 1
            if first {
                // Stored after a message this base does not include: the messages between were trimmed.
                let previous = message.headers?[ClusterEntry.previousHeader].flatMap(UInt64.init) ?? 0
                if previous > base.streamSequence { throw .gap }
                first = false
            }
            guard let entry = try? ClusterEntry(decoding: message.payload) else { continue }  // every server skips it
            let stamps = (try? JSON(parsing: message.payload)).map { $0["batch"]?.arrayValue ?? [$0] } ?? []
            let members = if case .batch(let members) = entry { members } else { [entry] }
            for (index, member) in members.enumerated() {
                if let target, store.sequence >= target { break }
                guard case .changeSet(let fragments, let atomic, let id) = member else { continue }
                let sync = ScopeSync(index: 0, scopeIndex: 0, fragments: fragments, atomic: atomic, changeSetID: id)
                guard case .accepted(let logged, _) = core.apply(sync, to: &store, from: nil) else { continue }
                let number = store.advanceSequence()
                let stamp = index < stamps.count ? stamps[index] : .null
                entries.append(HistoryEntry(sequence: number, time: stamp["time"]?.int64Value.map(HistoryEntry.date),
                                            user: stamp["user"]?.stringValue, changeSetID: id, fragments: .array(logged.map(\.json))))
            }
        }
        return (store, entries)
    }

    /// The subject's first message after stream sequence `sequence`, in a format this server reads.
    private static func message(after sequence: UInt64, name: String, subject: String, _ handles: ClusterLink.Handles,
                                options: ClusterOptions) async throws(ReplayFailure) -> StoredMessage? {
        let message: StoredMessage?
        do throws(NATSError) {
            message = try await handles.jetStream.nextMessage(stream: options.streamName, subject: subject, from: sequence + 1)
        } catch {
            throw .failed(.storage("the history of '\(name)' cannot be read from the cluster: \(error)"))
        }
        if let message, case let format = ClusterLogFormat.format(of: message), !ClusterLogFormat.readable(format, by: options.logFormat) {
            throw .failed(.storage("log message \(message.sequence) of '\(name)' is in log format \(format.prefix(20)), which this server does not read"))
        }
        return message
    }
}
