import Contrail
import Foundation

/// Chapter 3: persisting a scope to a fragment log and restoring it; undo and redo.
@MainActor
func persistenceChapter(_ narrator: Narrator) async throws {
    narrator.chapter("Fragment log: persist and restore")
    let url = FileManager.default.temporaryDirectory.appending(path: "contrail-playground-\(UUID().uuidString).log")
    defer { try? FileManager.default.removeItem(at: url) }

    let canvas = Canvas()
    let scope = Scope(name: "Canvas")
    scope.root = canvas
    let log = FragmentLog(url: url)
    try log.attach(to: scope)
    let shape = Shape()
    canvas.shapes = [shape]
    scope.flush()
    scope.modify(message: "move right") { shape.x = 120 }
    scope.modify(message: "recolor") { shape.color = .blue }
    try log.close()
    narrator.say("wrote \(try Data(contentsOf: url).count) bytes; history:")
    for entry in try FragmentLog.history(at: url) {
        narrator.say("  \(entry.message ?? "(no message)"): \(entry.fragments.count) fragment(s)")
    }

    let restoredScope = Scope(name: "Canvas")
    let restoredLog = FragmentLog(url: url)
    let report = try restoredLog.attach(to: restoredScope)
    let restored = restoredScope.root as? Canvas
    narrator.say("restored \(report.records) records: \(restored?.shapes.count ?? 0) shape at x=\(restored?.shapes.first?.x ?? 0), color \(restored?.shapes.first?.color ?? .clear)")
    narrator.say("same state as before: \(restoredScope.stateJSON() == scope.stateJSON())")
    try restoredLog.close()

    narrator.chapter("Undo and redo")
    scope.undo()
    narrator.say("undo 'recolor': color is \(shape.color)")
    scope.undo()
    narrator.say("undo 'move right': x is \(shape.x)")
    scope.redo()
    narrator.say("redo: x is \(shape.x) — undo and redo are change sets that sync like any other")
    await ChangeDelivery.main.drain()
}
