/**
 * The agent's proposed new cells as real cells of the notebook, in place, before anyone answers: when a turn's
 * proposal card shows and the kernel says the proposal still waits, a cell with its source goes where the
 * agent asked, marked proposed (the `ac-proposed-cell` class, a bar with Accept / Accept & run / Reject, keys
 * A / R / X) and editable like any cell. The mark is the cell's metadata, `agentcell.proposal = {id, status:
 * "pending", source}` (`source` is what the agent proposed, so an answer can tell the model the user edited
 * it), so it survives save and reopen and its bar comes back. The bar asks the page with the card's
 * `agentcell:proposal` event, so one place (proposals.ts) applies every answer and tells the kernel. A card
 * the kernel says was answered already (a reopened notebook) shows as answered. A proposal no card shows (made
 * while the notebook's tab was closed: its turn's output reached no page) is asked of the kernel whole
 * (`__agentcell__.waiting_proposals()`) when the notebook opens, and placed the same way.
 */

import type { Cell } from "@jupyterlab/cells";
import type { NotebookPanel } from "@jupyterlab/notebook";
import type { ProposalBlock } from "../state";
import { lineDiff, PROPOSAL_EVENT, type ProposalAnswer } from "../view/proposal";
import { cellOf } from "./cell_of";

export const PYTHON = "%%python\n";

// A type, not an interface: cell metadata takes JSON objects, which an interface is not known to be.
export type ProposalMark = {
  id: number;
  status: "pending" | "accepted";
  source: string;
};

type SharedCell = { id: string; getSource(): string; getMetadata(key?: string): unknown; setMetadata(key: string, value: unknown): void };

export function code(source: string): string {
  return source.startsWith(PYTHON) ? source.slice(PYTHON.length) : source;
}

export function markOf(cell: SharedCell): ProposalMark | null {
  const proposal = (cell.getMetadata("agentcell") as { proposal?: unknown } | undefined)?.proposal;
  if (!proposal || typeof proposal !== "object") return null;
  const mark = proposal as Partial<ProposalMark>;
  return typeof mark.id === "number" ? { id: mark.id, status: mark.status === "pending" ? "pending" : "accepted", source: String(mark.source ?? "") } : null;
}

export function setMark(cell: SharedCell, mark: ProposalMark): void {
  const agentcell = (cell.getMetadata("agentcell") as Record<string, unknown> | undefined) ?? {};
  cell.setMetadata("agentcell", { ...agentcell, proposal: mark });
}

/** The index of the cell placed for proposal `number`, or -1. */
export function placedIndex(panel: NotebookPanel, number: number): number {
  const cells = panel.content.model?.sharedModel.cells ?? [];
  return cells.findIndex((cell) => markOf(cell as unknown as SharedCell)?.id === number);
}

/** Where a new cell of `proposal` goes: next to the cell the agent named, else below the turn. */
export function insertIndex(panel: NotebookPanel, proposal: ProposalBlock, from: EventTarget | null): number {
  const notebook = panel.content;
  const ids = notebook.model!.sharedModel.cells.map((cell) => cell.id);
  const anchor = proposal.cellId ?? proposal.turnCellId;
  const owner = cellOf(notebook, from);
  const at = anchor && ids.includes(anchor) ? ids.indexOf(anchor) : owner ? notebook.widgets.indexOf(owner) : ids.length - 1;
  return proposal.position === "before" ? at : at + 1;
}

/** The source a new cell of `proposal` is given (`%%python` on the agentcell kernel, for code). */
export function newSource(panel: NotebookPanel, proposal: ProposalBlock): string {
  const agentcell = panel.sessionContext.session?.kernel?.name === "agentcell";
  return proposal.cellType === "markdown" || !agentcell ? proposal.source : PYTHON + proposal.source;
}

