import Contrail
import ContrailTestSupport
import ContrailWebSocket
import Foundation
import Testing

/// The canvas models of the README and the Playground, as the browser demo edits them. Named apart
/// from other test targets' `Canvas` and `Shape` (one test binary, one class registry); the demo is
/// told these names with `?canvasClass=&shapeClass=`.
final class BrowserCanvas: ModelObject {
    @Property var name: String?
    @Property var shapes: [BrowserShape] = []
}

final class BrowserShape: ModelObject {
    @Property var x: Double = 0
    @Property var y: Double = 0
    @Property var width: Double = 100
    @Property var height: Double = 100
    @Property var color = ModelColor.red
}

/// The demo's canvas with its shared caption (`demo-caption.js`, Protocol §8.21), edited from Swift.
final class BrowserCaptionCanvas: ModelObject {
    @Property var name: String?
    @Property var shapes: [BrowserShape] = []
    @Property var caption = SharedText()
}

/// Headless Chromium with remote debugging on a free loopback port, in a throw-away profile.
final class HeadlessChromium: Sendable {
    let process: Process
    let profile: URL
    /// The browser's DevTools WebSocket URL.
    let devToolsURL: String
    /// Finishes when the browser process has exited.
    private let exited: AsyncStream<Void>

    typealias Failure = TestFailure

    /// Starts the browser and waits (bounded) for its "DevTools listening on ws://…" line.
    static func launch(_ executable: String, timeout: Duration = .seconds(60)) async throws -> HeadlessChromium {
        let profile = FileManager.default.temporaryDirectory.appending(path: "contrail-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        let process = Process()
        let arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                             "--no-default-browser-check", "--hide-scrollbars", "--window-size=1100,720",
                             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                             "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                             "--disable-sync", "--mute-audio", "--user-data-dir=\(profile.path)", "about:blank"]
        (process.executableURL, process.arguments) = politely(executable, arguments)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let exited = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in exited.continuation.finish() }
        let lines = AsyncStream<String>.makeStream()
        let buffer = SanitizerVisibleMutex([UInt8]())
        let drain: @Sendable (Data) -> Void = { data in
            if data.isEmpty {
                lines.continuation.finish()
                return
            }
            let complete: [String] = buffer.withLock { bytes in
                bytes += data
                var found: [String] = []
                while let newline = bytes.firstIndex(of: 10) {
                    found.append(String(decoding: bytes[..<newline], as: UTF8.self))
                    bytes.removeSubrange(...newline)
                }
                return found
            }
            for line in complete { lines.continuation.yield(line) }
        }
        try process.run()
        PipeReader.drain(errors.fileHandleForReading, drain)
        let deadline = Task {
            try await Task.sleep(for: timeout)
            lines.continuation.finish()
        }
        defer { deadline.cancel() }
        var seen: [String] = []
        for await line in lines.stream {
            if let range = line.range(of: "DevTools listening on ") {
                return HeadlessChromium(process: process, profile: profile, devToolsURL: String(line[range.upperBound...]),
                                        exited: exited.stream)
            }
            seen.append(line)
        }
        kill(process.processIdentifier, SIGKILL)
        throw Failure(description: "Chromium printed no DevTools URL within \(timeout):\n\(seen.suffix(20).joined(separator: "\n"))")
    }

    private init(process: Process, profile: URL, devToolsURL: String, exited: AsyncStream<Void>) {
        self.process = process
        self.profile = profile
        self.devToolsURL = devToolsURL
        self.exited = exited
    }

    /// Kills the browser (SIGKILL), awaits its exit and removes its profile. Never blocks a thread
    /// (`Process.waitUntilExit` would spin the calling thread's run loop, on the main actor too).
    func stop() async {
        kill(process.processIdentifier, SIGKILL)
        for await _ in exited {}
        try? FileManager.default.removeItem(at: profile)
    }
}

