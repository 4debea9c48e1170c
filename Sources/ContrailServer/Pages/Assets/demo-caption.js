// The canvas demo's shared caption (Protocol §8.21): the Canvas root's `caption` string property,
// edited as shared text from every window (and from Swift, where the model declares
// `@Property var caption = SharedText()`), merged character by character.
import { SharedTextBinding } from "/contrail-text.js";

/** Adds the caption's text area under the canvas and binds it to `scope.root.caption`. */
export function attachCaption(scope) {
  const area = document.createElement("textarea");
  area.id = "caption";
  area.rows = 2;
  area.cols = 80;
  area.placeholder = "A caption every window edits together";
  document.querySelector("main")?.append(area);
  const caption = new SharedTextBinding(scope, scope.root, "caption");
  area.addEventListener("input", () => caption.replaceAll(area.value));
  caption.onChange = (changes, isRemote) => {
    if (!isRemote || area.value === caption.text) return;
    // Keep the caret where it was relative to the text around it.
    const start = area.selectionStart, end = area.selectionEnd, before = area.value;
    let prefix = 0;
    while (prefix < before.length && before[prefix] === caption.text[prefix]) prefix += 1;
    const shift = caption.text.length - before.length;
    area.value = caption.text;
    if (document.activeElement === area) area.setSelectionRange(start < prefix ? start : start + shift, end < prefix ? end : end + shift);
  };
  window.contrailCaption = caption;
  return caption;
}
