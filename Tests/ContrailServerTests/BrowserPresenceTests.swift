import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// Presence in the canvas demo (Protocol §8.20), in a real browser: two windows of `/demo` on one
/// scope; one moves its mouse over the canvas and selects a shape, the other draws its pointer and
/// selection with its name; closing the first makes it leave. A Swift client on the scope sees the
/// window too.
@MainActor @Suite(.serialized) struct BrowserPresenceTests {
    @Test(.enabled(if: BrowserTests.chromium != nil, "needs Chromium (`chromium` on PATH); .ci/run installs the Debian package"),
          .timeLimit(.minutes(5)))
    func demoShowsTheOtherWindowsPointerAndSelectionUntilItCloses() async throws {
        let (server, port) = try await startPageServer()
        let browser = try await HeadlessChromium.launch(try #require(BrowserTests.chromium))
        let devTools: DevTools
        do { devTools = try await DevTools(url: browser.devToolsURL) } catch {
            await browser.stop(); await server.stop()
            throw error
        }
        let name = "Presence-\(UUID().uuidString.prefix(8))"
        let scope = Scope(name: name)
        scope.root = BrowserCanvas()
        var client: Client?
        do {
            client = try await Client.sync(scope, url: "ws://127.0.0.1:\(port)/", options: testOptions())
            try await run(devTools, port: port, name: name, swift: scope)
        } catch {
            await devTools.close(); await browser.stop(); await client?.close(); await server.stop()
            throw error
        }
        await devTools.close(); await browser.stop(); await client?.close(); await server.stop()
    }

    private func front(_ page: BrowserPage) async throws {
        _ = try await page.devTools.call("Page.bringToFront", session: page.session)
    }

    private func run(_ devTools: DevTools, port: UInt16, name: String, swift scope: Scope) async throws {
        let url = "http://127.0.0.1:\(port)/demo?scope=\(name)&canvasClass=BrowserCanvas&shapeClass=BrowserShape"
        let ada = try await devTools.openPage(url + "&name=Ada")
        let bo = try await devTools.openPage(url + "&name=Bo")
        // A page in the background gets no animation frames (waitFor and the canvas run on them):
        // the page worked on is brought to the front first.
        for page in [ada, bo] {
            try await front(page)
            _ = try await page.waitFor("window.contrailDemo && contrailDemo.fetched")
        }
        let watcher = NSObject()
        scope.presence.onChange(watcher) { _ in }   // the Swift client watches too

        // Ada adds a shape (it is selected) and moves her mouse over the canvas.
        try await front(ada)
        let shapeID = try #require(try await ada.evaluate(
            "contrailDemo.addShape({x: 60, y: 50, width: 160, height: 120, color: 0x3498dbff}).uuid").stringValue)
        let rect = try await ada.evaluate("(() => { const r = document.getElementById('canvas').getBoundingClientRect(); return [r.left, r.top, r.width / 800, r.height / 500]; })()")
        let (left, top) = (try #require(rect[0]?.doubleValue), try #require(rect[1]?.doubleValue))
        let (scaleX, scaleY) = (try #require(rect[2]?.doubleValue), try #require(rect[3]?.doubleValue))
        try await ada.mouse("mouseMoved", x: left + 420 * scaleX, y: top + 300 * scaleY)

        // Bo sees Ada's pointer and selection, with her name, and draws them.
        let adaThere = """
            [...contrailDemo.presence.peers.values()].find((p) => p.value.name === 'Ada' && p.value.selected === '\(shapeID)'
              && Array.isArray(p.value.pointer) && Math.abs(p.value.pointer[0] - 420) <= 2 && Math.abs(p.value.pointer[1] - 300) <= 2)
            """
        try await front(bo)
        let seen = try await bo.waitFor("!!(\(adaThere))", result: "(\(adaThere)).value")
        let colour = try #require(seen["color"]?.stringValue)
        // The pointer's arrow is filled in Ada's colour on Bo's canvas, under her pointer.
        let pixel = try await bo.waitFor("""
            (() => { const d = document.getElementById('canvas').getContext('2d').getImageData(425, 307, 1, 1).data;
                     return '#' + [d[0], d[1], d[2]].map((n) => n.toString(16).padStart(2, '0')).join('') === '\(colour)'; })()
            """)
        #expect(pixel == true)
        #expect(await eventually(.seconds(60)) { scope.presence.peers.contains { $0.value["name"] == "Ada" } },
                "the Swift client sees the window too")
        #expect(try await ada.evaluate("contrailDemo.presence.peers.size") == 1, "Ada sees Bo (who has not moved: no pointer)")

        // Ada's window closes: she leaves, for Bo and for Swift.
        let targets = try await devTools.call("Target.getTargets")
        let adaTarget = try #require(targets["targetInfos"]?.arrayValue?.first { $0["url"]?.stringValue?.hasSuffix("&name=Ada") == true })
        _ = try await devTools.call("Target.closeTarget", ["targetId": try #require(adaTarget["targetId"])])
        _ = try await bo.waitFor("![...contrailDemo.presence.peers.values()].some((p) => p.value.name === 'Ada')")
        #expect(await eventually(.seconds(60)) { !scope.presence.peers.contains { $0.value["name"] == "Ada" } })
        withExtendedLifetime(watcher) {}
    }
}
