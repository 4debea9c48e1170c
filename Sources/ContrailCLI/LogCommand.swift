import Contrail
import Foundation

/// `contrail log inspect|verify FILE`: looks at a log file without changing it.
enum LogCommand {
    static let usage = """
    usage: contrail log <inspect|verify> FILE [--max-record-size BYTES]
      inspect  print one line per record (offset, kind, size, first 100 characters of the payload
               as UTF-8) and what recovery would do; exit 1 if the file is damaged in the middle
      verify   exit 0 if the log is clean; exit 1 and name the problem otherwise: a torn tail
               (an unsynced last record a crash interrupted, cut on the next open), or damage (a
               record that was synced, or a snapshot: never cut, the scope is refused), with what
               can be saved (the intact records before it, the previous generation FILE.previous)
      --max-record-size BYTES  longest record to accept (default \(LogFile.defaultMaxRecordSize))
    Neither command modifies the file: opening the log for writing is what cuts off a torn tail.
    """

    /// A log that `verify` found not clean (exit status 1).
    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ arguments: [String]) async throws {
        if arguments.contains("-h") || arguments.contains("--help") {
            print(usage)
            return
        }
        var rest = arguments[...]
        guard let command = rest.popFirst() else { throw CLIError.usage("contrail log needs a command\n\(usage)") }
        var file: String?
        var maxRecordSize = LogFile.defaultMaxRecordSize
        while let argument = rest.popFirst() {
            switch argument {
            case "--max-record-size":
                guard let value = rest.popFirst(), let bytes = Int(value), bytes >= 0 else {
                    throw CLIError.usage("--max-record-size needs a byte count\n\(usage)")
                }
                maxRecordSize = bytes
            case let option where option.hasPrefix("-") && option.count > 1:
                throw CLIError.usage("unknown option '\(option)'\n\(usage)")
            default:
                guard file == nil else { throw CLIError.usage("contrail log \(command) takes one FILE\n\(usage)") }
                file = argument
            }
        }
        guard let file else { throw CLIError.usage("contrail log \(command) needs a FILE\n\(usage)") }
        let url = URL(filePath: file)
        switch command {
        case "inspect": try inspect(url, maxRecordSize: maxRecordSize)
        case "verify": try verify(url, maxRecordSize: maxRecordSize)
        default: throw CLIError.usage("unknown log command '\(command)'\n\(usage)")
        }
    }

    /// Prints every record, then the recovery result. Records before a corrupt one are printed
    /// before the error is thrown.
    static func inspect(_ url: URL, maxRecordSize: Int) throws {
        print(pad("OFFSET", 12) + pad("KIND", 11) + pad("SIZE", 10) + "PAYLOAD")
        var count = 0
        var payloadBytes = 0
        let tail = try LogFile.forEachRecord(at: url, maxRecordSize: maxRecordSize) { kind, offset, payload in
            count += 1
            payloadBytes += payload.count
            print(pad(String(offset), 12) + pad(name(of: kind), 11) + pad(String(payload.count), 10) + preview(payload))
        }
        let summary = "\(count) record\(count == 1 ? "" : "s"), \(payloadBytes) payload bytes"
        if let tail {
            print("\(summary); \(tail) when the log is next opened for writing")
        } else {
            print("\(summary); clean")
        }
    }

    /// Succeeds quietly-ish for a clean log; throws ``Problem`` (exit 1) for a torn tail or damage,
    /// saying what can be saved.
    static func verify(_ url: URL, maxRecordSize: Int) throws {
        let path = url.path(percentEncoded: false)
        var count = 0
        var lastSnapshot: Int?
        let tail: TornTail?
        do {
            tail = try LogFile.forEachRecord(at: url, maxRecordSize: maxRecordSize) { kind, offset, _ in
                count += 1
                if kind == .snapshot { lastSnapshot = offset }
            }
        } catch .corruptRecord(let offset, let reason) {
            var lines = ["\(path): damaged at offset \(offset): \(reason)"]
            if let lastSnapshot {
                lines.append("can be saved: the \(count) intact record\(count == 1 ? "" : "s") before offset \(offset) (from the snapshot at offset \(lastSnapshot)); "
                    + "cutting the log there (LogFile.truncate(at:to: \(offset))) loses every change after it")
            } else {
                lines.append("can be saved from this file: nothing (no intact snapshot before the damage)")
            }
            lines.append(previousGeneration(of: url))
            throw Problem(description: lines.joined(separator: "\n"))
        } catch {
            throw Problem(description: "\(path): \(error)\n\(previousGeneration(of: url))")
        }
        if let tail {
            throw Problem(description: "\(path): \(count) intact records, then a \(tail) (a write a crash interrupted, never synced: it is cut when the log is next opened)")
        }
        print("ok: \(path): \(count) record\(count == 1 ? "" : "s"), clean")
    }

    /// What the previous generation (kept by the last compaction) holds, in one line.
    static func previousGeneration(of url: URL) -> String {
        let previous = LogFile.previousGenerationURL(of: url)
        let path = previous.path(percentEncoded: false)
        guard FileManager.default.fileExists(atPath: path) else { return "previous generation: none (\(path) does not exist)" }
        do {
            var count = 0
            let tail = try LogFile.forEachRecord(at: previous) { _, _, _ in count += 1 }
            return "previous generation \(path): \(count) intact records\(tail.map { ", then a \($0)" } ?? ", clean"): the state as of the compaction before the last one"
        } catch {
            return "previous generation \(path): also damaged (\(error))"
        }
    }

    static func name(of kind: LogRecord.Kind) -> String {
        switch kind {
        case .snapshot: "snapshot"
        case .changeSet: "changeSet"
        }
    }

    /// The first 100 characters of `payload` decoded as UTF-8 (invalid bytes as U+FFFD), with
    /// control characters escaped so each record stays on one line.
    static func preview(_ payload: UnsafeRawBufferPointer, characters: Int = 100) -> String {
        let head = UnsafeRawBufferPointer(rebasing: payload.prefix(characters * 4))
        let text = String(decoding: head, as: UTF8.self)
        var result = ""
        var shown = 0
        for character in text {
            guard shown < characters else { break }
            for scalar in character.unicodeScalars {
                switch scalar {
                case "\n": result += "\\n"
                case "\r": result += "\\r"
                case "\t": result += "\\t"
                case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                    result += "\\u{\(String(scalar.value, radix: 16))}"
                default: result.unicodeScalars.append(scalar)
                }
            }
            shown += 1
        }
        if shown == characters && (text.count > characters || payload.count > head.count) { result += "…" }
        return result
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
