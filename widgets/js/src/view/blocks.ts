/** The small blocks: thinking (collapsible), errors, thread notes, and the outcome panel. */

import { renderMarkdown, setRichHtml } from "../markdown";
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
    if (text !== null) setRichHtml(body, renderMarkdown(text));
    this.el.replaceChildren(summary, body);
  }
}

/**
 * A failure. One the engine retries is news, not an alarm: a neutral line that says which attempt comes
 * next ("retrying (2 of 3)…"), with the provider's words behind a tooltip.
 */
export function errorView(block: ErrorBlock): HTMLElement {
  if (block.retry === "retrying") {
    const next = block.attempt + 1;
    const of = block.maxAttempts ? ` of ${block.maxAttempts}` : "";
    return h(
      "p",
      { class: "ac-note ac-retrying", role: "status", title: `${block.errorType}: ${block.message}` },
      `${friendlyError(block.errorType)}; retrying (${next}${of})…`,
    );
  }
  const gaveUp = block.retry === "exhausted" ? " (gave up after retrying)" : "";
  return h("div", { class: "ac-error-block", role: "alert" }, h("strong", {}, block.errorType), `${gaveUp}: ${block.message}`);
}

function friendlyError(type: string): string {
  if (type.includes("rate_limited")) return "The provider is rate-limiting";
  if (type.includes("overloaded")) return "The provider is overloaded";
  return "The request failed";
}

export function noteView(block: NoteBlock): HTMLElement {
  return h("p", { class: "ac-note ac-thread-note" }, block.text);
}

/**
 * An outcome: what it is for, its rubric, and one entry per revision cycle, numbered from 1 as the status
 * line counts them, each with the grader's verdict and words (labelled as the grader's).
 */
export function outcomeView(outcome: Outcome): HTMLElement {
  const iterations = [...outcome.iterations].sort((a, b) => a.n - b.n).map((it) => {
    const verdict = it.result ?? "evaluating…";
    const revision = h("details", { class: "ac-revision" }, h("summary", {}, "The agent's text of this cycle"));
    const body = h("div", {});
    setRichHtml(body, renderMarkdown(it.revision || "(no text)"));
    revision.append(body);
    return h(
      "li",
      { class: `ac-iteration ac-verdict-${verdict.replace(/[^a-z_]/g, "")}` },
      h("span", { class: "ac-iteration-n" }, `Cycle ${it.n + 1}`),
      h("span", { class: "ac-verdict" }, verdict.replace(/_/g, " ")),
      it.explanation ? h("p", { class: "ac-explanation" }, h("strong", { class: "ac-grader" }, "Grader: "), it.explanation) : null,
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
      `${outcome.status.replace(/_/g, " ")} · cycle ${outcome.iteration + 1} of up to ${outcome.maxIterations}`,
    ),
    h("details", { class: "ac-rubric" }, h("summary", {}, "Rubric"), h("p", { class: "ac-prose" }, outcome.rubric)),
    h("ul", { class: "ac-iterations" }, ...iterations),
  );
}
