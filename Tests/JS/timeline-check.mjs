// Run by the Swift suite "Scope history" against a live server (not by node --test): reads a scope's
// history and every state it keeps through inspector-timeline.js, as the inspector does, and prints
// what it read as one JSON line. Arguments: base URL, scope name, admin token.
import { loadHistory, stateAt, leadingTo, treeLines, revisionsAt } from "../../Sources/ContrailServer/Pages/Assets/inspector-timeline.js";

const [base, name, token] = process.argv.slice(2);
const history = await loadHistory(base, name, token);
const states = {};
for (let seq = history.oldest; seq <= history.latest; seq++) states[seq] = (await stateAt(base, name, seq, token)).state;
let denied = null;
try { await loadHistory(base, name, undefined); } catch (error) { denied = error.status; }
let wrong = null;
try { await stateAt(base, name, 1, "not-a-token"); } catch (error) { wrong = error.status; }
console.log(JSON.stringify({
  oldest: history.oldest, latest: history.latest, seqs: history.entries.map((entry) => entry.seq),
  users: history.entries.map((entry) => entry.user), leadingTo2: leadingTo(history, 2).map((entry) => entry.seq),
  marks: revisionsAt(history, 1).map((revision) => revision.label), states, lines: treeLines(states[history.latest]), denied, wrong,
}));
