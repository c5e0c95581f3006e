/**
 * Math in the model's Markdown: `$…$` and `\(…\)` inline, `$$…$$` and `\[…\]` as display blocks. The
 * tokenizers keep the TeX source as it was written (Markdown's backslash escapes would eat `\,`), the
 * sanitised HTML carries it as text in an `.ac-math` element, and `typeset` hands that text to the bundled
 * KaTeX once the HTML is in the page. KaTeX runs with `trust: false`, so TeX cannot add links, classes or
 * styles of its own; its output goes into the DOM directly because DOMPurify would strip the inline styles
 * KaTeX's layout needs.
 */

import katex from "katex";
// With the module that typesets, so any bundle of the views (the widget, a JupyterLab renderer) has KaTeX's
// layout and fonts; the fonts travel inside the CSS (see build.mjs).
import "katex/dist/katex.min.css";
import type { MarkedExtension, Tokens } from "marked";

const MATH = "ac-math";

interface MathToken extends Tokens.Generic {
  type: "mathBlock" | "mathInline";
  raw: string;
  text: string;
  display: boolean;
}

function escapeText(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function mathHtml(text: string, display: boolean, tag = display ? "div" : "span"): string {
  return `<${tag} class="${MATH} ${display ? "ac-math-display" : "ac-math-inline"}">${escapeText(text)}</${tag}>`;
}

const BLOCK = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n+|$)/;
/** `$x$`: no space inside either dollar, and not a price ("$5 and $10"): no digit right after the closing one. */
const INLINE_DOLLAR = /^\$(?!\s)((?:\\.|[^\\\n$])+?)(?<!\s)\$(?!\d)/;
const INLINE_DISPLAY = /^\$\$((?:\\.|[^\\$])+?)\$\$/;
const INLINE_PAREN = /^\\\(([\s\S]+?)\\\)/;

export const mathExtension: MarkedExtension = {
  extensions: [
    {
      name: "mathBlock",
      level: "block",
      start(src: string) {
        const at = src.search(/\$\$|\\\[/);
        return at < 0 ? undefined : at;
      },
      tokenizer(src: string): MathToken | undefined {
        const match = BLOCK.exec(src);
        if (!match) return undefined;
        return { type: "mathBlock", raw: match[0], text: (match[1] ?? match[2] ?? "").trim(), display: true };
      },
      renderer(token) {
        return mathHtml(String(token.text), true);
      },
    },
    {
      name: "mathInline",
      level: "inline",
      start(src: string) {
        const at = src.search(/\$|\\\(/);
        return at < 0 ? undefined : at;
      },
      tokenizer(src: string): MathToken | undefined {
        const display = INLINE_DISPLAY.exec(src);
        if (display) return { type: "mathInline", raw: display[0], text: (display[1] ?? "").trim(), display: true };
        const match = INLINE_DOLLAR.exec(src) ?? INLINE_PAREN.exec(src);
        if (!match) return undefined;
        return { type: "mathInline", raw: match[0], text: match[1] ?? "", display: false };
      },
      renderer(token) {
        return mathHtml(String(token.text), token.display === true, "span");
      },
    },
  ],
};

/** Typeset every `.ac-math` element under `root` that is not typeset yet (its text is the TeX source). */
export function typeset(root: Element): void {
  for (const el of root.querySelectorAll<HTMLElement>(`.${MATH}:not([data-typeset])`)) {
    const tex = el.textContent ?? "";
    const display = el.classList.contains("ac-math-display");
    try {
      katex.render(tex, el, { displayMode: display, throwOnError: false, trust: false, strict: "ignore", maxExpand: 1000, maxSize: 50 });
      el.setAttribute("data-typeset", "");
      el.setAttribute("title", tex);
    } catch {
      // throwOnError: false already shows bad TeX in red; anything else leaves the source as text.
      el.textContent = tex;
    }
  }
}
