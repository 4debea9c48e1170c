// The pages' token handling (`node --test Tests/JS/`): taken from the URL fragment, moved to
// sessionStorage and cleared from the address bar, never from the query string.
import { test } from "node:test";
import assert from "node:assert/strict";
import { pageToken, askForPageToken } from "../../Sources/ContrailServer/Pages/Assets/contrail.js";

/** A page at `url` with an empty sessionStorage; returns what history.replaceState was given. */
function page(url) {
  const parsed = new URL(url);
  const stored = new Map();
  const replaced = [];
  globalThis.location = { hash: parsed.hash, pathname: parsed.pathname, search: parsed.search };
  globalThis.sessionStorage = { getItem: (k) => stored.get(k) ?? null, setItem: (k, v) => stored.set(k, String(v)) };
  globalThis.history = { replaceState: (_state, _title, next) => replaced.push(next) };
  return { stored, replaced };
}

test("a #token= fragment is kept for the tab and removed from the address bar", () => {
  const { stored, replaced } = page("http://127.0.0.1:3000/demo?scope=Canvas#token=abc.def.ghi&x=1");
  assert.equal(pageToken(), "abc.def.ghi");
  assert.deepEqual(replaced, ["/demo?scope=Canvas#x=1"], "the rest of the fragment stays, the token goes");
  assert.equal(stored.get("contrail-token"), "abc.def.ghi");
  // A reload (no fragment any more) finds it in sessionStorage.
  globalThis.location = { hash: "", pathname: "/demo", search: "?scope=Canvas" };
  assert.equal(pageToken(), "abc.def.ghi");
});

test("a token in the query string is not taken, and no token is null", () => {
  const { replaced } = page("http://127.0.0.1:3000/?token=leaked");
  assert.equal(pageToken(), null);
  assert.deepEqual(replaced, []);
});

test("a prompted token is kept; a dismissed prompt keeps nothing", () => {
  const { stored } = page("http://127.0.0.1:3000/");
  globalThis.prompt = () => null;
  assert.equal(askForPageToken("token?"), null);
  assert.equal(stored.size, 0);
  globalThis.prompt = () => "typed";
  assert.equal(askForPageToken("token?"), "typed");
  assert.equal(pageToken(), "typed");
  delete globalThis.prompt;
});
