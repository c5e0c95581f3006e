/** Replies as people read them: tables, math, task lists, quotes, blocked images, long replies, Insert below. */

import { beforeEach, describe, expect, it } from "vitest";
import { fold } from "../src/fold";
import { renderMarkdown, setRichHtml } from "../src/markdown";
import { setMathLoader, typeset } from "../src/math";
import type { Item } from "../src/types";
import { LONG_REPLY_CHARS, TurnView, cellSource } from "../src/view/turn";
import { context, idle, message, resetClock, running } from "./items";
import { XSS, assertInert } from "./xss";

beforeEach(resetClock);

function rich(markdown: string): HTMLElement {
  const el = document.createElement("div");
  setRichHtml(el, renderMarkdown(markdown));
  return el;
}

function paint(items: Item[]): HTMLElement {
  const root = document.createElement("div");
  document.body.append(root);
  new TurnView(root, () => undefined).paint(fold(items));
  return root;
}

describe("replies", () => {
  it("renders GitHub tables as tables with a header row", () => {
    const el = rich("| city | people |\n| --- | ---: |\n| Lyon | 522,250 |\n| Nice | 348,085 |");
    expect([...el.querySelectorAll("th")].map((th) => th.textContent)).toEqual(["city", "people"]);
    expect(el.querySelectorAll("tbody tr").length).toBe(2);
    expect(el.querySelector(".ac-md-part, table")?.tagName).toBe("TABLE");
  });

  it("keeps math as its TeX source until the page says where KaTeX is, then loads KaTeX once", async () => {
    const before = rich("Energy: $E = mc^2$.");
    expect(before.querySelector(".ac-math")?.hasAttribute("data-typeset")).toBe(false);
    expect(before.textContent).toContain("E = mc^2");
    let loads = 0;
    setMathLoader(() => {
      loads += 1;
      return import("katex").then((katex) => katex.default);
    });
    expect(rich("No math here, and $5 is a price.").querySelector(".ac-math")).toBeNull();
    expect(loads).toBe(0); // a reply without math loads nothing
    const first = rich("Now $x^2$.");
    await typeset(first);
    expect(first.querySelector(".ac-math .katex")).not.toBeNull();
    const second = rich("And $y^2$."); // typeset at once: KaTeX is here
    expect(second.querySelector(".ac-math .katex")).not.toBeNull();
    expect(loads).toBe(1);
  });

  it("typesets inline and display math with KaTeX, keeping TeX's own backslashes", async () => {
    setMathLoader(() => import("katex").then((katex) => katex.default));
    const el = rich("Energy: $E = mc^2$, a thin space $a\\,b$.\n\n$$\\int_0^1 x\\,dx = \\frac{1}{2}$$\n\nAnd \\(x^2\\) too.");
    await typeset(el);
    const maths = [...el.querySelectorAll(".ac-math")];
    expect(maths.length).toBe(4);
    for (const m of maths) {
      expect(m.hasAttribute("data-typeset")).toBe(true);
      expect(m.querySelector(".katex")).not.toBeNull();
    }
    expect(maths[1]?.getAttribute("title")).toBe("a\\,b"); // Markdown's escapes did not eat `\,`
    expect(el.querySelector(".ac-math-display .katex-display")).not.toBeNull();
    expect(maths[0]?.querySelector("annotation")?.textContent).toBe("E = mc^2");
    expect(el.textContent).not.toContain("$E");
  });

  it("leaves prices alone and shows bad TeX instead of failing", () => {
    const prices = rich("It costs $5 and $10 today.");
    expect(prices.querySelector(".ac-math")).toBeNull();
    expect(prices.textContent).toBe("It costs $5 and $10 today.\n");
    const bad = rich("$\\frac{1}{$ and $\\unknowncommand$");
    expect(bad.querySelector(".ac-math")).not.toBeNull();
    expect(bad.textContent).toContain("unknowncommand");
  });

  it("shows task lists with read-only boxes, checked where done", () => {
    const el = rich("- [x] write the tests\n- [ ] ship it");
    const boxes = [...el.querySelectorAll<HTMLElement>(".ac-task")];
    expect(boxes.map((b) => b.getAttribute("aria-checked"))).toEqual(["true", "false"]);
    expect(boxes.every((b) => b.getAttribute("role") === "checkbox" && b.getAttribute("aria-disabled") === "true")).toBe(true);
    expect(el.querySelector("input")).toBeNull(); // the model's text cannot make a form control
  });

  it("puts a visible placeholder with the alt text where an image was blocked", () => {
    const el = rich("![sales by month](https://evil.example/track.png) and <img src='https://evil.example/x.png' alt='raw html image'>");
    const placeholders = [...el.querySelectorAll(".ac-image-blocked")];
    expect(placeholders.map((p) => p.textContent)).toEqual([
      "🖼 sales by month (not loaded: a linked image)",
      "🖼 raw html image (not loaded: a linked image)",
    ]);
    expect(el.querySelector("img")).toBeNull();
  });

  it("renders blockquotes as quotes (the bar is the theme's border)", () => {
    const el = rich("> a quoted line\n\nafter");
    expect(el.querySelector("blockquote p")?.textContent).toBe("a quoted line");
  });

  it("folds a long reply behind Show more, and unfolds it", () => {
    const long = Array.from({ length: 80 }, (_, i) => `Paragraph ${i} ${"word ".repeat(12)}`).join("\n\n");
    expect(long.length).toBeGreaterThan(LONG_REPLY_CHARS);
    const root = paint([context(), running(), message("m", long), idle()]);
    const reply = root.querySelector<HTMLElement>(".ac-message");
    expect(reply?.classList.contains("ac-folded")).toBe(true);
    const more = root.querySelector<HTMLButtonElement>(".ac-more-reply");
    expect(more?.textContent).toMatch(/^Show more \([\d,]+ words\)$/);
    more?.click();
    expect(reply?.classList.contains("ac-folded")).toBe(false);
    expect(more?.getAttribute("aria-expanded")).toBe("true");
    const short = paint([context(), running(), message("m", "Short."), idle()]);
    expect(short.querySelector(".ac-more-reply")).toBeNull();
  });

  it("offers Insert below on code blocks: a %%python cell for Python, a prose cell otherwise", () => {
    expect(cellSource("print(1)\n", "python")).toBe("%%python\nprint(1)");
    expect(cellSource("ls -la\n", "bash")).toBe("ls -la");
    const root = paint([context(), running(), message("m", "```python\nimport math\nmath.pi\n```"), idle()]);
    const asked: string[] = [];
    const listener = (event: Event) => {
      asked.push((event as CustomEvent<{ source: string }>).detail.source);
      event.preventDefault(); // what agentcell's front-end extension does once it inserted the cell
    };
    document.addEventListener("agentcell:insert-cell", listener);
    try {
      const insert = root.querySelector<HTMLButtonElement>(".ac-message .ac-insert");
      expect(insert?.getAttribute("aria-label")).toBe("Insert below as a cell");
      insert?.click();
      expect(asked).toEqual(["%%python\nimport math\nmath.pi"]);
      expect(insert?.textContent).toBe("Inserted");
    } finally {
      document.removeEventListener("agentcell:insert-cell", listener);
    }
  });

  it("keeps every payload inert on the math path", () => {
    for (const payload of XSS) {
      const el = rich(`$${payload}$ and $$${payload}$$ and \\(\\href{javascript:window.pwned=1}{x}\\) ${payload}`);
      document.body.append(el);
      assertInert(el);
      el.remove();
    }
    const href = rich("$\\href{javascript:window.pwned=1}{click}$ $\\url{javascript:alert(1)}$ $\\htmlClass{x}{y}$");
    expect(href.querySelector("a")).toBeNull(); // trust: false renders no links from TeX
    assertInert(href);
  });
});