/// A Chrome DevTools Protocol client over our own WebSocket client: one request at a time per id,
/// replies matched by id, sessions of attached pages flattened onto the browser connection.
actor DevTools {
    private let connection: WebSocketConnection
    private var nextID = 0
    private var waiting: [Int: CheckedContinuation<JSON, any Error>] = [:]
    private var ended: (any Error)?

    typealias Failure = TestFailure

    init(url: String) async throws {
        var options = WebSocketOptions()
        options.connectTimeout = .seconds(30)
        connection = try await WebSocketConnection.connect(to: url, options: options)
        let connection = self.connection
        Task { [weak self] in
            do {
                for try await message in connection.messages {
                    guard case .text(let text) = message, let json = try? JSON(parsing: text) else { continue }
                    await self?.deliver(json)
                }
                await self?.end(Failure(description: "the DevTools connection closed"))
            } catch {
                await self?.end(error)
            }
        }
    }

    private func deliver(_ json: JSON) {
        guard let id = json["id"]?.int64Value, let waiter = waiting.removeValue(forKey: Int(id)) else { return }
        if let error = json["error"] {
            waiter.resume(throwing: Failure(description: "DevTools error: \(error.jsonString)"))
        } else {
            waiter.resume(returning: json["result"] ?? .null)
        }
    }

    private func end(_ error: any Error) {
        ended = error
        for waiter in waiting.values { waiter.resume(throwing: error) }
        waiting = [:]
    }

    private func expire(_ id: Int, _ method: String, _ timeout: Duration) {
        waiting.removeValue(forKey: id)?.resume(throwing: Failure(description: "\(method) got no answer within \(timeout)"))
    }

    /// Sends one command and returns its result (bounded by `timeout`).
    func call(_ method: String, _ params: JSON = [:], session: String? = nil, timeout: Duration = .seconds(30)) async throws -> JSON {
        if let ended { throw ended }
        nextID += 1
        let id = nextID
        var message: [String: JSON] = ["id": .int(Int64(id)), "method": .string(method), "params": params]
        if let session { message["sessionId"] = .string(session) }
        let text = JSON.object(message).jsonString
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.expire(id, method, timeout)
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            waiting[id] = continuation
            Task {
                do { try await connection.send(.text(text)) } catch { self.fail(id, error) }
            }
        }
    }

    private func fail(_ id: Int, _ error: any Error) {
        waiting.removeValue(forKey: id)?.resume(throwing: error)
    }

    /// Opens a new page at `url` and returns its session.
    func openPage(_ url: String) async throws -> BrowserPage {
        let target = try await call("Target.createTarget", ["url": "about:blank"])
        let targetID = try #require(target["targetId"]?.stringValue)
        let attached = try await call("Target.attachToTarget", ["targetId": .string(targetID), "flatten": true])
        let page = BrowserPage(devTools: self, session: try #require(attached["sessionId"]?.stringValue))
        _ = try await call("Page.navigate", ["url": .string(url)], session: page.session)
        return page
    }

    /// Closes the connection.
    func close() async {
        await connection.close()
    }
}

/// One page of the browser, driven through its DevTools session.
struct BrowserPage: Sendable {
    let devTools: DevTools
    let session: String

    /// Evaluates `expression` (awaiting a promise) and returns its value as JSON.
    func evaluate(_ expression: String, timeout: Duration = .seconds(30)) async throws -> JSON {
        let result = try await devTools.call("Runtime.evaluate", ["expression": .string(expression), "awaitPromise": true,
                                                                  "returnByValue": true], session: session, timeout: timeout)
        if let details = result["exceptionDetails"] {
            throw DevTools.Failure(description: "page script failed: \(details["exception"]?["description"]?.stringValue ?? details.jsonString)")
        }
        return result["result"]?["value"] ?? .null
    }

    /// Resolves in the page once `condition` (a JS expression) is true, re-checked every animation
    /// frame; fails in the page after `ms`. Returns the value of `result` (a JS expression) then.
    func waitFor(_ condition: String, result: String = "true", ms: Int = 60_000) async throws -> JSON {
        try await evaluate("""
            new Promise((resolve, reject) => {
              const started = performance.now();
              const check = () => {
                let ok = false;
                try { ok = (\(condition)); } catch (e) {}
                if (ok) resolve(\(result));
                else if (performance.now() - started > \(ms)) reject(new Error("not within \(ms) ms: " + \(jsString(condition))));
                else requestAnimationFrame(check);
              };
              check();
            })
            """, timeout: .milliseconds(ms + 20_000))
    }

