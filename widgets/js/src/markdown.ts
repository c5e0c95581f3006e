/**
 * Model text → safe HTML: `marked` parses, highlight.js colours code, DOMPurify sanitises the result.
 * Every string that reaches `innerHTML` in this package goes through `sanitize`: the model's text is
 * untrusted (it can echo a web page or a prompt injection), so no scripts, no event handlers, no
 * `javascript:` URLs, and images only from `data:` or the notebook's own origin.
 */

import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import diff from "highlight.js/lib/languages/diff";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked, type Token, type Tokens } from "marked";
import { mathExtension, typeset } from "./math";

for (const [name, language] of Object.entries({ bash, diff, javascript, json, python, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(["sh", "shell", "console"], { languageName: "bash" });
hljs.registerAliases(["py", "ipython"], { languageName: "python" });
hljs.registerAliases(["js"], { languageName: "javascript" });
hljs.registerAliases(["ts"], { languageName: "typescript" });
hljs.registerAliases(["html"], { languageName: "xml" });

const SAFE_IMAGE_DATA = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$/i;

/** Highlighted HTML for `code` (already escaped by highlight.js), plain escaped text when unknown. */
export function highlight(code: string, language: string): string {
  const lang = language.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (lang && hljs.getLanguage(lang)) return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  return escapeHtml(code);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Code blocks get Copy and, in the agent's replies, "Insert below" (a new cell with the code); the view
 * handles their clicks by delegation (no inline handlers).
 */
export function codeBlockHtml(code: string, language: string, { insert = false } = {}): string {
  const lang = escapeHtml(language.trim().split(/\s+/)[0] ?? "");
  const insertButton = insert
    ? `<button type="button" class="ac-insert" aria-label="Insert below as a cell" title="Insert below as a cell">Insert below</button>`
    : "";
  return (
    `<div class="ac-code"><span class="ac-code-actions">${insertButton}<button type="button" class="ac-copy" aria-label="Copy code">Copy</button></span>` +
    `<pre><code class="hljs${lang ? ` language-${lang}` : ""}">${highlight(code, language)}</code></pre></div>`
  );
}

/** A task list's box, read-only: the model's text cannot make a form control. */
function checkboxHtml(checked: boolean): string {
  const label = checked ? "done" : "not done";
  return `<span class="ac-task${checked ? " ac-task-checked" : ""}" role="checkbox" aria-checked="${checked}" aria-disabled="true" aria-label="${label}"></span> `;
}

const marked = new Marked(
  {
    gfm: true,
    breaks: false,
    renderer: {
      code({ text, lang }: Tokens.Code): string {
        return codeBlockHtml(text, lang ?? "", { insert: true });
      },
      checkbox({ checked }: Tokens.Checkbox): string {
        return checkboxHtml(checked);
      },
    },
  },
  mathExtension,
);

let purifier: ReturnType<typeof DOMPurify> | null = null;

function getPurifier(): ReturnType<typeof DOMPurify> {
  if (purifier) return purifier;
  purifier = DOMPurify(window);
  purifier.addHook("afterSanitizeAttributes", (node) => {
    if (node instanceof window.HTMLImageElement || node.nodeName === "IMG") {
      const src = node.getAttribute("src") ?? "";
      if (!safeImageSource(src)) {
        node.removeAttribute("src");
        node.removeAttribute("srcset");
        node.setAttribute("data-blocked", "image not embedded in the reply");
      }
    }
    if (node.nodeName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });
  return purifier;
}

/** Images may come from `data:` (raster formats only) or from the page's own origin. */
/**
 * Only data: raster images from the model. A same-origin URL is fetched with the user's cookies
 * (`![x](/logout)` logs them out of Jupyter, on JupyterHub out of the whole hub), a remote one tells a third
 * party that the notebook was opened.
 */
export function safeImageSource(src: string): boolean {
  return SAFE_IMAGE_DATA.test(src);
}

export function sanitize(html: string): string {
  return getPurifier().sanitize(html, {
    FORBID_TAGS: ["style", "form", "input", "textarea", "select", "iframe", "object", "embed", "svg", "math"],
    FORBID_ATTR: ["style", "srcset"],
    ALLOW_DATA_ATTR: false,
  });
}

export function renderMarkdown(text: string): string {
  return sanitize(marked.parser(marked.lexer(text)));
}

/**
 * Put sanitised HTML into `el` and finish it in the DOM: math typeset by KaTeX, and each image the
 * sanitiser blocked replaced by a visible placeholder with its alt text (the user learns something was
 * left out, and what).
 */
export function setRichHtml(el: Element, html: string): void {
  el.innerHTML = html;
  enhance(el);
}

export function enhance(el: Element): void {
  for (const img of el.querySelectorAll("img[data-blocked]")) {
    const alt = img.getAttribute("alt")?.trim() ?? "";
    const placeholder = document.createElement("span");
    placeholder.className = "ac-image-blocked";
    placeholder.setAttribute("role", "img");
    placeholder.setAttribute("aria-label", `image not loaded: ${alt || "no description"}`);
    placeholder.title = "Images the model links to are not loaded: the model chose the address (only embedded images show)";
    placeholder.textContent = `🖼 ${alt || "image"} (not loaded: a linked image)`;
    img.replaceWith(placeholder);
  }
  void typeset(el);
}

/** Top-level tokens with their source, for rendering a growing text piece by piece. */
export function lex(text: string): Token[] {
  return [...marked.lexer(text)];
}

/**
 * One top-level token as safe HTML. Reference links were resolved when the whole text was lexed, so
 * a token renders alone.
 */
export function renderToken(token: Token): string {
  return sanitize(marked.parser([token]));
}
