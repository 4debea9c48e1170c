import Contrail

/// Waits until `condition` holds, and says whether it did before `timeout` (of real time) ran out:
/// a bounded wait for something another task or process brings about, never a delay (a passing
/// test returns as soon as the condition holds). Before each check it delivers the main actor's
/// pending change sets and observer callbacks (`ChangeDelivery.drain`), so that edits made just
/// before are queued and observed when the condition looks at them; between checks it pauses 1 ms.
///
/// ```swift
/// #expect(await eventually { replica.title == "from A" })
/// ```
@MainActor
public func eventually(_ timeout: Duration = .seconds(60), _ condition: @MainActor () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        await ChangeDelivery.main.drain()
        if await condition() { return true }
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
}
