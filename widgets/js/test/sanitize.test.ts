import { describe, expect, it } from "vitest";
import { renderMarkdown, safeImageSource, sanitize } from "../src/markdown";

function dom(html: string): HTMLElement {
  const div = document.createElement("div");
  div.innerHTML = html;
  return div;
}

describe("sanitisation", () => {
  it("removes scripts and event handlers from the model's text", () => {
    const out = dom(renderMarkdown('Hi <script>window.pwned=1</script> <img src=x onerror="window.pwned=1"> <b onclick="x()">b</b>'));
    expect(out.querySelector("script")).toBeNull();
    for (const el of out.querySelectorAll("*")) {
      for (const attr of el.getAttributeNames()) expect(attr.startsWith("on"), attr).toBe(false);
    }
    expect(out.textContent).toContain("Hi");
  });

  it("drops javascript: URLs from links and keeps others safe to open", () => {
    const out = dom(renderMarkdown("[bad](javascript:alert(1)) [good](https://example.org)"));
    const links = [...out.querySelectorAll("a")];
    expect(links.some((a) => (a.getAttribute("href") ?? "").startsWith("javascript:"))).toBe(false);
    const good = links.find((a) => a.textContent === "good");
    expect(good?.getAttribute("href")).toBe("https://example.org");
    expect(good?.getAttribute("rel")).toBe("noopener noreferrer");
    expect(dom(sanitize('<a href="  JaVaScRiPt:alert(1)">x</a>')).querySelector("a")?.getAttribute("href") ?? null).toBeNull();
  });

  it("allows images only from data: raster URLs", () => {
    const png = "data:image/png;base64,iVBORw0KGgo=";
    const out = dom(renderMarkdown(`![a](${png}) ![b](https://evil.example/track.png) ![c](/files/plot.png) ![d](data:image/svg+xml;base64,PHN2Zz4=)`));
    const srcs = [...out.querySelectorAll("img")].map((img) => img.getAttribute("src"));
    expect(srcs).toContain(png);
    expect(srcs).not.toContain("/files/plot.png");
    expect(srcs.filter((s) => s?.includes("evil") || s?.startsWith("data:image/svg"))).toEqual([]);
    // Same-origin requests carry the user's cookies: /logout would log them out (issue 21, 5).
    expect(safeImageSource(`${window.location.origin}/x.png`)).toBe(false);
    expect(safeImageSource("/logout")).toBe(false);
    expect(safeImageSource("files/p.png")).toBe(false);
    expect(safeImageSource("javascript:alert(1)")).toBe(false);
  });

  it("forbids styles, forms, frames and inline SVG", () => {
    const out = dom(sanitize('<style>*{}</style><form><input></form><iframe src="x"></iframe><svg><script>1</script></svg><p style="color:red">p</p>'));
    for (const tag of ["style", "form", "input", "iframe", "svg", "script"]) expect(out.querySelector(tag), tag).toBeNull();
    expect(out.querySelector("p")?.hasAttribute("style")).toBe(false);
  });

  it("highlights code blocks and gives them a copy button", () => {
    const out = dom(renderMarkdown("```python\ndef f(): return 1\n```"));
    expect(out.querySelector(".ac-copy")?.textContent).toBe("Copy");
    expect(out.querySelector("code.language-python .hljs-keyword")?.textContent).toBe("def");
  });

  it("escapes code it cannot highlight", () => {
    const out = dom(renderMarkdown("```nolang\n<script>x</script>\n```"));
    expect(out.querySelector("script")).toBeNull();
    expect(out.querySelector("code")?.textContent).toContain("<script>x</script>");
  });
});
