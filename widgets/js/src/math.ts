/**
 * Math in the model's Markdown: `$…$` and `\(…\)` inline, `$$…$$` and `\[…\]` as display blocks. The
 * tokenizers keep the TeX source as it was written (Markdown's backslash escapes would eat `\,`), the
 * sanitised HTML carries it as text in an `.ac-math` element, and `typeset` hands that text to KaTeX once
 * the HTML is in the page. KaTeX runs with `trust: false`, so TeX cannot add links, classes or styles of its
 * own; its output goes into the DOM directly because DOMPurify would strip the inline styles KaTeX's layout
 * needs.
 *
 * KaTeX and its fonts (a third of a megabyte) are not part of the views' bundle: whoever hosts the views
 * says where to get them (`setMathLoader`: the lab extension's own chunk, the kernel through the live
 * widget, the `--html` page's copy), and they load the first time a reply has math.
 */

import type katex from "katex";
import type { MarkedExtension, Tokens } from "marked";

export type KatexLike = Pick<typeof katex, "render">;

let loader: (() => Promise<KatexLike>) | undefined;
let loading: Promise<KatexLike> | undefined;
let loaded: KatexLike | undefined;

/** Where KaTeX comes from in this page; until one is set, math shows as its TeX source. A new loader is
 * asked the next time math needs KaTeX, if it has not come yet (the live widget's question may have gone
 * through a turn that ended before its answer). */
export function setMathLoader(load: () => Promise<KatexLike>): void {
  loader = load;
  if (!loaded) loading = undefined;
}

function mathEngine(): Promise<KatexLike> | undefined {
  if (!loading && loader) {
    const started = loader().then((engine) => (loaded = engine));
    loading = started;
    started.catch(() => loading === started && (loading = undefined)); // the next reply with math tries again
  }
  return loading;
}

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

/** Typeset every `.ac-math` element under `root` that is not typeset yet (its text is the TeX source): at
 * once when KaTeX is here, else once it has loaded (the promise settles then; it never rejects). */
export function typeset(root: Element): Promise<void> | undefined {
  if (!root.querySelector(`.${MATH}:not([data-typeset])`)) return undefined;
  if (loaded) {
    typesetWith(loaded, root);
    return undefined;
  }
  return mathEngine()?.then(
    (engine) => typesetWith(engine, root),
    () => undefined, // math stays as its TeX source
  );
}

function typesetWith(katex: KatexLike, root: Element): void {
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
