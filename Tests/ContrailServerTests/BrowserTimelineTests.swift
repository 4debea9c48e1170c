import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// The inspector's timeline (issue 26, item 3) in headless Chromium: scrubbed back, the tree shows
/// the scope as it was with the change sets that led there; at the end of the slider the live tree
/// returns; the admin token stays out of the page and its address.
extension BrowserTests {
    @Test(.enabled(if: chromium != nil, "needs Chromium (`chromium` on PATH); .ci/run installs the Debian package"),
          .timeLimit(.minutes(5)))
    func inspectorTimelineScrubsToAnEarlierTree() async throws {
        let admin = "admin-\(UUID().uuidString)"
        let name = "Timeline-\(UUID().uuidString.prefix(8))"
        let data = AdminTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let rig = try await Rig.start(scopeName: name, chromium: try #require(Self.chromium), token: admin) { options in
            options.dataDirectory = data
            options.historyRetention = .seconds(86_400)
            options.sessionHook = { params, _ in params["token"] == .string(admin) ? .allowEverything : .deny(reason: "wrong token") }
        }
        do {
            rig.canvas.name = "first title"
            #expect(await eventually(.seconds(60)) { rig.client.session?.pendingChangeSets == 0 })
            rig.canvas.name = "second title"
            #expect(await eventually(.seconds(60)) { rig.client.session?.pendingChangeSets == 0 })
            let history = try await rig.server.history(of: name)
            let first = try #require(history.entries.last { entry in
                (entry.fragments.arrayValue ?? []).contains { $0["properties"]?["name"] == "first title" }
            }).sequence
            #expect(first < history.latest)

            let page = try await rig.devTools.openPage("http://127.0.0.1:\(rig.port)/?scope=\(name)#token=\(admin)")
            let tree = "document.getElementById('tree').textContent"
            _ = try await page.waitFor("\(tree).includes('\"second title\"')")
            _ = try await page.waitFor("Number(document.querySelector('#timeline input').max) === \(history.latest)")
            // Scrub back: the slider's value and its input event, as a drag sets them.
            _ = try await page.evaluate("(() => { const s = document.querySelector('#timeline input'); s.value = '\(first)'; s.dispatchEvent(new Event('input')); })()")
            _ = try await page.waitFor("\(tree).includes('\"first title\"') && !\(tree).includes('\"second title\"')")
            let label = try await page.evaluate("document.querySelector('#timeline .point').textContent").stringValue ?? ""
            #expect(label.contains("after change set \(first) of \(history.latest)"), "\(label)")
            let rows = try await page.evaluate("document.querySelectorAll('#changes .changeset').length").int64Value
            #expect(rows == Int64(first), "the change sets that led there")
            // A change arriving meanwhile does not replace the past tree.
            rig.canvas.name = "third title"
            #expect(await eventually(.seconds(60)) { rig.client.session?.pendingChangeSets == 0 })
            #expect(try await page.evaluate("\(tree).includes('\"first title\"')") == .bool(true))
            // Back at the end: the live tree.
            try await page.click(selector: "#timeline button")
            _ = try await page.waitFor("\(tree).includes('\"third title\"')")
            #expect(try await page.evaluate("location.href.includes(\(jsString(admin))) || document.documentElement.outerHTML.includes(\(jsString(admin)))") == .bool(false))
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }
}
