/// Runs `body`, cancelling it and throwing `timedOut(what)` if it has not finished after `duration`.
func withDeadline<T: Sendable>(_ duration: Duration, _ what: String,
                               _ body: @escaping @Sendable () async throws(NATSError) -> T) async throws(NATSError) -> T {
    let result = await withTaskGroup(of: Result<T, NATSError>?.self) { group in
        group.addTask {
            do throws(NATSError) { return .success(try await body()) } catch { return .failure(error) }
        }
        group.addTask {
            do { try await Task.sleep(for: duration) } catch { return nil }
            return .failure(.timedOut(what))
        }
        defer { group.cancelAll() }
        while let next = await group.next() {
            if let next { return next }
        }
        return .failure(.timedOut(what))
    }
    return try result.get()
}
