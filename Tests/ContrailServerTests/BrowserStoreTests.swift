import Contrail
import ContrailServer
import ContrailTestSupport
import Foundation
import Testing

/// The browser keeps what it has not sent (issue 23, contrail-store.js): `/demo` in headless Chromium
/// edits while its server is down, the tab is reloaded (and fails: no server), the server comes back
/// on the same port and data directory, the demo is loaded again: every offline edit reaches the
/// server, and a change set the server had applied before is not applied twice. Without the store
/// (`?persist=0`) the same edits are lost; a damaged store is reported on the page, not a crash.
@MainActor @Suite(.serialized) struct BrowserStoreTests {
    nonisolated static let chromium = BrowserTests.chromium

    /// A server with a data directory on `port` (0: a free one), a browser, and the demo's URL for a fresh scope.
    @MainActor final class Rig {
        let data: URL
        let name = "Stored-\(UUID().uuidString.prefix(8))"
        var server: ContrailServer?
        var port: UInt16 = 0
        let browser: HeadlessChromium
        let devTools: DevTools

        init(chromium: String) async throws {
            data = FileManager.default.temporaryDirectory.appending(path: "contrail-store-\(UUID().uuidString)")
            browser = try await HeadlessChromium.launch(chromium)
            do {
                devTools = try await DevTools(url: browser.devToolsURL)
            } catch {
                await browser.stop()
                throw error
            }
        }

        /// Starts the server (again: same port, same data directory).
        func startServer() async throws {
            let port = self.port
            let data = self.data
            let configure: @Sendable (inout ServerOptions) -> Void = { options in
                options.dataDirectory = data
                options.port = port
            }
            let (server, started) = try await startPageServer(configure: configure)
            self.server = server
            self.port = started
        }

        func stopServer() async {
            await server?.stop()
            server = nil
        }

        func demoURL(_ extra: String = "") -> String {
            "http://127.0.0.1:\(port)/demo?scope=\(name)&canvasClass=BrowserCanvas&shapeClass=BrowserShape\(extra)"
        }

