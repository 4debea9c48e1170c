import ContrailWire
import Foundation

/// A backup of a server's scopes (``ContrailServer/backup(to:)``), as written and as its manifest
/// (`backup.json` in the backup directory) records it. The directory is a data directory:
/// ``ContrailServer/restoreBackup(from:into:)`` copies it into a new one, or `contrail serve --data`
/// serves a copy of it as it is.
public struct BackupReport: Sendable, Equatable {
    /// One scope in a backup.
    public struct Entry: Sendable, Equatable {
        /// The scope's name.
        public var name: String
        /// Its log file in the backup directory (one snapshot record).
        public var file: String
        /// Its object count, the root included.
        public var objects: Int

        /// An entry.
        public init(name: String, file: String, objects: Int) {
            self.name = name
            self.file = file
            self.objects = objects
        }
    }

    /// Where the backup is.
    public var directory: URL
    /// When it was taken (when the server began it).
    public var created: Date
    /// Its scopes, by name.
    public var scopes: [Entry]

    /// A report.
    public init(directory: URL, created: Date, scopes: [Entry]) {
        self.directory = directory
        self.created = created
        self.scopes = scopes
    }

    /// The manifest: `{"format": "contrail-backup-1", "created": seconds since 1970, "directory": path,
    /// "scopes": [{"name", "file", "objects"}]}`.
    public var json: JSON {
        .object(["format": .string(Self.format), "created": .double(created.timeIntervalSince1970),
                 "directory": .string(directory.path(percentEncoded: false)),
                 "scopes": .array(scopes.map { .object(["name": .string($0.name), "file": .string($0.file),
                                                         "objects": .int(Int64($0.objects))]) })])
    }

    /// The manifest's format name.
    static let format = "contrail-backup-1"

    /// Reads a manifest (`directory` is where it was found); nil if it has another shape.
    init?(manifest json: JSON, directory: URL) {
        guard json["format"]?.stringValue == Self.format, case .array(let items)? = json["scopes"] else { return nil }
        let seconds: Double
        switch json["created"] {
        case .double(let value)?: seconds = value
        case .int(let value)?: seconds = Double(value)
        default: return nil
        }
        var entries: [Entry] = []
        for item in items {
            guard case .string(let name)? = item["name"], case .string(let file)? = item["file"],
                  case .int(let objects)? = item["objects"] else { return nil }
            entries.append(Entry(name: name, file: file, objects: Int(objects)))
        }
        self.init(directory: directory, created: Date(timeIntervalSince1970: seconds), scopes: entries)
    }
}
