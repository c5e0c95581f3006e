/**
 * A cell the agent proposed: its code (an edit as a diff of the cell as the agent saw it and the proposal),
 * the agent's note, and Accept / Accept & run / Reject. The view cannot reach the notebook, so each button
 * asks the page with a bubbling `agentcell:proposal` event ({ proposal, answer }); agentcell's JupyterLab /
 * Notebook 7 extension applies it and calls preventDefault. Where nobody answers (VS Code, Colab), the
 * source is copied and the card says which magic records the answer (`%accept N`, `%reject N`), as the
 * static fallbacks do (`render/proposal_card.py`).
 */

import type { ProposalBlock } from "../state";
import { h } from "./dom";

export const PROPOSAL_EVENT = "agentcell:proposal";
export type ProposalAnswer = "accept" | "run" | "reject";

export interface DiffLine {
  sign: " " | "-" | "+";
  text: string;
}

/** A line diff by longest common subsequence (cells are short: the quadratic table is fine). */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before.split("\n");
  const b = after.split("\n");
  const width = b.length + 1;
  const table = new Array<number>((a.length + 1) * width).fill(0);
  const at = (i: number, j: number): number => table[i * width + j] ?? 0;
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) table[i * width + j] = a[i] === b[j] ? at(i + 1, j + 1) + 1 : Math.max(at(i + 1, j), at(i, j + 1));
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ sign: " ", text: a[i] ?? "" });
      i++;
      j++;
    } else if (i < a.length && (j >= b.length || at(i + 1, j) >= at(i, j + 1))) out.push({ sign: "-", text: a[i++] ?? "" });
    else out.push({ sign: "+", text: b[j++] ?? "" });
  }
  return out;
}

export function describeProposal(p: ProposalBlock): string {
  if (p.action === "edit") return `an edit of cell ${p.cellId}`;
  if (p.action === "delete") return `deleting cell ${p.cellId}`;
  const where = p.cellId ? `${p.position} cell ${p.cellId}` : "below the turn";
  return `a new ${p.cellType} cell ${where}`;
}

const RESOLVED: Record<string, string> = { accepted: "Accepted", rejected: "Rejected", failed: "Could not be applied" };

export class ProposalCard {
  readonly el: HTMLElement;
  private readonly status: HTMLElement;
  private readonly buttons: HTMLButtonElement[];
  private block: ProposalBlock;
  private readonly code: HTMLElement;

  constructor(block: ProposalBlock) {
    this.block = block;
    const title = `Proposed ${block.number}: ${describeProposal(block)}`;
    const code =
      block.action === "edit"
        ? h(
            "pre",
            { class: "ac-proposal-diff", "aria-label": "changes" },
            ...lineDiff(block.oldSource ?? "", block.source).map((line) =>
              h("div", { class: `ac-diff-line ac-diff-${line.sign === "+" ? "add" : line.sign === "-" ? "del" : "same"}` }, `${line.sign} ${line.text}`),
            ),
          )
        : block.action === "delete"
          ? h("pre", { class: "ac-proposal-code" }, block.oldSource ?? "")
          : // A new cell's source may be edited before it is accepted (its keys are text, not notebook shortcuts).
            h("pre", { class: "ac-proposal-code", contenteditable: "plaintext-only", spellcheck: "false", "aria-label": "proposed source (editable)", "data-lm-suppress-shortcuts": "true" }, block.source);
    this.code = code;
    const button = (label: string, answer: ProposalAnswer, key: string) => {
      const el = h("button", { type: "button", class: `ac-button ac-proposal-${answer}`, "aria-keyshortcuts": key, title: `${label} (${key})` }, label);
      el.addEventListener("click", () => this.answer(answer));
      return el;
    };
    this.buttons = [
      button("Accept", "accept", "A"),
      ...(block.action === "delete" ? [] : [button("Accept & run", "run", "R")]),
      button("Reject", "reject", "X"),
    ];
    this.status = h("span", { class: "ac-proposal-status", role: "status" }, "");
    const actions = h("div", { class: "ac-proposal-actions" }, ...this.buttons, this.status);
    this.el = h(
      "section",
      // data-proposal: the extension places a new cell's proposal in the notebook (lab/proposed_cells.ts).
      { class: "ac-proposal", role: "group", "aria-label": title, tabindex: "0", "data-proposal": JSON.stringify(block) },
      h("div", { class: "ac-proposal-title" }, h("strong", {}, title), block.note ? ` · ${block.note}` : ""),
      code,
      h("p", { class: "ac-note ac-proposal-help" }, `Without agentcell's JupyterLab extension: run %accept ${block.number} or %reject ${block.number} in a cell.`),
      actions,
    );
    // Keyboard: with the card focused, A accepts, R accepts and runs, X rejects. JupyterLab reads its
    // shortcuts as keydown bubbles to the document, so stopping it here keeps "a" from inserting a cell above,
    // and every other key (Ctrl+S) still reaches it.
    this.el.addEventListener("keydown", (event) => {
      if (event.target !== this.el || event.ctrlKey || event.metaKey || event.altKey) return;
      const answer = ({ a: "accept", r: "run", x: "reject" } as Record<string, ProposalAnswer>)[event.key.toLowerCase()];
      if (answer && !(answer === "run" && block.action === "delete")) {
        event.preventDefault();
        event.stopPropagation();
        this.answer(answer);
      }
    });
    this.update(block);
  }

  update(block: ProposalBlock): void {
    this.block = block;
    if (block.resolution) this.settle(RESOLVED[block.resolution] ?? block.resolution);
  }

  private settle(text: string): void {
    this.status.textContent = text;
    for (const b of this.buttons) b.disabled = true;
    this.el.classList.add("ac-proposal-settled");
  }

  private answer(answer: ProposalAnswer): void {
    if (this.buttons.every((b) => b.disabled)) return;
    // The source as the card shows it now: the user may have edited a new cell's before accepting.
    // innerText keeps the line breaks an edit made as <br> or <div> (jsdom has only textContent).
    const shown = (this.code.innerText as string | undefined) ?? this.code.textContent ?? this.block.source;
    const edited = this.block.action === "insert" ? shown.replace(/\n$/, "") || this.block.source : this.block.source;
    const proposal = { ...this.block, source: edited, proposedSource: this.block.source };
    const ask = new CustomEvent(PROPOSAL_EVENT, { bubbles: true, cancelable: true, composed: true, detail: { proposal, answer } });
    if (!this.el.dispatchEvent(ask)) {
      this.settle(answer === "reject" ? "Rejected" : answer === "run" ? "Accepted; running…" : "Accepted");
      return;
    }
    const magic = `%${answer === "reject" ? "reject" : "accept"} ${this.block.number}`;
    this.status.textContent = `Run ${magic} in a cell to answer.`;
    if (answer !== "reject" && navigator.clipboard) void navigator.clipboard.writeText(magic).then(() => (this.status.textContent = `Copied ${magic}: run it in a cell.`), () => undefined);
  }
}
