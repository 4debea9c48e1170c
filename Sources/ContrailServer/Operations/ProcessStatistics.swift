import Foundation

/// The process's resident memory and file descriptors, read from `/proc/self` when scraped (Linux;
/// elsewhere each is nil and its metric is left out). procfs answers from memory: no disk I/O.
struct ProcessStatistics: Sendable {
    /// Resident set size in bytes (`VmRSS`).
    var residentBytes: Int?
    /// Open file descriptors (entries of `/proc/self/fd`).
    var openDescriptors: Int?
    /// The soft limit on open descriptors (`Max open files`).
    var maxDescriptors: Int?

    /// Reads the current figures. O(open descriptors).
    static func current() -> ProcessStatistics {
        var statistics = ProcessStatistics()
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            statistics.residentBytes = kilobytes(named: "VmRSS:", in: status).map { $0 * 1024 }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            statistics.openDescriptors = entries.count
        }
        if let limits = try? String(contentsOfFile: "/proc/self/limits", encoding: .utf8),
           let line = limits.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") })
        {
            // "Max open files            1024                 524288               files"
            let fields = line.dropFirst("Max open files".count).split(whereSeparator: \.isWhitespace)
            statistics.maxDescriptors = fields.first.flatMap { Int($0) }
        }
        return statistics
    }

    /// The number of a `Name:   1234 kB` line.
    static func kilobytes(named name: String, in text: String) -> Int? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return nil }
        return line.dropFirst(name.count).split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
    }
}
