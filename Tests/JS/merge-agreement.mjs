// Runs three-way merge cases through contrail.js's mergeCollection, for JSMergeAgreementTests.swift,
// which runs the same cases through Swift's CollectionMerge and compares:
//   node Tests/JS/merge-agreement.mjs CASES.json     (CASES: [[base, new, current], ...] of string lists)
// prints the merged lists as one JSON array, in case order.
import { readFileSync } from "node:fs";
import { mergeCollection } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(cases.map(([base, next, current]) => mergeCollection(base, next, current))));
