/// What reading a ``LogFile`` found: every intact record in order, and the torn tail if there was one.
package struct LogRecovery: Sendable, Equatable {
    /// Every intact record, in file order.
    public var records: [LogRecord]
    /// The damaged end of the file (a crash mid-write), or `nil` if the file ended cleanly.
    public var truncatedTail: TornTail?

    /// A recovery result.
    public init(records: [LogRecord], truncatedTail: TornTail?) {
        self.records = records
        self.truncatedTail = truncatedTail
    }
}
