/**
 * The whole turn: header, the main thread's blocks, one collapsible view per sub-agent thread, outcome
 * panels and the cost meter. `paint(state)` is idempotent: each block keeps its DOM and only repaints
 * when its part of the state changed.
 */

import type { Block, Thread, TurnState } from "../state";
import { ThinkingView, errorView, noteView, outcomeView } from "./blocks";
import { CostMeter } from "./cost";
import { h } from "./dom";
import { Header } from "./header";
import { MarkdownStream } from "./markdown_stream";
import { type Send, ToolCard } from "./tool";

interface BlockView {
  el: HTMLElement;
  update(block: Block, state: TurnState): void;
}

export class TurnView {
  readonly el: HTMLElement;
  private readonly header: Header;
  private readonly body: HTMLElement;
  private readonly threadsEl: HTMLElement;
  private readonly outcomesEl: HTMLElement;
  private readonly cost: CostMeter;
  private readonly views = new Map<string, BlockView>();
  private readonly threadViews = new Map<string, { el: HTMLDetailsElement; summary: HTMLElement; list: HTMLElement }>();
  private outcomesSignature = "";

  constructor(
    root: HTMLElement,
    private readonly send: Send,
  ) {
    this.header = new Header(send);
    this.body = h("div", { class: "ac-body" });
    this.threadsEl = h("div", { class: "ac-threads" });
    this.outcomesEl = h("div", { class: "ac-outcomes" });
    this.cost = new CostMeter();
    this.el = h("div", { class: "agentcell-turn" }, this.header.el, this.body, this.threadsEl, this.outcomesEl, this.cost.el);
    this.el.addEventListener("click", (event) => copyCode(event));
    root.append(this.el);
  }

  paint(state: TurnState): void {
    this.el.dataset.status = state.status;
    this.header.update(state);
    this.syncList(this.body, state.order, state);
    this.paintThreads(state);
    this.paintOutcomes(state);
    this.cost.update(state);
  }

  private syncList(container: HTMLElement, order: string[], state: TurnState): void {
    let previous: Element | null = null;
    for (const id of order) {
      const block = state.blocks.get(id);
      if (!block) continue;
      const view = this.viewFor(block);
      view.update(block, state);
      const expected: Element | null = previous ? previous.nextElementSibling : container.firstElementChild;
      if (expected !== view.el) {
        if (previous) previous.after(view.el);
        else container.prepend(view.el);
      }
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

  private paintThreads(state: TurnState): void {
    for (const thread of state.threads.values()) {
      let view = this.threadViews.get(thread.id);
      if (!view) {
        const summary = h("summary", {});
        const list = h("div", { class: "ac-thread-body" });
        view = { el: h("details", { class: "ac-thread" }, summary, list), summary, list };
        this.threadViews.set(thread.id, view);
        this.threadsEl.append(view.el);
      }
      const title = threadTitle(thread);
      if (view.summary.textContent !== title) view.summary.textContent = title;
      this.syncList(view.list, thread.order, state);
    }
  }

  private paintOutcomes(state: TurnState): void {
    const signature = JSON.stringify([...state.outcomes.values()]);
    if (signature === this.outcomesSignature) return;
    this.outcomesSignature = signature;
    this.outcomesEl.replaceChildren(...[...state.outcomes.values()].map(outcomeView));
  }
}

function threadTitle(thread: Thread): string {
  return `Thread: ${thread.title} — ${thread.status} (${thread.order.length} items)`;
}

function makeView(block: Block, send: Send): BlockView {
  switch (block.kind) {
    case "message": {
      const stream = new MarkdownStream();
      const el = h("div", { class: "ac-message" }, stream.el);
      const mark = h("span", { class: "ac-interrupted" }, "(interrupted)");
      return {
        el,
        update(b) {
          if (b.kind !== "message") return;
          stream.update(b.text, !b.streaming);
          el.classList.toggle("ac-streaming", b.streaming);
          if (b.interrupted && !mark.isConnected) el.append(mark);
        },
      };
    }
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
  }
}

function copyCode(event: MouseEvent): void {
  const target = event.target instanceof Element ? event.target.closest(".ac-copy") : null;
  const code = target?.parentElement?.querySelector("code");
  if (!target || !code) return;
  const text = code.textContent ?? "";
  const done = () => {
    target.textContent = "Copied";
    window.setTimeout(() => (target.textContent = "Copy"), 1500);
  };
  if (navigator.clipboard) void navigator.clipboard.writeText(text).then(done, () => (target.textContent = "Copy failed"));
}
