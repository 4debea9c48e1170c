// Writes collection edits through contrail-collections.js, for JSCollectionEditAgreementTests.swift,
// which writes the same edits through Swift's CollectionEdit and compares:
//   node Tests/JS/collection-edit-agreement.mjs CASES.json     (CASES: [[base, new], ...] of UUID lists)
// prints the edits (null where there is none) as one JSON array, in case order.
import { readFileSync } from "node:fs";
import { collectionEdit } from "../../Sources/ContrailServer/Pages/Assets/contrail-collections.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(cases.map(([base, next]) => collectionEdit(base, next))));
