/**
 * A workflow run's progress view: a head line with the run's status and totals, then its steps as rows
 * grouped by dependency depth (steps of one depth can run at the same time), each with its status, items,
 * duration, tokens and cost. A row opens to its items and their threads: the turn view places each step
 * item's thread view in the slot `slotFor` gives. Rows repaint only when what they show changed, so a run
 * of many streaming steps costs one comparison per row per frame.
 */

import { formatUsd } from "../money";
import type { TurnState, UsageSums } from "../state";
import { type RunSummary, type StepRow, type WorkflowItem, type WorkflowRun, runSummary } from "../workflow";
import { usageCost } from "./cost";
import { formatCount, formatSeconds, h, replaceChildren } from "./dom";

export class WorkflowView {
  readonly el: HTMLElement;
  private readonly head: HTMLElement;
  private readonly levelsEl: HTMLElement;
  private readonly rows = new Map<string, StepRowView>();
  private readonly levelEls: HTMLElement[] = [];
  private headSignature = "";

  constructor(run: WorkflowRun) {
    this.head = h("div", { class: "ac-workflow-head", role: "status" });
    this.levelsEl = h("div", { class: "ac-workflow-levels" });
    this.el = h("section", { class: "ac-workflow", "aria-label": `Workflow run ${run.name}`, "data-run": run.id }, this.head, this.levelsEl);
  }

  /** `now` (ms): the clock of items still running; the turn view passes it while the turn runs. */
  update(state: TurnState, run: WorkflowRun, now: number): void {
    const summary = runSummary(state, run, now);
    this.el.dataset.status = summary.label;
    this.paintHead(summary);
    summary.levels.forEach((rows, index) => {
      const level = this.level(index, rows);
      for (const row of rows) {
        let view = this.rows.get(row.step.id);
        if (!view) {
          view = new StepRowView(row.step.id);
          this.rows.set(row.step.id, view);
          level.append(view.el);
        }
        view.update(row);
      }
    });
  }

  /** The element a step item's thread view belongs in, or null when the thread is no item of this run. */
  slotFor(threadId: string): HTMLElement | null {
    for (const row of this.rows.values()) {
      const slot = row.slotFor(threadId);
      if (slot) return slot;
    }
    return null;
  }

  private level(index: number, rows: StepRow[]): HTMLElement {
    let level = this.levelEls[index];
    if (!level) {
      const depth = rows[0]?.step.depth ?? index;
      const after = [...new Set(rows.flatMap((r) => r.step.dependsOn))];
      const note = after.length ? `after ${after.join(", ")}` : "no dependencies";
      const parallel = rows.length > 1 ? ` · ${rows.length} steps side by side` : "";
      level = h(
        "div",
        { class: "ac-workflow-level", "data-depth": depth },
        h("div", { class: "ac-workflow-level-head" }, `Depth ${depth} · ${note}${parallel}`),
      );
      this.levelEls[index] = level;
      this.levelsEl.append(level);
    }
    return level;
  }

  private paintHead(summary: RunSummary): void {
    const u = summary.usage;
    const items = summary.total === null ? `${summary.done} items done` : `${summary.done} of ${summary.total} items`;
    const parts = [
      items,
      summary.running ? `${summary.running} running` : "",
      summary.run.reused ? `${summary.run.reused} reused` : "",
      summary.seconds === null ? "" : formatSeconds(summary.seconds),
      tokens(u),
      usageCost(u),
    ].filter(Boolean);
    const error = summary.run.error ? `${summary.run.failedStep ? `${summary.run.failedStep}: ` : ""}${summary.run.error}` : "";
    const signature = JSON.stringify([summary.label, parts, error]);
    if (signature === this.headSignature) return;
    this.headSignature = signature;
    replaceChildren(
      this.head,
      summary.label === "running" ? h("span", { class: "ac-spinner", role: "progressbar", "aria-label": "workflow running" }) : null,
      h("span", { class: "ac-workflow-title" }, `Workflow ${summary.run.name}`),
      h("span", { class: `ac-workflow-status ac-wf-${statusClass(summary.label)}` }, summary.label),
      h("span", { class: "ac-workflow-totals" }, parts.join(" · ")),
      error ? h("div", { class: "ac-workflow-error" }, error) : null,
    );
  }
}

function tokens(u: UsageSums): string {
  return `in ${formatCount(u.input)} · out ${formatCount(u.output)}`;
}

/** The CSS class of a label: its first word (completed, failed, running, waiting, reused, stopped, not), or
 * partial for a step completed with failed items. */
function statusClass(label: string): string {
  if (label.startsWith("completed,")) return "partial"; // completed, with items that failed and went on
  return (label.split(/[ ,]/)[0] ?? "").replace(/[^a-z_]/g, "") || "pending";
}

