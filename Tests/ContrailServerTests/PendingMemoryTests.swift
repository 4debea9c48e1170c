import Contrail
import ContrailFuzz
import ContrailSupport
import Foundation
import Testing

/// What pending change sets hold in memory (issue 30): offline appends to one collection.
@MainActor
@Suite struct PendingMemoryTests {
    /// Probe: bytes per change set held by change sets, for `count` appends.
    @Test(.enabled(if: Platform.allocatedBytes() != nil, "needs glibc's allocator accounting"), arguments: [500, 2_000])
    func probe(count: Int) throws {
        ModelRegistry.register(Shelf.self, Item.self)
        let scope = Scope(name: "probe")
        scope.historyLimit = 0
        let shelf = Shelf()
        scope.root = shelf
        scope.syncOffline()
        var sets: [ChangeSet]? = []
        for index in 0..<count {
            let item = Item()
            item.label = "item \(index)"
            sets!.append(scope.modify { shelf.left.append(item) }!)
        }
        let whole = Self.bytesFreed(dropping: &sets) / count
        print("probe \(count): change sets \(whole) B each")
    }

    static func bytesFreed<T>(dropping value: inout T?) -> Int {
        let held = Platform.allocatedBytes() ?? 0
        value = nil
        return held - (Platform.allocatedBytes() ?? 0)
    }
}