    /// A mouse event at page coordinates (CSS pixels).
    func mouse(_ type: String, x: Double, y: Double) async throws {
        _ = try await devTools.call("Input.dispatchMouseEvent", ["type": .string(type), "x": .double(x), "y": .double(y),
                                                                  "button": "left", "buttons": type == "mouseReleased" ? 0 : 1,
                                                                  "clickCount": 1], session: session)
    }

    /// Types `text` as key presses (keyDown with the character, keyUp), one character at a time,
    /// into the focused element, as a keyboard would.
    func type(_ text: String) async throws {
        for character in text {
            let key = String(character)
            _ = try await devTools.call("Input.dispatchKeyEvent", ["type": "keyDown", "key": .string(key), "text": .string(key),
                                                                   "unmodifiedText": .string(key)], session: session)
            _ = try await devTools.call("Input.dispatchKeyEvent", ["type": "keyUp", "key": .string(key)], session: session)
        }
    }

    /// Presses and releases a key that types nothing (`End`, `Home`, …), by its DOM key name and
    /// Windows virtual key code.
    func press(_ key: String) async throws {
        let codes = ["End": 35, "Home": 36, "ArrowLeft": 37, "ArrowRight": 39]
        let code = JSON.int(Int64(codes[key] ?? 0))
        for type in ["rawKeyDown", "keyUp"] {
            _ = try await devTools.call("Input.dispatchKeyEvent", ["type": .string(type), "key": .string(key), "code": .string(key),
                                                                   "windowsVirtualKeyCode": code], session: session)
        }
    }

    /// A left click (press and release) at page coordinates.
    func click(x: Double, y: Double) async throws {
        try await mouse("mousePressed", x: x, y: y)
        try await mouse("mouseReleased", x: x, y: y)
    }

    /// A PNG screenshot of the viewport.
    func screenshot() async throws -> Data {
        let result = try await devTools.call("Page.captureScreenshot", ["format": "png"], session: session)
        let text = try #require(result["data"]?.stringValue)
        return try #require(Data(base64Encoded: text))
    }
}

/// `text` as a JavaScript string literal.
func jsString(_ text: String) -> String {
    JSON.string(text).jsonString
}

/// Decodes `png` in a blank page of the browser (no app code involved) and returns the RGBA of each point.
func pixels(of png: Data, at points: [(Int, Int)], using devTools: DevTools) async throws -> [[Int]] {
    let page = try await devTools.openPage("about:blank")
    let list = points.map { "[\($0.0),\($0.1)]" }.joined(separator: ",")
    let value = try await page.evaluate("""
        (async () => {
          const image = new Image();
          image.src = "data:image/png;base64,\(png.base64EncodedString())";
          await image.decode();
          const canvas = document.createElement("canvas");
          canvas.width = image.width; canvas.height = image.height;
          const context = canvas.getContext("2d");
          context.drawImage(image, 0, 0);
          return [\(list)].map(([x, y]) => Array.from(context.getImageData(x, y, 1, 1).data));
        })()
        """)
    return (value.arrayValue ?? []).map { ($0.arrayValue ?? []).compactMap { $0.int64Value.map(Int.init) } }
}

/// The screenshots the README shows: Tests/ContrailServerTests/Screenshots.
let readmeScreenshots = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Screenshots")

/// Writes a screenshot when `CONTRAIL_SCREENSHOTS` is set, else nowhere: `CONTRAIL_SCREENSHOTS=readme`
/// replaces the README's (`CONTRAIL_SCREENSHOTS=readme swift test --filter BrowserTests`), any other
/// value is the directory to write into.
func keepScreenshot(_ png: Data, named name: String) {
    guard let setting = ProcessInfo.processInfo.environment["CONTRAIL_SCREENSHOTS"], !setting.isEmpty else { return }
    let directory = setting == "readme" ? readmeScreenshots : URL(filePath: setting)
    try? png.write(to: directory.appending(path: name))
}