const MARK: Record<string, string> = {
  completed: "✓",
  partial: "⚠",
  reused: "↺",
  failed: "✗",
  waiting: "○",
  not: "–",
  stopped: "■",
  budget_reached: "■",
  interrupted: "■",
};

/** One step: a summary row (status, name, agent, items, time, tokens, cost) that opens to its items. */
class StepRowView {
  readonly el: HTMLDetailsElement;
  private readonly summary: HTMLElement;
  private readonly itemsEl: HTMLElement;
  private readonly itemViews = new Map<string, ItemView>();
  private signature = "";

  constructor(stepId: string) {
    this.summary = h("summary", { class: "ac-workflow-row" });
    this.itemsEl = h("div", { class: "ac-workflow-items" });
    this.el = h("details", { class: "ac-workflow-step", "data-step": stepId }, this.summary, this.itemsEl);
  }

  slotFor(threadId: string): HTMLElement | null {
    for (const view of this.itemViews.values()) if (view.threadId === threadId) return view.slot;
    return null;
  }

  update(row: StepRow): void {
    const step = row.step;
    const u = row.usage;
    const count = row.total === null ? `${row.done} done` : `${row.done}/${row.total}`;
    const items = step.forEach ? `${count} items${row.running ? ` · ${row.running} running` : ""}` : "";
    const time = row.seconds === null ? "—" : formatSeconds(row.seconds);
    const signature = JSON.stringify([row.label, items, time, u.input, u.output, String(u.cost), u.unpriced, step.error]);
    if (signature !== this.signature) {
      this.signature = signature;
      const kind = statusClass(row.label);
      this.el.dataset.status = kind;
      replaceChildren(
        this.summary,
        h(
          "span",
          { class: `ac-wf-status ac-wf-${kind}` },
          kind === "running" ? h("span", { class: "ac-spinner", "aria-hidden": "true" }) : h("span", { class: "ac-wf-mark", "aria-hidden": "true" }, MARK[kind] ?? "·"),
          row.label,
        ),
        h("span", { class: "ac-wf-name" }, h("strong", {}, step.id), step.agentName ? h("span", { class: "ac-wf-agent" }, ` ${step.agentName}`) : null),
        h("span", { class: "ac-wf-items" }, items),
        h("span", { class: "ac-wf-time", title: "duration" }, time),
        h("span", { class: "ac-wf-tokens" }, tokens(u)),
        h("span", { class: "ac-wf-cost" }, usageCost(u)),
      );
    }
    if (step.error && !this.itemsEl.querySelector(".ac-workflow-step-error")) {
      this.itemsEl.prepend(h("div", { class: "ac-workflow-step-error" }, step.error));
    }
    for (const item of step.items) {
      const key = String(item.index);
      let view = this.itemViews.get(key);
      if (!view) {
        view = new ItemView(step.forEach);
        this.itemViews.set(key, view);
        this.itemsEl.append(view.el);
      }
      view.update(item);
    }
  }
}

/** One item of a step: a line saying how it went (for a `for_each` step), and the slot for its thread. */
class ItemView {
  readonly el: HTMLElement;
  readonly slot: HTMLElement;
  private readonly line: HTMLElement;
  threadId: string | null = null;
  private signature = "";

  constructor(private readonly forEach: boolean) {
    this.line = h("div", { class: "ac-wf-item-line" });
    this.slot = h("div", { class: "ac-wf-item-thread" });
    this.el = h("div", { class: "ac-wf-item" }, this.line, this.slot);
  }

  update(item: WorkflowItem): void {
    this.threadId = item.threadId;
    const signature = JSON.stringify([item.status, item.reused, item.continued, item.error, item.endedAt, item.value, item.threadId]);
    if (signature === this.signature) return;
    this.signature = signature;
    this.el.dataset.status = item.status;
    if (!this.forEach) {
      // The row says it all for a plain step; only a failure has more to say.
      replaceChildren(this.line, item.error ? h("div", { class: "ac-wf-item-error" }, item.error) : null);
      return;
    }
    const said: string[] = [];
    said.push(`item ${(item.index ?? 0) + 1}${item.value !== null ? `: ${shortValue(item.value)}` : ""}`);
    said.push(item.reused ? "reused from an earlier run" : item.status === "failed" && item.continued ? "failed, the run went on" : item.status);
    // An item's thread heads with its usage; one that ran in none (failed before it started) says its own.
    if (item.usage && !item.reused && !item.threadId) said.push(`${tokens(item.usage)} · ${formatUsd(item.usage.cost)}`);
    replaceChildren(
      this.line,
      said.join(" — "),
      item.error ? h("div", { class: "ac-wf-item-error" }, item.error) : null,
    );
  }
}

function shortValue(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
