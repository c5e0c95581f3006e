/** The XSS payloads every rendering path is held to, and what "inert" means for the DOM they end in. */

import { expect } from "vitest";

export const XSS = [
  "<script>window.pwned=1</script>",
  '<img src=x onerror="window.pwned=1">',
  '<svg onload="window.pwned=1"><script>window.pwned=1</script></svg>',
  '<a href="javascript:window.pwned=1">x</a>',
  '<iframe src="javascript:window.pwned=1"></iframe>',
  '<math><mtext><table><mglyph><style><img src=x onerror="window.pwned=1"></style></mglyph></table></mtext></math>',
  '<p style="background:url(javascript:window.pwned=1)" onclick="window.pwned=1">p</p>',
];

export function assertInert(root: Element): void {
  // The steer box is the view's own form; none may come from content.
  expect(root.querySelector("script, iframe, object, embed, style, form:not(.ac-steer-form)")).toBeNull();
  for (const el of root.querySelectorAll("*")) {
    for (const attr of el.getAttributeNames()) expect(attr.startsWith("on"), `${el.tagName} ${attr}`).toBe(false);
    for (const attr of ["href", "src", "xlink:href", "action"]) {
      expect((el.getAttribute(attr) ?? "").replace(/\s/g, "").toLowerCase().startsWith("javascript:"), `${el.tagName} ${attr}`).toBe(false);
    }
  }
  expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
}