        /// The shapes of the server's scope, in order.
        func serverShapes() async throws -> [String] {
            let state = try #require(await server?.state(ofScope: name))
            let root = try #require(state["root"]?.stringValue)
            return state["objects"]?[root]?["properties"]?["shapes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }

        func stop() async {
            await devTools.close()
            await browser.stop()
            await stopServer()
            try? FileManager.default.removeItem(at: data)
        }
    }

    /// Runs `body` with a rig whose server is started, stopping everything however `body` ends.
    private func withRig(_ body: (Rig) async throws -> Void) async throws {
        let rig = try await Rig(chromium: try #require(Self.chromium))
        do {
            try await rig.startServer()
            try await body(rig)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// Navigates `page` to `url` and waits (bounded) until that document is the one scripts run in.
    private func load(_ page: BrowserPage, _ url: String) async throws {
        _ = try await page.devTools.call("Page.navigate", ["url": .string(url)], session: page.session)
        let loaded = await eventually(.seconds(60)) {
            (try? await page.evaluate("location.href === \(jsString(url)) && document.readyState !== 'loading'")) == .bool(true)
        }
        try #require(loaded, "\(url) loaded")
    }

    /// The demo on `page` once fetched, its store open and nothing waiting to be sent; when it does
    /// not get there, the error says where the page stands.
    private func waitUntilSynced(_ page: BrowserPage, store: Bool = true) async throws {
        do {
            _ = try await page.waitFor("window.contrailDemo && contrailDemo.fetched \(store ? "&& contrailDemo.store" : "")"
                + " && contrailDemo.scope.queue.length === 0 && contrailDemo.scope._pending.size === 0")
        } catch {
            let state = try? await page.evaluate("""
                JSON.stringify(window.contrailDemo ? { href: location.href, status: contrailDemo.client.status, fetched: contrailDemo.fetched,
                  store: Boolean(contrailDemo.store), storeError: String(contrailDemo.storeError?.message), queue: contrailDemo.scope.queue.length,
                  pending: contrailDemo.scope._pending.size, lastError: String(contrailDemo.store?.lastError?.message) } : { href: location.href })
                """)
            throw TestFailure("\(error); the page: \(state?.stringValue ?? "unreadable")")
        }
    }

    /// Runs `script` with `db`, the demo origin's IndexedDB database "contrail" (its store "scopes").
    private func withDatabase(_ page: BrowserPage, _ script: String) async throws -> JSON {
        try await page.evaluate("""
            new Promise((resolve, reject) => {
              const request = indexedDB.open("contrail", 1);
              request.onupgradeneeded = () => request.result.createObjectStore("scopes");
              request.onerror = () => reject(request.error);
              request.onsuccess = async () => {
                const db = request.result;
                const run = (mode, fn) => new Promise((ok, fail) => {
                  const t = db.transaction("scopes", mode); const r = fn(t.objectStore("scopes"));
                  t.oncomplete = () => ok(r.result); t.onabort = () => fail(t.error);
                });
                try { resolve(await (async () => { \(script) })()); } catch (e) { reject(e); } finally { db.close(); }
              };
            })
            """)
    }

    @Test(.enabled(if: chromium != nil, "needs Chromium (`chromium` on PATH); .ci/run installs the Debian package"),
          .timeLimit(.minutes(5)))
    func offlineEditsSurviveAReloadAndArriveOnce() async throws {
        try await withRig { rig in
            let page = try await rig.devTools.openPage("about:blank")
            try await load(page, rig.demoURL())
            try await waitUntilSynced(page)
            let a = try #require(try await page.evaluate("contrailDemo.addShape({x: 40, y: 40, color: 0xe74c3cff}).uuid").stringValue)
            // A change set the server applies, kept as the store saved it while it was unsettled (as a tab
            // closed before the reply would leave it); then its shape is deleted.
            // Taken in the same turn as the edit: its reply cannot have settled it yet.
            let made = try await page.evaluate("""
                (() => { const z = contrailDemo.addShape({x: 300, y: 40}); return [z.uuid, JSON.stringify(contrailDemo.scope._saved().queue.at(-1))]; })()
                """)
            let z = try #require(made[0]?.stringValue)
            let zChangeSet = try #require(made[1])
            try #require(zChangeSet.stringValue != nil, "the change set of \(z) is in the queue")
            try await waitUntilSynced(page)
            _ = try await page.evaluate("contrailDemo.scope.modify(() => contrailDemo.scope.root.remove('shapes', contrailDemo.scope.object('\(z)')))")
            try await waitUntilSynced(page)
            #expect(try await rig.serverShapes() == [a])

            // The server goes away; the page edits offline and its store saves the edits.
            await rig.stopServer()
            _ = try await page.waitFor("contrailDemo.client.status !== 'online'")
            let b = try #require(try await page.evaluate("contrailDemo.addShape({x: 60, y: 200}).uuid").stringValue)
            let c = try #require(try await page.evaluate("contrailDemo.addShape({x: 300, y: 200}).uuid").stringValue)
            _ = try await page.evaluate("contrailDemo.scope.modify(() => contrailDemo.scope.object('\(a)').set('color', 0x3498dbff))")
            #expect(try await page.evaluate("contrailDemo.scope.queue.length") == .int(3), "three change sets wait")
            _ = try await page.evaluate("contrailDemo.store.close()")  // saved, and released for the next page
            // The applied change set, unsettled in the store as if its reply never came.
            _ = try await withDatabase(page, """
                const record = JSON.parse(await run("readonly", (s) => s.get(\(jsString(rig.name)))));
                record.saved.queue.unshift(JSON.parse(\(zChangeSet.jsonString)));
                await run("readwrite", (s) => s.put(JSON.stringify(record), \(jsString(rig.name))));
                """)

            // The tab is reloaded while the server is down: the page is gone, and its memory with it.
            _ = try await page.devTools.call("Page.navigate", ["url": .string(rig.demoURL())], session: page.session)
            #expect(await eventually(.seconds(60)) { (try? await page.evaluate("typeof window.contrailDemo")) == .string("undefined") })

            // The server comes back; the demo is loaded again: it restores the four change sets and sends them.
            try await rig.startServer()
            try await load(page, rig.demoURL())
            try await waitUntilSynced(page)
            #expect(try await page.evaluate("JSON.stringify(contrailDemo.store.restored)") == .string(#"{"objects":4,"changeSets":4}"#))
            #expect(try await rig.serverShapes() == [a, b, c], "every offline edit arrived, and the applied one was not applied again")
            let state = try #require(await rig.server?.state(ofScope: rig.name))
            #expect(state["objects"]?[a]?["properties"]?["color"]?.doubleValue == Double(0x3498_dbff))
            let browserText = try #require(try await page.evaluate("contrailDemo.state()").stringValue)
            #expect(comparableState(try JSON(parsing: browserText)) == comparableState(state), "the browser equals the server")

            // Control: the same change set under a new id is a new change set, and brings the deleted shape back.
            _ = try await page.evaluate("contrailDemo.store.close()")
            _ = try await withDatabase(page, """
                const record = JSON.parse(await run("readonly", (s) => s.get(\(jsString(rig.name)))));
                record.saved.queue.push({ ...JSON.parse(\(zChangeSet.jsonString)), id: crypto.randomUUID() });
                await run("readwrite", (s) => s.put(JSON.stringify(record), \(jsString(rig.name))));
                """)
            try await load(page, rig.demoURL() + "&again")
            try await waitUntilSynced(page)
            #expect(try await rig.serverShapes().contains(z), "a change set with a new id is applied: the check above can fail")
        }
    }

    @Test(.enabled(if: chromium != nil, "needs Chromium (`chromium` on PATH); .ci/run installs the Debian package"),
          .timeLimit(.minutes(5)))
    func withoutTheStoreAReloadLosesOfflineEdits() async throws {
        try await withRig { rig in
            let page = try await rig.devTools.openPage("about:blank")
            try await load(page, rig.demoURL("&persist=0"))
            try await waitUntilSynced(page, store: false)
            let a = try #require(try await page.evaluate("contrailDemo.addShape({x: 40, y: 40}).uuid").stringValue)
            try await waitUntilSynced(page, store: false)
            await rig.stopServer()
            _ = try await page.waitFor("contrailDemo.client.status !== 'online'")
            _ = try await page.evaluate("contrailDemo.addShape({x: 60, y: 200}).uuid")
            #expect(try await page.evaluate("contrailDemo.scope.queue.length") == .int(1))
            _ = try await page.devTools.call("Page.navigate", ["url": .string(rig.demoURL("&persist=0"))], session: page.session)
            #expect(await eventually(.seconds(60)) { (try? await page.evaluate("typeof window.contrailDemo")) == .string("undefined") })
            try await rig.startServer()
            try await load(page, rig.demoURL("&persist=0&again"))
            try await waitUntilSynced(page, store: false)
            #expect(try await rig.serverShapes() == [a], "the offline shape was only in the page's memory")
            #expect(try await page.evaluate("JSON.stringify(contrailDemo.scope.root.get('shapes'))") == .string("[\"\(a)\"]"))
        }
    }

    @Test(.enabled(if: chromium != nil, "needs Chromium (`chromium` on PATH); .ci/run installs the Debian package"),
          .timeLimit(.minutes(5)))
    func aDamagedStoreIsReportedOnThePageWhichGoesOnWithoutIt() async throws {
        try await withRig { rig in
            let page = try await rig.devTools.openPage("about:blank")
            try await load(page, rig.demoURL("&persist=0"))
            try await waitUntilSynced(page, store: false)
            _ = try await withDatabase(page, "await run(\"readwrite\", (s) => s.put('{\"format\": \"contrail-scope\", trunc', \(jsString(rig.name))));")
            try await load(page, rig.demoURL())
            _ = try await page.waitFor("window.contrailDemo && contrailDemo.fetched && contrailDemo.storeError")
            let note = try await page.evaluate("document.getElementById('store-status').textContent").stringValue ?? ""
            #expect(note.contains("not kept in this browser") && note.contains("unusable (not JSON)"), "the page says why: \(note)")
            #expect(try await page.evaluate("contrailDemo.storeError.reason") == .string("damaged"))
            // The page still works online, and the damaged record is left as it was.
            let shape = try #require(try await page.evaluate("contrailDemo.addShape({x: 40, y: 40}).uuid").stringValue)
            try await waitUntilSynced(page, store: false)
            #expect(try await rig.serverShapes() == [shape])
            let stored = try await withDatabase(page, "return await run(\"readonly\", (s) => s.get(\(jsString(rig.name))));")
            #expect(stored == .string(#"{"format": "contrail-scope", trunc"#))
        }
    }
}
