import ContrailWire
import Foundation

/// The files of a backup: each scope as a log of one snapshot record (synced), and the manifest
/// `backup.json`, written last (synced, then renamed into place), so a backup without a manifest is
/// one that did not finish. Restoring copies the logs into a data directory that holds none.
///
/// Every function here does blocking file I/O: a server calls them on its ``ScopeLogWriter``
/// thread (``ScopeLogWriter/perform(_:)``), a tool (`contrail admin restore`) on its own thread.
enum ScopeBackup {
    /// The manifest's file name.
    static let manifestName = "backup.json"

    /// Creates `directory` (its parent must exist); ``AdminError/backupExists(path:)`` if it does.
    static func create(_ directory: URL) -> AdminError? {
        let path = directory.path(percentEncoded: false)
        guard mkdir(path, 0o700) == 0 else {
            return errno == EEXIST ? .backupExists(path: path) : .storage("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        return nil
    }

    /// Writes `snapshot` as the only record of a new log at `url`, synced.
    static func write(snapshot: [UInt8], to url: URL) -> AdminError? {
        do {
            let (log, _) = try LogFile.open(at: url, fsync: .never)
            _ = try log.append(.snapshot, snapshot)
            try log.sync()
            try log.close()
            return nil
        } catch {
            return .storage("cannot write \(url.path(percentEncoded: false)): \(error)")
        }
    }

    /// Replays the log at `source` as the disk has it (a torn tail, never acknowledged, left out;
    /// the file is not changed) and writes its state to `target` as ``write(snapshot:to:)`` does.
    /// The object count; nil when there is no log.
    static func copy(log source: URL, name: String, to target: URL) -> Result<Int?, AdminError> {
        guard FileManager.default.fileExists(atPath: source.path(percentEncoded: false)) else { return .success(nil) }
        let store: ScopeStore?
        do {
            store = try ScopePersistence.replay(LogFile.read(at: source).records, name: name).store
        } catch let error as ServerError {
            return .failure(.storage(error.description))
        } catch {
            return .failure(.storage("scope '\(name)': cannot read its log: \(error)"))
        }
        guard let store else { return .success(nil) }
        if let failure = write(snapshot: store.snapshotJSON(name: name).serialized(), to: target) { return .failure(failure) }
        return .success(store.objectCount)
    }

    /// The scope name recorded in the log at `url` (for a hashed file name); nil if unreadable.
    static func storedName(of url: URL) -> String? {
        guard let recovery = try? LogFile.read(at: url) else { return nil }
        return try? ScopePersistence.replay(recovery.records, name: nil).name
    }

    /// Writes the manifest of `report` into its directory (atomically: a temporary file renamed),
    /// then syncs it and the directory.
    static func writeManifest(_ report: BackupReport) -> AdminError? {
        let directory = report.directory.path(percentEncoded: false)
        let path = directory + "/" + manifestName
        do {
            try Data(report.json.serialized(sortedKeys: true)).write(to: URL(filePath: path), options: .atomic)
        } catch {
            return .storage("cannot write \(path): \(error.localizedDescription)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        let synced = fd >= 0 && fsync(fd) == 0
        if fd >= 0 { close(fd) }
        guard synced else { return .storage("cannot sync \(path): \(String(cString: strerror(errno)))") }
        syncDirectory(directory)
        return nil
    }

    /// Reads the manifest of the backup in `directory`.
    static func readManifest(_ directory: URL) throws(AdminError) -> BackupReport {
        let url = directory.appending(path: manifestName, directoryHint: .notDirectory)
        guard let data = FileManager.default.contents(atPath: url.path(percentEncoded: false)) else {
            throw .invalidBackup("no \(manifestName) in \(directory.path(percentEncoded: false)) (a backup that did not finish has none)")
        }
        guard let json = try? JSON(parsing: Array(data)), let report = BackupReport(manifest: json, directory: directory) else {
            throw .invalidBackup("\(url.path(percentEncoded: false)) is not a backup manifest")
        }
        return report
    }

    /// Checks every log of the backup in `backup` (each must replay to its scope) and copies them
    /// into `data` (created if needed), which must hold no scope log. Each file is copied under a
    /// temporary name, synced and renamed. O(backup size).
    static func restore(from backup: URL, into data: URL) throws(AdminError) -> BackupReport {
        let report = try readManifest(backup)
        for entry in report.scopes {
            guard entry.file == ScopeFileName.fileName(for: entry.name) else {
                throw .invalidBackup("\(entry.file) is not the log file of scope '\(entry.name.prefix(64))'")
            }
            let source = backup.appending(path: entry.file, directoryHint: .notDirectory)
            do {
                guard try ScopePersistence.replay(LogFile.read(at: source).records, name: entry.name).store != nil else {
                    throw AdminError.invalidBackup("\(entry.file) holds no snapshot")
                }
            } catch let error as AdminError {
                throw error
            } catch {
                throw .invalidBackup("\(entry.file): \(error)")
            }
        }
        let target = data.path(percentEncoded: false)
        do {
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        } catch {
            throw .storage("cannot create \(target): \(error.localizedDescription)")
        }
        let existing = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
        guard !existing.contains(where: { $0.hasSuffix(".scope") }) else { throw .restoreTargetNotEmpty(path: target) }
        for entry in report.scopes {
            let source = backup.appending(path: entry.file).path(percentEncoded: false)
            let temporary = target + "/" + entry.file + ".restoring"
            _ = unlink(temporary)
            do { try FileManager.default.copyItem(atPath: source, toPath: temporary) } catch {
                throw .storage("cannot copy \(entry.file): \(error.localizedDescription)")
            }
            let fd = open(temporary, O_RDONLY | O_CLOEXEC)
            let synced = fd >= 0 && fsync(fd) == 0
            if fd >= 0 { close(fd) }
            guard synced, rename(temporary, target + "/" + entry.file) == 0 else {
                throw .storage("cannot restore \(entry.file): \(String(cString: strerror(errno)))")
            }
        }
        syncDirectory(target)
        return report
    }

    /// `fsync` of a directory, so the names of the files just renamed into it are durable.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