/** The numbers of the proposals the kernel says still wait (null when it could not say). */
export async function pendingProposals(panel: NotebookPanel): Promise<number[] | null> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) return null;
  const asked = kernel.requestExecute({ code: "", silent: true, store_history: false, user_expressions: { pending: "__agentcell__.pending_proposals()" } });
  const reply = await asked.done;
  const said = (reply.content as { user_expressions?: Record<string, { status?: string; data?: Record<string, unknown> }> }).user_expressions?.pending;
  if (said?.status !== "ok") return null;
  return [...String(said.data?.["text/plain"] ?? "").matchAll(/\d+/g)].map((m) => Number(m[0]));
}

/** The proposals the kernel says still wait, whole (null when it could not say). */
async function waitingProposals(panel: NotebookPanel): Promise<ProposalBlock[] | null> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) return null;
  const asked = kernel.requestExecute({ code: "", silent: true, store_history: false, user_expressions: { waiting: "__agentcell__.waiting_proposals()" } });
  const reply = await asked.done;
  const said = (reply.content as { user_expressions?: Record<string, { status?: string; data?: Record<string, unknown> }> }).user_expressions?.waiting;
  const found = said?.status === "ok" ? said.data?.["application/json"] : null;
  return Array.isArray(found) ? (found as ProposalBlock[]) : null;
}

function place(panel: NotebookPanel, proposal: ProposalBlock, card: Element | null): void {
  const shared = panel.content.model?.sharedModel;
  if (!shared || panel.content.model?.readOnly || placedIndex(panel, proposal.number) >= 0) return;
  const at = insertIndex(panel, proposal, card);
  const mark: ProposalMark = { id: proposal.number, status: "pending", source: proposal.source };
  shared.insertCell(at, { cell_type: proposal.cellType === "markdown" ? "markdown" : "code", source: newSource(panel, proposal), metadata: { agentcell: { proposal: mark } } });
}

/**
 * The kernels (sessions) whose user chose "Accept & run, always": later proposals are accepted and run as
 * they come, like an approval allowed for the session; a new kernel asks again.
 */
const alwaysRun = new Set<string>();

function kernelId(panel: NotebookPanel): string {
  return panel.sessionContext.session?.kernel?.id ?? "";
}

/** Edits and deletions waiting, by the id of the cell they are about (known from their cards, not saved). */
const waitingEdits = new WeakMap<NotebookPanel, Map<string, ProposalBlock>>();

function editsOf(panel: NotebookPanel): Map<string, ProposalBlock> {
  const known = waitingEdits.get(panel) ?? new Map<string, ProposalBlock>();
  waitingEdits.set(panel, known);
  return known;
}

/** A card's answered look, for one the kernel says was answered or one answered on its cell (it cannot know). */
function showAnswered(card: Element, text: string): void {
  if (card.classList.contains("ac-proposal-settled")) return;
  card.classList.add("ac-proposal-settled");
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  const status = card.querySelector(".ac-proposal-status");
  if (status) status.textContent = text;
}

/** After proposal `number` was answered (on its card or its cell): its cards and cell marks say so. */
export function answered(panel: NotebookPanel, number: number, text: string): void {
  for (const card of panel.content.node.querySelectorAll(".ac-proposal[data-proposal]")) {
    if ((JSON.parse(card.getAttribute("data-proposal") ?? "{}") as { number?: number }).number === number) showAnswered(card, text);
  }
  const edits = editsOf(panel);
  for (const [id, edit] of edits) if (edit.number === number) edits.delete(id);
  decorate(panel);
}

