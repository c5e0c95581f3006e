/**
 * The whole turn: header, the main thread's blocks, one collapsible view per sub-agent thread, outcome
 * panels and the cost meter. `paint(state)` is idempotent: each block keeps its DOM and only repaints
 * when its part of the state changed.
 */

import type { Block, Thread, TurnState } from "../state";
import { RUNNING } from "../status";
import { ThinkingView, errorView, noteView, outcomeView } from "./blocks";
import { CostMeter, usageCost } from "./cost";
import { formatCount, h, replaceChildren } from "./dom";
import { Header } from "./header";
import { MarkdownStream } from "./markdown_stream";
import { ProposalCard } from "./proposal";
import { type Send, ToolCard } from "./tool";
import { WorkflowView } from "./workflow";

interface BlockView {
  el: HTMLElement;
  update(block: Block, state: TurnState): void;
}

export class TurnView {
  readonly el: HTMLElement;
  private readonly header: Header;
  private readonly body: HTMLElement;
  private readonly threadsEl: HTMLElement;
  private readonly workflowsEl: HTMLElement;
  private readonly outcomesEl: HTMLElement;
  private readonly cost: CostMeter;
  private readonly views = new Map<string, BlockView>();
  private readonly threadViews = new Map<string, ThreadView>();
  private readonly workflowViews = new Map<string, WorkflowView>();
  private outcomesSignature = "";
  private readonly notebookEl: HTMLElement;
  private notebookSignature = "";
  /** Repaints the meter's elapsed time every second while the turn runs. */
  private ticker: ReturnType<typeof setInterval> | null = null;
  private latest: TurnState | null = null;

  constructor(
    root: HTMLElement,
    private readonly send: Send,
  ) {
    this.header = new Header(send);
    this.body = h("div", { class: "ac-body" });
    this.threadsEl = h("div", { class: "ac-threads" });
    this.workflowsEl = h("div", { class: "ac-workflows" });
    this.outcomesEl = h("div", { class: "ac-outcomes" });
    this.cost = new CostMeter();
    this.notebookEl = h("div", { class: "ac-notebook-context" });
    this.el = h("div", { class: "agentcell-turn" }, this.header.el, this.notebookEl, this.body, this.workflowsEl, this.threadsEl, this.outcomesEl, this.cost.el);
    this.el.addEventListener("click", (event) => {
      copyCode(event);
      insertCode(event);
    });
    root.append(this.el);
  }

  paint(state: TurnState): void {
    this.el.dataset.status = state.status;
    this.header.update(state);
    this.paintNotebook(state);
    this.syncList(this.body, state.order, state);
    this.paintWorkflows(state);
    this.paintThreads(state);
    this.paintOutcomes(state);
    this.cost.update(state);
    this.tick(state);
  }

  /** "notebook: 3 cells, 12 variables", opening to each cell as the model was sent it. */
  private paintNotebook(state: TurnState): void {
    const signature = JSON.stringify(state.notebook);
    if (signature === this.notebookSignature) return;
    this.notebookSignature = signature;
    const notebook = state.notebook;
    this.notebookEl.replaceChildren(
      ...(notebook
        ? [
            h(
              "details",
              {},
              h("summary", { title: "what the turn took from the notebook" }, `notebook: ${notebook.summary}`),
              ...notebook.cells.map((text) => h("pre", { class: "ac-notebook-cell" }, text)),
            ),
          ]
        : []),
    );
  }

  private tick(state: TurnState): void {
    this.latest = state;
    if (state.status === "running" && !this.ticker) {
      this.ticker = setInterval(() => {
        const latest = this.latest;
        if (!this.el.isConnected || !latest || latest.status !== "running") {
          this.stopTicking();
          return;
        }
        this.cost.update(latest);
        this.paintWorkflows(latest);
      }, 1000);
    } else if (state.status !== "running") {
      this.stopTicking();
    }
  }

  private stopTicking(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }

  /** Stop the timer (the widget calls this when its view is removed). */
  dispose(): void {
    this.stopTicking();
  }

