// Replays Swift-made text operations through contrail-text.js, for JSTextAgreementTests.swift:
//   node Tests/JS/text-agreement.mjs CASES.json
// CASES: [{ops: [encoded operation lists], orders: [[op index, ...] per replica], state: Swift's encoded
// state}]; prints, per case, what each order leaves: {text, state: JSON.stringify(stateJSON())}, and
// the text and state again after decoding Swift's state ({text, state} of fromState), as one JSON array
// of arrays.
import { readFileSync } from "node:fs";
import { TextDocument } from "../../Sources/ContrailServer/Pages/Assets/contrail-text.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(cases.map(({ ops, orders, state }) => {
  const decoded = ops.map((encoded) => TextDocument.decode(encoded));
  const fromSwift = TextDocument.fromState("js", state);
  return orders.map((order) => {
    const doc = new TextDocument("js");
    for (const index of order) doc.applyAll(decoded[index]);
    const mine = JSON.stringify(doc.stateJSON());
    // JavaScript reads Swift's state to the same text and bytes as its own replay.
    if (fromSwift.text !== doc.text || JSON.stringify(fromSwift.stateJSON()) !== mine) return { text: null, state: null };
    return { text: doc.text, state: mine };
  });
})));