async function seeCards(panel: NotebookPanel, placing: Set<number>): Promise<void> {
  const unseen = (): Element[] => [...panel.content.node.querySelectorAll(".ac-proposal[data-proposal]:not([data-ac-seen])")];
  // Only the agentcell kernel can say (a Python kernel showing saved cards is never asked).
  if (unseen().length === 0 || panel.sessionContext.session?.kernel?.name !== "agentcell") return;
  const pending = await pendingProposals(panel);
  if (pending === null) return; // not ready yet (or no agentcell kernel): the next look asks again
  const fresh = unseen();
  for (const card of fresh) card.setAttribute("data-ac-seen", "");
  for (const card of fresh) {
    const proposal = JSON.parse(card.getAttribute("data-proposal") ?? "{}") as ProposalBlock;
    if (!pending.includes(proposal.number)) showAnswered(card, "Answered");
    else if (proposal.action !== "insert" && proposal.cellId) editsOf(panel).set(proposal.cellId, proposal);
    else if (proposal.action === "insert" && !placing.has(proposal.number)) {
      placing.add(proposal.number);
      place(panel, proposal, card);
    }
    if (pending.includes(proposal.number) && proposal.action !== "delete" && alwaysRun.has(kernelId(panel))) {
      card.dispatchEvent(new CustomEvent(PROPOSAL_EVENT, { bubbles: true, cancelable: true, detail: { proposal, answer: "run" } }));
    }
  }
  decorate(panel);
}

/**
 * The proposals no card of this page shows: made while the notebook was closed (its turn's output went to
 * no tab), or in a turn another tab ran. Placed, or marked on their cell, as their cards would have; returns
 * their numbers, for the user to be told once.
 */
async function placeWaiting(panel: NotebookPanel, placing: Set<number>): Promise<number[]> {
  if (panel.sessionContext.session?.kernel?.name !== "agentcell" || panel.content.model?.readOnly) return [];
  const waiting = await waitingProposals(panel);
  if (!waiting) return [];
  const carded = new Set([...panel.content.node.querySelectorAll(".ac-proposal[data-proposal]")].map((card) => (JSON.parse(card.getAttribute("data-proposal") ?? "{}") as { number?: number }).number));
  const edits = editsOf(panel);
  const fresh = waiting.filter((p) => !carded.has(p.number) && !placing.has(p.number) && placedIndex(panel, p.number) < 0 && !(p.cellId && edits.get(p.cellId)?.number === p.number));
  for (const proposal of fresh) {
    if (proposal.action === "insert") {
      placing.add(proposal.number);
      place(panel, proposal, null);
    } else if (proposal.cellId) edits.set(proposal.cellId, proposal);
  }
  decorate(panel);
  return fresh.map((p) => p.number);
}

/** The bar of a cell with a proposal waiting: what it is, then Accept / Accept & run / Reject (A / R / X). */
function bar(panel: NotebookPanel, number: number, what: string, proposal: () => object, run: boolean): HTMLElement {
  const el = document.createElement("div");
  el.className = "ac-proposed-bar";
  el.tabIndex = 0;
  el.setAttribute("role", "group");
  el.setAttribute("aria-label", `Proposed ${number}`);
  const label = document.createElement("strong");
  label.textContent = `Proposed ${number}`;
  el.append(label, ` · ${what}`);
  const ask = (answer: ProposalAnswer): void => {
    el.dispatchEvent(new CustomEvent(PROPOSAL_EVENT, { bubbles: true, cancelable: true, detail: { proposal: proposal(), answer } }));
  };
  const answers = [["Accept", "accept", "A"], ["Accept & run", "run", "R"], ["Reject", "reject", "X"]] as const;
  for (const [text, answer, key] of answers.filter(([, answer]) => run || answer !== "run")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = `ac-button ac-proposal-${answer}`;
    button.textContent = text;
    button.title = `${text} (${key}, with the bar focused)`;
    button.setAttribute("aria-keyshortcuts", key);
    button.addEventListener("click", () => ask(answer));
    el.append(button);
  }
  if (run) {
    const always = document.createElement("button");
    always.type = "button";
    always.className = "ac-button ac-proposal-always";
    always.textContent = "Accept & run, always";
    always.title = "Accept and run this and every later proposal of this kernel session as it comes";
    always.addEventListener("click", () => {
      alwaysRun.add(kernelId(panel));
      ask("run");
    });
    el.append(always);
  }
  // As on the card: JupyterLab reads its shortcuts as keydown reaches the document, so "a" here is Accept.
  el.addEventListener("keydown", (event) => {
    const answer = ({ a: "accept", r: "run", x: "reject" } as Record<string, ProposalAnswer>)[event.key.toLowerCase()];
    if (event.target !== el || event.ctrlKey || event.metaKey || event.altKey || !answer || (answer === "run" && !run)) return;
    event.preventDefault();
    event.stopPropagation();
    ask(answer);
  });
  return el;
}

