/**
 * A proposed cell's answer in JupyterLab and Notebook 7. The turn view cannot reach the notebook, so its
 * Accept / Accept & run / Reject ask the page with a bubbling `agentcell:proposal` event (view/proposal.ts);
 * this applies it to the notebook: a new cell next to the cell the agent named (or below the turn, a
 * `%%python` cell on the agentcell kernel, a Markdown cell for notes), an edit of the named cell's source,
 * a deletion. An edit or a deletion of a cell that no longer reads as the agent saw it is not applied: the
 * user is told. Then the kernel is told (`__agentcell__.answer_proposal`, a silent user expression), so the
 * next request tells the model, and for Accept & run the cell runs. preventDefault tells the view it was
 * answered here.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { Notification } from "@jupyterlab/apputils";
import { INotebookTracker, NotebookActions, type NotebookPanel } from "@jupyterlab/notebook";
import type { ProposalBlock } from "../state";
import { PROPOSAL_EVENT, type ProposalAnswer } from "../view/proposal";
import { answered, code, followProposedCells, insertIndex, markOf, newSource, pendingProposals, placedIndex, PYTHON, setMark } from "./proposed_cells";

type Outcome = { outcome: "accepted" | "rejected" | "failed"; cellId: string | null; message: string; run: number | null };

function apply(panel: NotebookPanel, proposal: ProposalBlock, answer: ProposalAnswer, from: EventTarget | null): Outcome {
  const notebook = panel.content;
  const shared = notebook.model!.sharedModel;
  const ids = shared.cells.map((cell) => cell.id);
  const placed = proposal.action === "insert" ? placedIndex(panel, proposal.number) : -1;
  if (placed >= 0) {
    // Already in the notebook as a proposed cell: Reject takes it out, Accept keeps it (as the user left it).
    const cell = shared.cells[placed]!;
    if (answer === "reject") {
      shared.deleteCell(placed);
      return { outcome: "rejected", cellId: null, message: "", run: null };
    }
    if (code(cell.getSource()) !== proposal.source) cell.setSource((cell.getSource().startsWith(PYTHON) ? PYTHON : "") + proposal.source);
    setMark(cell, { ...markOf(cell)!, status: "accepted" });
    return { outcome: "accepted", cellId: cell.id, message: "", run: placed };
  }
  if (answer === "reject") return { outcome: "rejected", cellId: null, message: "", run: null };
  if (proposal.action === "insert") {
    const at = insertIndex(panel, proposal, from);
    shared.insertCell(at, { cell_type: proposal.cellType === "markdown" ? "markdown" : "code", source: newSource(panel, proposal), metadata: { agentcell: { proposal: { id: proposal.number, status: "accepted", source: proposal.source } } } });
    return { outcome: "accepted", cellId: shared.cells[at]?.id ?? null, message: "", run: at };
  }
  const index = proposal.cellId ? ids.indexOf(proposal.cellId) : -1;
  const cell = index >= 0 ? shared.cells[index] : undefined;
  if (!cell) return { outcome: "failed", cellId: null, message: `cell ${proposal.cellId} is not in the notebook any more`, run: null };
  if (code(cell.getSource()) !== proposal.oldSource) {
    return { outcome: "failed", cellId: null, message: `cell ${proposal.cellId} changed since the agent proposed this`, run: null };
  }
  if (proposal.action === "delete") {
    shared.deleteCell(index);
    return { outcome: "accepted", cellId: null, message: "", run: null };
  }
  cell.setSource((cell.getSource().startsWith(PYTHON) ? PYTHON : "") + proposal.source);
  return { outcome: "accepted", cellId: proposal.cellId, message: "", run: index };
}

function answerProposal(panel: NotebookPanel, event: Event): void {
  const detail = (event as CustomEvent<{ proposal?: ProposalBlock; answer?: ProposalAnswer }>).detail;
  const proposal = detail?.proposal;
  const answer = detail?.answer;
  const model = panel.content.model;
  const kernel = panel.sessionContext.session?.kernel;
  if (!proposal || !answer || !model || model.readOnly || !kernel) return;
  event.preventDefault();
  // A reopened notebook's card cannot know it was answered since: the kernel says which still wait.
  const target = event.target;
  void pendingProposals(panel).then((pending) => {
    if (!pending?.includes(proposal.number)) {
      Notification.warning(`Proposal ${proposal.number} was answered already; nothing was changed.`, { autoClose: 8000 });
      return;
    }
    settle(panel, withPlacedSource(panel, proposal), answer, target);
  });
}

/** A placed proposal's answer is about the cell as the user left it, unless its card's copy was edited. */
function withPlacedSource(panel: NotebookPanel, proposal: ProposalBlock): ProposalBlock {
  const at = proposal.action === "insert" ? placedIndex(panel, proposal.number) : -1;
  const cell = at >= 0 ? panel.content.model!.sharedModel.cells[at] : undefined;
  if (!cell) return proposal;
  const proposed = markOf(cell)?.source ?? proposal.source;
  const fromCard = (proposal as ProposalBlock & { proposedSource?: string }).proposedSource !== undefined && proposal.source !== proposed;
  return { ...proposal, source: fromCard ? proposal.source : code(cell.getSource()), proposedSource: proposed } as ProposalBlock;
}

