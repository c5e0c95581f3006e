/** The small blocks: thinking (collapsible), errors, thread notes, and the outcome panel. */

import { renderMarkdown } from "../markdown";
import type { ErrorBlock, NoteBlock, Outcome, ThinkingBlock } from "../state";
import { h } from "./dom";

export class ThinkingView {
  readonly el: HTMLDetailsElement;
  private shown: string | null | undefined = undefined;

  constructor() {
    this.el = h("details", { class: "ac-thinking" });
  }

  update(block: ThinkingBlock): void {
    const text = block.redacted ? "(redacted by the provider)" : block.text;
    if (text === this.shown) return;
    this.shown = text;
    const summary = h("summary", {}, text === null ? "Thinking…" : "Thinking");
    const body = h("div", { class: "ac-thinking-body" });
    if (text !== null) body.innerHTML = renderMarkdown(text);
    this.el.replaceChildren(summary, body);
  }
}

export function errorView(block: ErrorBlock): HTMLElement {
  const retry = block.retry === "retrying" ? " (retrying)" : "";
  return h("div", { class: "ac-error-block", role: "alert" }, h("strong", {}, block.errorType), `${retry}: ${block.message}`);
}

export function noteView(block: NoteBlock): HTMLElement {
  return h("p", { class: "ac-note ac-thread-note" }, block.text);
}

export function outcomeView(outcome: Outcome): HTMLElement {
  const iterations = outcome.iterations.map((it) => {
    const verdict = it.result ?? "evaluating…";
    const revision = h("details", { class: "ac-revision" }, h("summary", {}, "Revision text"));
    const body = h("div", {});
    body.innerHTML = renderMarkdown(it.revision || "(no text)");
    revision.append(body);
    return h(
      "li",
      { class: `ac-iteration ac-verdict-${verdict.replace(/[^a-z_]/g, "")}` },
      h("span", { class: "ac-iteration-n" }, `Revision ${it.n}`),
      h("span", { class: "ac-verdict" }, verdict),
      it.explanation ? h("p", { class: "ac-explanation" }, it.explanation) : null,
      revision,
    );
  });
  return h(
    "section",
    { class: "ac-outcome", "aria-label": "Outcome" },
    h("h4", {}, `Outcome: ${outcome.description}`),
    h(
      "p",
      { class: `ac-outcome-status ac-outcome-${outcome.status.replace(/[^a-z_]/g, "")}`, role: "status" },
      `${outcome.status} · cycle ${outcome.iteration + 1} of up to ${outcome.maxIterations}`,
    ),
    h("details", { class: "ac-rubric" }, h("summary", {}, "Rubric"), h("pre", { class: "ac-text" }, outcome.rubric)),
    h("p", { class: "ac-note" }, `up to ${outcome.maxIterations} revisions`),
    h("ol", { class: "ac-iterations" }, ...iterations),
  );
}
