import Contrail
import ContrailTestSupport
import Foundation
import ContrailSupport
import Testing

/// The original Jetstream (Node server 0.13.3 and its JS client), rebuilt by
/// `../shared/tools/jetstream-originals/setup.sh`, run as child processes on loopback ports for the
/// interop suite. It runs on request (`JETSTREAM_ORIGINALS=1`) when `node` is on PATH and the
/// environment holds what the setup's `env.sh` exports (`JETSTREAM_DIR`, `INTEROP_DIR`, `NODE_PATH`).
/// Run it alone (`--filter JetstreamOriginals`): its models take the wire names "Canvas" and "Shape",
/// which other suites' models use in the same test process (one class registry).
enum JetstreamOriginals {
    static let environment = ProcessInfo.processInfo.environment

    /// Why the suite does not run here, or nil when it does.
    static var unavailableReason: String? {
        guard environment["JETSTREAM_ORIGINALS"] == "1" else { return "JETSTREAM_ORIGINALS=1 is not set" }
        guard let node = executableOnPath("node") else { return "node is not on PATH" }
        for name in ["JETSTREAM_DIR", "INTEROP_DIR", "NODE_PATH"] where environment[name]?.isEmpty ?? true {
            return "\(name) is not set: run jetstream-originals/setup.sh and source its env.sh (node: \(node))"
        }
        return nil
    }

    /// Registers the Swift side's models under the original's class names, and fails clearly when
    /// another suite's models hold those names in this process.
    @MainActor
    static func registerModels() throws {
        ModelRegistry.register(OriginalCanvas.self, OriginalShape.self)
        let holders = try ["Canvas", "Shape"].map { try ModelRegistry.modelClass(named: $0) }
        guard holders[0] == OriginalCanvas.self, holders[1] == OriginalShape.self else {
            throw TestFailure("other models hold the wire names Canvas and Shape in this process: run this suite alone (swift test --filter JetstreamOriginals)")
        }
    }

    /// A script of `INTEROP_DIR/app`.
    static func script(_ name: String) -> String {
        "\(environment["INTEROP_DIR"] ?? "")/app/\(name)"
    }
}

/// One Node child (`node SCRIPT ARGUMENTS`), its port read from the line it prints once
/// listening. Killed (SIGKILL) by `stop()` or when released.
final class NodeChild: Sendable {
    let port: UInt16
    private let child: ChildProcess

    /// Starts the child and waits (bounded) for `"<marker>127.0.0.1:<port>"` in its output.
    init(script: String, arguments: [String], marker: String, timeout: Duration = .seconds(30)) async throws {
        let (executable, arguments) = politely(executableOnPath("node") ?? "node", [script] + arguments)
        child = try ChildProcess(executable, arguments)
        port = try await child.port(after: "\(marker)127.0.0.1:", terminator: { !$0.isNumber }, timeout: timeout)
    }

    /// Everything the child printed so far.
    var output: String { child.text }

    /// Kills the child (SIGKILL).
    func stop() {
        child.signal()
    }
}

/// Plain HTTP to a Node child's control endpoints (they answer JSON).
enum NodeHTTP {
    /// `GET path` as JSON.
    static func get(_ port: UInt16, _ path: String) async throws -> JSON {
        let response = try await PagesHTTP.request(port: port, path: path, extraHeaders: "Connection: close\r\n")
        return try JSON(parsing: response.body)
    }

    /// `POST path` with a JSON body, as JSON (the status must be 200).
    static func post(_ port: UInt16, _ path: String, _ body: JSON) async throws -> JSON {
        let payload = body.jsonString
        let text = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(payload.utf8.count)\r\n\r\n\(payload)"
        let response = try await PagesHTTP.exchange(port: port, bytes: Array(text.utf8))
        guard response.status == 200 else { throw TestFailure("POST \(path) \(payload): \(response.status) \(response.text)") }
        return try JSON(parsing: response.body)
    }

    /// Polls `GET path` until `condition` holds (bounded); returns the last answer.
    static func poll(_ port: UInt16, _ path: String, timeout: Duration = .seconds(30),
                     until condition: @Sendable (JSON) -> Bool) async throws -> JSON {
        let deadline = ContinuousClock.now + timeout
        while true {
            let answer = try await get(port, path)
            if condition(answer) || ContinuousClock.now > deadline { return answer }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// One original JS client (`js-peer.js`) on scope "Canvas" at `url`, driven over HTTP.
struct OriginalJSPeer {
    let child: NodeChild

    /// Starts the peer and waits (bounded) until it has fetched "Canvas".
    static func start(url: String) async throws -> OriginalJSPeer {
        let peer = OriginalJSPeer(child: try await NodeChild(script: JetstreamOriginals.script("js-peer.js"), arguments: [url, "0"],
                                                             marker: "control on "))
        let state = try await peer.state { $0["fetched"]?.isNull == false }
        guard state["fetched"]?["error"]?.isNull ?? true else {
            throw TestFailure("the JS peer could not fetch: \(state)")
        }
        return peer
    }

    /// The peer's canvas (`{uuid, name, shapes: [{uuid, x, …, createdAt: {date}}]}`), once `condition` holds.
    func state(until condition: @Sendable (JSON) -> Bool = { _ in true }) async throws -> JSON {
        try await NodeHTTP.poll(child.port, "/state", until: condition)
    }

    /// Makes a change (`{op, …}`, see js-peer.js) and returns `{uuid?, changeSet}` once it settled.
    func perform(_ command: JSON) async throws -> JSON {
        try await NodeHTTP.post(child.port, "/do", command)
    }

    /// The shape `uuid` in a canvas state.
    static func shape(_ uuid: String, in state: JSON) -> JSON? {
        state["shapes"]?.arrayValue?.first { $0["uuid"]?.stringValue == uuid }
    }
}

/// The original server's demo scope's classes ("Canvas" and "Shape" on the wire), in Swift.
final class OriginalCanvas: ModelObject {
    override class var className: String { "Canvas" }
    @Property var name: String?
    @Property var shapes: [OriginalShape] = []
}

/// A shape of the original server's demo scope, every value type it has.
final class OriginalShape: ModelObject {
    override class var className: String { "Shape" }
    @Property var x: Double?
    @Property var y: Double?
    @Property var width: Double?
    @Property var height: Double?
    @Property var color: Int?
    @Property var kind: String?
    @Property var createdAt: Date?
    @Property var visible: Bool?
    @Property var label: String?
}