function newCellBar(panel: NotebookPanel, cell: Cell, mark: ProposalMark): HTMLElement {
  const proposal = () => ({ number: mark.id, action: "insert", source: code(cell.model.sharedModel.getSource()) });
  return bar(panel, mark.id, "the agent's new cell: edit it if you like, then", proposal, true);
}

/** An edit's (or a deletion's) bar on the cell it is about, with the diff of its source and the proposal. */
function editBar(panel: NotebookPanel, cell: Cell, edit: ProposalBlock): HTMLElement {
  const what = edit.action === "delete" ? "the agent proposes deleting this cell" : "the agent proposes this edit of the cell";
  const el = bar(panel, edit.number, what, () => edit, edit.action !== "delete");
  el.classList.add("ac-proposed-edit");
  const diff = document.createElement("pre");
  diff.className = "ac-proposal-diff";
  diff.setAttribute("aria-label", "changes");
  const after = edit.action === "delete" ? "" : edit.source;
  for (const line of lineDiff(edit.oldSource ?? code(cell.model.sharedModel.getSource()), after)) {
    const row = document.createElement("div");
    row.className = `ac-diff-line ac-diff-${line.sign === "+" ? "add" : line.sign === "-" ? "del" : "same"}`;
    row.textContent = `${line.sign} ${line.text}`;
    diff.append(row);
  }
  el.append(diff);
  return el;
}

/** Mark each cell with a proposal waiting (class and bar), and unmark the answered ones. */
export function decorate(panel: NotebookPanel): void {
  const edits = editsOf(panel);
  for (const cell of panel.content.widgets) {
    const mark = markOf(cell.model.sharedModel as unknown as SharedCell);
    const edit = edits.get(cell.model.id);
    const key = mark?.status === "pending" ? `new ${mark.id}` : edit ? `edit ${edit.number}` : "";
    const shown = cell.node.querySelector(":scope > .ac-proposed-bar");
    if (shown?.getAttribute("data-key") === key) continue;
    shown?.remove();
    cell.toggleClass("ac-proposed-cell", key !== "");
    if (!key) continue;
    const made = mark?.status === "pending" ? newCellBar(panel, cell, mark) : editBar(panel, cell, edit!);
    made.setAttribute("data-key", key);
    cell.node.prepend(made);
  }
}

/** `tell`: the user is told of the proposals placed without a card (their numbers). */
export function followProposedCells(panel: NotebookPanel, tell: (numbers: number[]) => void): void {
  const placing = new Set<number>();
  // One question to the kernel at a time: the DOM changes with every keystroke, a card shows once.
  let asking: Promise<void> | null = null;
  let again = false;
  const look = (): void => {
    if (asking) {
      again = true;
      return;
    }
    asking = seeCards(panel, placing).finally(() => {
      asking = null;
      if (again) {
        again = false;
        look();
      }
    });
  };
  new MutationObserver(look).observe(panel.content.node, { childList: true, subtree: true });
  void panel.context.ready.then(() => {
    decorate(panel);
    panel.content.model?.sharedModel.changed.connect(() => decorate(panel));
  });
  void panel.sessionContext.ready.then(look);
  panel.sessionContext.kernelChanged.connect(look);
  // Proposals without a card, asked once the notebook and its kernel are ready. Reopened while the closed
  // tab's turn still runs, the question waits in the kernel's queue behind the turn, so it sees its proposals.
  const askWaiting = (): void => {
    placeWaiting(panel, placing).then((numbers) => numbers.length > 0 && tell(numbers), () => undefined);
  };
  void Promise.all([panel.context.ready, panel.sessionContext.ready]).then(askWaiting);
  panel.sessionContext.kernelChanged.connect(() => void panel.sessionContext.ready.then(askWaiting));
}