  private syncList(container: HTMLElement, order: string[], state: TurnState): void {
    let previous: Element | null = null;
    for (const id of order) {
      const block = state.blocks.get(id);
      if (!block) continue;
      const view = this.viewFor(block);
      const expected: Element | null = previous ? previous.nextElementSibling : container.firstElementChild;
      if (expected !== view.el) {
        if (previous) previous.after(view.el);
        else container.prepend(view.el);
      }
      // In place before it paints: a card that takes focus or watches its visibility must be in the page.
      view.update(block, state);
      previous = view.el;
    }
    // Blocks dropped from the state (a failed attempt's previews) leave the DOM too.
    let extra: Element | null = previous ? previous.nextElementSibling : container.firstElementChild;
    while (extra) {
      const next: Element | null = extra.nextElementSibling;
      extra.remove();
      extra = next;
    }
  }

  private viewFor(block: Block): BlockView {
    let view = this.views.get(block.id);
    if (!view) {
      view = makeView(block, this.send);
      this.views.set(block.id, view);
    }
    return view;
  }

  /** Each workflow run's progress view; `now` (ms) clocks the items still running. */
  private paintWorkflows(state: TurnState, now: number = Date.now()): void {
    for (const run of state.workflows.values()) {
      let view = this.workflowViews.get(run.id);
      if (!view) {
        view = new WorkflowView(run);
        this.workflowViews.set(run.id, view);
        this.workflowsEl.append(view.el);
      }
      view.update(state, run, now);
    }
  }

  private paintThreads(state: TurnState): void {
    for (const thread of state.threads.values()) {
      let view = this.threadViews.get(thread.id);
      if (!view) {
        view = new ThreadView();
        this.threadViews.set(thread.id, view);
      }
      // A workflow step's thread shows inside its step's row; any other under the turn.
      const parent = this.slotFor(thread.id) ?? this.threadsEl;
      if (view.el.parentElement !== parent) parent.append(view.el);
      view.update(thread, state.status === "running");
      this.syncList(view.list, thread.order, state);
    }
  }

  private slotFor(threadId: string): HTMLElement | null {
    for (const view of this.workflowViews.values()) {
      const slot = view.slotFor(threadId);
      if (slot) return slot;
    }
    return null;
  }

  private paintOutcomes(state: TurnState): void {
    const signature = JSON.stringify([...state.outcomes.values()]);
    if (signature === this.outcomesSignature) return;
    this.outcomesSignature = signature;
    this.outcomesEl.replaceChildren(...[...state.outcomes.values()].map(outcomeView));
  }
}

/**
 * A sub-agent thread: open with a spinner while it runs (unless the user closed it), "finished" once it
 * stopped (with why, when that was not the end of its turn), its model, tokens and cost in the summary.
 */
class ThreadView {
  readonly el: HTMLDetailsElement;
  readonly list: HTMLElement;
  private readonly summary: HTMLElement;
  private signature = "";
  private userToggled = false;
  private settingOpen = false;

  constructor() {
    this.summary = h("summary", { class: "ac-thread-head" });
    this.list = h("div", { class: "ac-thread-body" });
    this.el = h("details", { class: "ac-thread" }, this.summary, this.list);
    this.el.addEventListener("toggle", () => {
      if (!this.settingOpen) this.userToggled = true;
    });
  }

  update(thread: Thread, turnRunning: boolean): void {
    const running = thread.status === RUNNING && turnRunning;
    const u = thread.usage;
    const signature = JSON.stringify([thread.title, thread.model, thread.status, running, u.input, u.output, String(u.cost), u.unpriced]);
    if (signature === this.signature) return;
    this.signature = signature;
    this.el.dataset.status = running ? "running" : "finished";
    const status = running ? "running" : thread.status === "end_turn" || thread.status === RUNNING || thread.status === "idle" ? "finished" : `finished: ${thread.status.replace(/_/g, " ")}`;
    replaceChildren(
      this.summary,
      running ? h("span", { class: "ac-spinner", role: "progressbar", "aria-label": "thread running" }) : null,
      h("span", { class: "ac-thread-title" }, `Thread: ${thread.title}`),
      h("span", { class: `ac-thread-status ac-thread-${running ? "running" : "finished"}`, role: "status" }, status),
      thread.model ? h("span", { class: "ac-thread-model" }, thread.model) : null,
      h("span", { class: "ac-thread-usage" }, `in ${formatCount(u.input)} · out ${formatCount(u.output)} · ${usageCost(u)}`),
    );
    if (!this.userToggled && this.el.open !== running) {
      this.settingOpen = true;
      this.el.open = running;
      window.setTimeout(() => (this.settingOpen = false), 0);
    }
  }
}

