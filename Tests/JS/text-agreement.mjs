// Replays Swift-made text operations through contrail-text.js, for JSTextAgreementTests.swift:
//   node Tests/JS/text-agreement.mjs CASES.json
// CASES: [{ops: [encoded operation lists], orders: [[op index, ...] per replica]}]; prints, per case,
// the text each order leaves, as one JSON array of arrays.
import { readFileSync } from "node:fs";
import { TextDocument } from "../../Sources/ContrailServer/Pages/Assets/contrail-text.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(cases.map(({ ops, orders }) => {
  const decoded = ops.map((encoded) => TextDocument.decode(encoded));
  return orders.map((order) => {
    const doc = new TextDocument("js");
    for (const index of order) doc.applyAll(decoded[index]);
    return doc.text;
  });
})));
