/**
 * A growing Markdown text rendered without flicker: the text is split into top-level blocks, finished
 * blocks keep their DOM, and only the blocks at the growing end are rendered again. While streaming,
 * only the tail of the text is lexed again; the final text is lexed whole (so reference links and
 * list looseness come out exactly as in a one-shot render).
 */

import type { Token } from "marked";
import { lex, renderMarkdown, renderToken, setRichHtml } from "../markdown";

interface Part {
  raw: string;
  el: HTMLElement;
}

/** Parts kept from the previous render while streaming: all but the last few, which may still change. */
const REOPEN = 2;

export class MarkdownStream {
  readonly el: HTMLElement;
  private parts: Part[] = [];
  private text = "";
  private final = false;

  constructor() {
    this.el = document.createElement("div");
    this.el.className = "ac-markdown";
  }

  get renderedText(): string {
    return this.text;
  }

  update(text: string, final: boolean): void {
    if (text === this.text && (this.final || !final)) return;
    if (final) this.renderFinal(text);
    else this.renderStreaming(text);
    this.text = text;
    this.final = final;
  }

  private renderStreaming(text: string): void {
    if (!text.startsWith(this.text) || this.final) {
      this.renderParts(lex(text), 0);
      return;
    }
    const keep = Math.max(0, this.parts.length - REOPEN);
    let offset = 0;
    for (let i = 0; i < keep; i += 1) offset += this.parts[i]?.raw.length ?? 0;
    this.renderParts(lex(text.slice(offset)), keep);
  }

  private renderFinal(text: string): void {
    const tokens = lex(text);
    if (tokens.some((t) => t.type === "def")) {
      // Reference definitions change how earlier blocks render: render the whole text as one.
      const el = document.createElement("div");
      el.className = "ac-md-part";
      setRichHtml(el, renderMarkdown(text));
      this.el.replaceChildren(el);
      this.parts = [{ raw: text, el }];
      return;
    }
    this.renderParts(tokens, 0);
  }

  /** Make parts[from..] match `tokens`, reusing a part whose source is unchanged at the same place. */
  private renderParts(tokens: Token[], from: number): void {
    const next: Part[] = this.parts.slice(0, from);
    tokens.forEach((token, i) => {
      const old = this.parts[from + i];
      if (old && old.raw === token.raw) {
        next.push(old);
        return;
      }
      const el = document.createElement("div");
      el.className = "ac-md-part";
      setRichHtml(el, renderToken(token));
      if (old) old.el.replaceWith(el);
      else this.el.append(el);
      next.push({ raw: token.raw, el });
    });
    for (const stale of this.parts.slice(from + tokens.length)) stale.el.remove();
    this.parts = next;
  }
}