function makeView(block: Block, send: Send): BlockView {
  switch (block.kind) {
    case "message":
      return messageView();
    case "thinking": {
      const view = new ThinkingView();
      return { el: view.el, update: (b) => b.kind === "thinking" && view.update(b) };
    }
    case "tool": {
      const card = new ToolCard(send);
      return { el: card.el, update: (b, state) => b.kind === "tool" && card.update(b, state) };
    }
    case "error":
      return { el: errorView(block), update: () => undefined };
    case "note":
      return { el: noteView(block), update: () => undefined };
    case "proposal": {
      const card = new ProposalCard(block);
      return { el: card.el, update: (b) => b.kind === "proposal" && card.update(b) };
    }
  }
}

/** A finished reply longer than this folds behind "Show more" (about 700 words). */
export const LONG_REPLY_CHARS = 4_000;

function messageView(): BlockView {
  const stream = new MarkdownStream();
  const el = h("div", { class: "ac-message" }, stream.el);
  const mark = h("span", { class: "ac-interrupted" }, "(interrupted)");
  const more = h("button", { type: "button", class: "ac-button ac-more-reply", "aria-expanded": "false" }, "Show more");
  let expanded = false;
  more.addEventListener("click", () => {
    expanded = !expanded;
    el.classList.toggle("ac-folded", !expanded);
    more.textContent = expanded ? "Show less" : "Show more";
    more.setAttribute("aria-expanded", String(expanded));
  });
  return {
    el,
    update(b) {
      if (b.kind !== "message") return;
      stream.update(b.text, !b.streaming);
      el.classList.toggle("ac-streaming", b.streaming);
      if (b.interrupted && !mark.isConnected) el.append(mark);
      const long = !b.streaming && b.text.length > LONG_REPLY_CHARS;
      if (long && !more.isConnected) {
        more.textContent = `Show more (${b.text.split(/\s+/).length.toLocaleString("en-US")} words)`;
        el.classList.add("ac-folded");
        stream.el.after(more);
      } else if (!long && more.isConnected) {
        more.remove();
        el.classList.remove("ac-folded");
      }
    },
  };
}

function copyCode(event: MouseEvent): void {
  const target = event.target instanceof Element ? event.target.closest(".ac-copy") : null;
  const code = target?.closest(".ac-code")?.querySelector("code");
  if (!target || !code) return;
  const text = code.textContent ?? "";
  const done = () => {
    target.textContent = "Copied";
    window.setTimeout(() => (target.textContent = "Copy"), 1500);
  };
  if (navigator.clipboard) void navigator.clipboard.writeText(text).then(done, () => (target.textContent = "Copy failed"));
}

/** The new cell's source for a code block: a `%%python` cell for Python, a prose cell otherwise. */
export function cellSource(code: string, language: string): string {
  const body = code.replace(/\n+$/, "");
  return /^(python|py|ipython|python3)$/i.test(language) ? `%%python\n${body}` : body;
}

/**
 * "Insert below": the view cannot reach the notebook itself, so it asks the page with a bubbling
 * `agentcell:insert-cell` event ({ source }); agentcell's JupyterLab / Notebook 7 extension answers by
 * inserting the cell below this output and calling preventDefault. Where nobody answers, the source is
 * copied for the user to paste.
 */
function insertCode(event: MouseEvent): void {
  const target = event.target instanceof Element ? event.target.closest(".ac-insert") : null;
  const code = target?.closest(".ac-code")?.querySelector("code");
  if (!target || !code) return;
  const language = /language-(\S+)/.exec(code.className)?.[1] ?? "";
  const source = cellSource(code.textContent ?? "", language);
  const ask = new CustomEvent("agentcell:insert-cell", { bubbles: true, cancelable: true, composed: true, detail: { source } });
  const say = (text: string) => {
    target.textContent = text;
    window.setTimeout(() => (target.textContent = "Insert below"), 2000);
  };
  if (!target.dispatchEvent(ask)) {
    say("Inserted");
    return;
  }
  if (navigator.clipboard) void navigator.clipboard.writeText(source).then(() => say("Copied: paste it into a new cell"), () => say("Insert failed"));
  else say("Insert failed");
}
