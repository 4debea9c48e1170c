@testable import ContrailWire
import Foundation
import Testing

/// `ScopeSyncDecoder` (a server's one-pass reading of `ScopeSync` frames) against the general
/// path (`JSON(parsing:)` then `MessageFrame.decodeEach`): wherever it reads a frame it must give
/// what the general path gives, and it must hand on every frame it does not read.
@Suite struct ScopeSyncDecoderTests {
    private static let uuid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

    /// The fast path's answer: nil when it hands the frame on.
    private static func fast(_ text: String, limits: JSONLimits = JSONLimits()) -> [ScopeSync]? {
        var text = text
        return text.withUTF8 { ScopeSyncDecoder.decode(UnsafeRawBufferPointer($0), limits: limits) }
    }

    /// The general path's syncs, nil when it fails or finds anything but valid `ScopeSync`s.
    private static func general(_ text: String, limits: JSONLimits = JSONLimits()) -> [ScopeSync]? {
        guard let json = try? JSON(parsing: text, limits: limits), let results = try? MessageFrame.decodeEach(json) else { return nil }
        var syncs: [ScopeSync] = []
        for result in results {
            guard case .success(.scopeSync(let sync)) = result else { return nil }
            syncs.append(sync)
        }
        return syncs
    }

    @Test func readsWhatClientsSend() throws {
        let benchWriter = #"{"type":"ScopeSync","index":7,"scopeIndex":1,"atomic":false,"fragments":"#
            + #"[{"type":"change","uuid":"\#(Self.uuid)","clsName":"Shape","properties":{"x":12}}]}"#
        let swiftClient = MessageFrame.encode([.scopeSync(ScopeSync(
            index: 3, scopeIndex: 0,
            fragments: [SyncFragment(kind: .add, uuid: UUID(), className: "Shape",
                                     properties: ["x": .int(1), "name": .string("é \"q\""), "tags": .array([.string("a"), .null]),
                                                  "ratio": .double(0.5), "big": .uint(UInt64.max), "on": .bool(true), "none": .null])],
            atomic: true, changeSetID: UUID()))], asArray: false)
        let twoInAnArray = "[" + benchWriter + ", " + benchWriter.replacingOccurrences(of: #""index":7"#, with: #""index":5"#) + "]"
        let spaced = "\n [ {\"fragments\" : [ ] , \"scopeIndex\":2,\t\"type\":\"ScopeSync\", \"index\":1.0 } ] \r\n"
        for text in [benchWriter, swiftClient, twoInAnArray, spaced] {
            let read = try #require(Self.fast(text), "the fast path handed on \(text)")
            #expect(read == Self.general(text), "\(text)")
        }
        #expect(Self.fast(twoInAnArray)?.map(\.index) == [7, 5])  // frame order; the session sorts
        #expect(Self.fast(swiftClient)?.first?.changeSetID != nil)
    }

    @Test func handsOnWhatItDoesNotRead() throws {
        let valid = #"{"type":"ScopeSync","index":7,"scopeIndex":1,"fragments":[{"type":"change","uuid":"\#(Self.uuid)","clsName":"Shape","properties":{"x":1}}]}"#
        #expect(Self.fast(valid) != nil)  // positive control
        let handedOn: [(String, String)] = [
            ("a procedure", valid.replacingOccurrences(of: #""index":7"#, with: #""index":7,"atomic":true,"procedure":"A.b""#)),
            ("another member", valid.replacingOccurrences(of: #""index":7"#, with: #""index":7,"extra":1"#)),
            ("a repeated member", valid.replacingOccurrences(of: #""index":7"#, with: #""index":7,"index":8"#)),
            ("another message", valid.replacingOccurrences(of: "\"ScopeSync\"", with: "\"Ping\"")),
            ("a bad index", valid.replacingOccurrences(of: #""index":7"#, with: #""index":-7"#)),
            ("a fractional scope index", valid.replacingOccurrences(of: #""scopeIndex":1"#, with: #""scopeIndex":1.5"#)),
            ("no fragments", valid.replacingOccurrences(of: #","fragments":["#, with: #","fragmentz":["#)),
            ("a null atomic", valid.replacingOccurrences(of: #""index":7"#, with: #""index":7,"atomic":null"#)),
            ("a bad uuid", valid.replacingOccurrences(of: "0305e82c3301", with: "0305e82c330g")),
            ("a bad fragment type", valid.replacingOccurrences(of: "\"change\"", with: "\"remove\"")),
            ("a nested array value", valid.replacingOccurrences(of: #"{"x":1}"#, with: #"{"x":[[1]]}"#)),
            ("an object value", valid.replacingOccurrences(of: #"{"x":1}"#, with: #"{"x":{"y":1}}"#)),
            ("collection bases", valid.replacingOccurrences(of: #""properties""#, with: #""bases":{},"properties""#)),
            ("no clsName", valid.replacingOccurrences(of: #""clsName":"Shape","#, with: "")),
            ("trailing bytes", valid + "x"),
            ("a cut frame", String(valid.dropLast())),
            ("a message in an array and a bare one", "[" + valid + "]" + valid),
        ]
        for (name, text) in handedOn {
            #expect(Self.fast(text) == nil, "\(name): \(text)")
        }
    }

    @Test func keepsTheGeneralPathsDepthLimit() {
        // Six deep in a tree: the frame's array, the message, `fragments`, a fragment, `properties`
        // and an array value.
        let deepest = #"[{"type":"ScopeSync","index":1,"scopeIndex":0,"fragments":[{"type":"change","uuid":"\#(Self.uuid)","clsName":"Shape","properties":{"tags":["a"]}}]}]"#
        let six = JSONLimits(maxDepth: 6)
        #expect(Self.general(deepest, limits: six) != nil)  // positive control
        #expect(Self.fast(deepest, limits: six) == Self.general(deepest, limits: six))
        // One less: the general path refuses the frame, and the fast one hands it on.
        let five = JSONLimits(maxDepth: 5)
        #expect(Self.general(deepest, limits: five) == nil)
        #expect(Self.fast(deepest, limits: five) == nil)
    }

    /// Random frames around the shape the fast path reads (members in any order, optional ones,
    /// whitespace, escapes, repeats, extra members, wrong values, cut or changed bytes): wherever the
    /// fast path reads one, the general path reads the same syncs.
    @Test(arguments: 0..<8)
    func agreesWithTheGeneralPath(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed) &+ 0x5eed)
        var read = 0
        var handedOnValid = 0
        for _ in 0..<500 {
            var text = Self.randomFrame(&random)
            if Self.chance(10, &random), !text.isEmpty {
                var bytes = Array(text.utf8)
                let position = Int.random(in: 0..<bytes.count, using: &random)
                if Bool.random(using: &random) {
                    bytes.removeSubrange(position...)
                } else {
                    bytes[position] = Array(#"{}[],:"0 a\"#.utf8).randomElement(using: &random)!
                }
                text = String(decoding: bytes, as: UTF8.self)
            }
            let general = Self.general(text)
            if let fast = Self.fast(text) {
                read += 1
                #expect(fast == general, "seed \(seed): \(text)")
            } else if general != nil {
                handedOnValid += 1
            }
        }
        // Both branches were taken: the comparison above was made, and the hand-on happened.
        #expect(read > 30, "seed \(seed): only \(read) frames read")
        #expect(handedOnValid > 10, "seed \(seed): only \(handedOnValid) valid frames handed on")
    }

    private static func randomFrame(_ random: inout SeededGenerator) -> String {
        let count = Int.random(in: 1...3, using: &random)
        let syncs = (0..<count).map { _ in randomObject(syncMembers(&random), &random) }
        if count == 1, Bool.random(using: &random) { return syncs[0] }
        return "[" + syncs.joined(separator: pick([",", " , "], &random)) + "]"
    }

    private static func pick<T>(_ choices: [T], _ random: inout SeededGenerator) -> T { choices.randomElement(using: &random)! }

    /// One of `usual` nine times in ten, else one of `unusual` (values the general path rejects).
    private static func mostly(_ usual: [String], else unusual: [String], _ random: inout SeededGenerator) -> String {
        chance(90, &random) ? pick(usual, &random) : pick(unusual, &random)
    }

    private static func chance(_ percent: Int, _ random: inout SeededGenerator) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    private static func syncMembers(_ random: inout SeededGenerator) -> [(String, String)] {
        var members: [(String, String)] = [
            ("type", chance(95, &random) ? #""ScopeSync""# : pick([#""Ping""#, #""ScopeSyn""#, "1", #""Scope\u0053ync""#], &random)),
            ("index", mostly(["0", "3", "12", "1.0", "1e2"], else: ["-1", "2.5", "\"4\"", "18446744073709551615"], &random)),
            ("scopeIndex", mostly(["0", "1", "7"], else: ["-3", "null"], &random)),
            ("fragments", "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in
                randomObject(fragmentMembers(&random), &random)
            }.joined(separator: ",") + "]"),
        ]
        if chance(50, &random) { members.append(("atomic", mostly(["true", "false"], else: ["null", "1"], &random))) }
        let drawn = randomUUID(&random)
        if chance(30, &random) { members.append(("changeSet", mostly(["\"\(drawn)\"", "\"\(uuid)\""], else: ["\"x\"", "7"], &random))) }
        if chance(5, &random) { members.append(("procedure", #""A.b""#)) }
        if chance(5, &random) { members.append(("extra", "{}")) }
        if chance(5, &random) { members.remove(at: Int.random(in: 0..<members.count, using: &random)) }
        if chance(5, &random) { members.append(pick(members, &random)) }
        return members
    }

    private static func fragmentMembers(_ random: inout SeededGenerator) -> [(String, String)] {
        let drawn = randomUUID(&random)
        var members: [(String, String)] = [
            ("type", mostly([#""add""#, #""change""#, #""ch\u0061nge""#], else: [#""remove""#], &random)),
            ("uuid", mostly(["\"\(uuid)\"", "\"\(drawn)\"", "\"\(uuid.uppercased())\"", #""3f2504e0-4f89-11d3-9a0c-0305e82c330\u0031""#],
                             else: ["\"3f2504e0\"", "1"], &random)),
            ("clsName", mostly([#""Shape""#, #""Sh\"ape""#, #""""#], else: ["3"], &random)),
        ]
        if chance(80, &random) {
            let values = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                (pick(["x", "y", "name", "x"], &random),
                 mostly(["1", "-2", "0.25", "1e300", "true", "null", #""text""#, #""\ud83d\ude00""#, "[1,2]", "[\"a\",null]", "[]"],
                        else: ["[1,\"a\"]", "[[1]]", "{}"], &random))
            }
            members.append(("properties", chance(90, &random) ? randomObject(values, &random) : pick(["null", "[]", "1"], &random)))
        }
        if chance(5, &random) { members.append(("bases", "{}")) }
        if chance(4, &random) { members.remove(at: Int.random(in: 0..<members.count, using: &random)) }
        if chance(4, &random) { members.append(pick(members, &random)) }
        return members
    }

    /// A UUID in upper case, drawn from `random` so that a seed repeats its frames.
    private static func randomUUID(_ random: inout SeededGenerator) -> String {
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])).uuidString
    }

    private static func randomObject(_ members: [(String, String)], _ random: inout SeededGenerator) -> String {
        let ordered = chance(50, &random) ? members : members.shuffled(using: &random)
        let space = chance(20, &random) ? " \n" : ""
        return "{" + space + ordered.map { key, value in
            let name = chance(3, &random) ? key.replacingOccurrences(of: "e", with: "\\u0065") : key
            return "\"\(name)\"" + space + ":" + space + value
        }.joined(separator: "," + space) + space + "}"
    }
}