function settle(panel: NotebookPanel, proposal: ProposalBlock, answer: ProposalAnswer, target: EventTarget | null): void {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) return;
  const done = apply(panel, proposal, answer, target);
  answered(panel, proposal.number, done.outcome === "failed" ? "Could not be applied" : answer === "reject" ? "Rejected" : "Accepted");
  const run = answer === "run" && done.run !== null;
  // JSON strings are Python string literals too; null is not.
  const cellId = done.cellId === null ? "None" : JSON.stringify(done.cellId);
  const proposed = (proposal as ProposalBlock & { proposedSource?: string }).proposedSource;
  const edited = done.outcome === "accepted" && proposed !== undefined && proposed !== proposal.source;
  const source = edited ? `, source=${JSON.stringify(proposal.source)}` : "";
  const call = `__agentcell__.answer_proposal(${proposal.number}, ${JSON.stringify(done.outcome)}, cell_id=${cellId}, run=${run ? "True" : "False"}, message=${JSON.stringify(done.message)}${source})`;
  const told = kernel.requestExecute({ code: "", silent: true, store_history: false, user_expressions: { answer: call } });
  void told.done.then((reply) => {
    const said = (reply.content as { user_expressions?: Record<string, { status?: string; evalue?: string }> }).user_expressions?.answer;
    if (said?.status !== "ok") Notification.warning(`Proposal ${proposal.number}: ${said?.evalue ?? "the kernel did not record the answer"}`, { autoClose: 8000 });
  });
  if (done.outcome === "failed") {
    Notification.error(`Proposal ${proposal.number} was not applied: ${done.message}.`, { autoClose: false });
    return;
  }
  if (done.run !== null) {
    panel.content.activeCellIndex = done.run;
    void panel.content.scrollToItem(done.run, "smart");
    if (run) void NotebookActions.run(panel.content, panel.sessionContext);
  }
}

/** Proposals placed with no card to show them (made while the notebook was closed): said once. */
function tellWaiting(numbers: number[]): void {
  const one = numbers.length === 1;
  const what = `${one ? "a cell" : "cells"} (${numbers.join(", ")}): ${one ? "it waits" : "they wait"}`;
  Notification.info(`While this notebook was closed, the agent proposed ${what} for your answer, marked in the notebook.`, { autoClose: 10000 });
}

function follow(panel: NotebookPanel): void {
  followProposedCells(panel, tellWaiting);
  panel.node.addEventListener(PROPOSAL_EVENT, (event) => answerProposal(panel, event));
}

export const proposalsPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:proposals",
  description: "Accept, Accept & run and Reject on the agent's proposed cells apply them to the notebook.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    document.body.classList.add("agentcell-proposals"); // the cards' "without the extension" hint is not for this page
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
