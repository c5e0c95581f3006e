/**
 * The workflow progress view over the recorded workflow logs (`tests/fixtures/event_logs/workflow*.json`,
 * real engine runs on the scripted provider): the widget's rows are the rows the Python fallbacks print
 * (the logs' `workflows`), grouped by depth, with statuses and totals; live, rows change as items arrive,
 * step threads sit inside their rows, and a row that did not change keeps its DOM.
 */

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { apply, fold } from "../src/fold";
import { formatUsd } from "../src/money";
import { emptyState } from "../src/state";
import type { Item } from "../src/types";
import { TurnView } from "../src/view/turn";
import { rowRecord, runSummary } from "../src/workflow";

interface WorkflowLog {
  name: string;
  turns: Item[][];
  workflows: Record<string, unknown>[][];
}

// vitest runs in widgets/js (jsdom's import.meta.url is not a file URL).
const DIR = `${resolve(process.cwd(), "../../tests/fixtures/event_logs")}/`;
const load = (name: string): WorkflowLog => JSON.parse(readFileSync(`${DIR}${name}.json`, "utf-8")) as WorkflowLog;
const DAG = load("workflow_dag");
const REVIEW = load("workflow");

/** The widget's rows of each run once the turn ended, in the shape of the Python side's `RunSummary.record`. */
function records(items: Item[]): Record<string, unknown>[] {
  const state = fold(items);
  return [...state.workflows.values()].map((run) => {
    const s = runSummary(state, run);
    return {
      run: run.id,
      label: s.label,
      done: s.done,
      total: s.total,
      seconds: s.seconds,
      input: s.usage.input,
      output: s.usage.output,
      cost: formatUsd(s.usage.cost),
      levels: s.levels.map((level) => level.map(rowRecord)),
    };
  });
}

function paint(items: Item[]): HTMLElement {
  const root = document.createElement("div");
  new TurnView(root, () => undefined).paint(fold(items));
  return root;
}

const rowTexts = (root: Element): string[][] =>
  [...root.querySelectorAll(".ac-workflow-row")].map((row) => [...row.children].map((cell) => cell.textContent ?? ""));

describe("workflow runs from recorded logs", () => {
  for (const log of [DAG, REVIEW]) {
    it(`${log.name}: the widget's rows are the fallbacks' rows`, () => {
      expect(log.workflows.length).toBe(log.turns.length);
      log.turns.forEach((items, turn) => expect(records(items), `turn ${turn}`).toEqual(log.workflows[turn]));
    });
  }

  it("groups steps by dependency depth, two side by side at depth 0", () => {
    const state = fold(DAG.turns[0] ?? []);
    const [run] = [...state.workflows.values()];
    if (!run) throw new Error("no run in the log");
    const levels = runSummary(state, run).levels.map((level) => level.map((row) => row.step.id));
    expect(levels).toEqual([["facts", "angles"], ["paragraphs"], ["story"]]);
    const root = paint(DAG.turns[0] ?? []);
    const heads = [...root.querySelectorAll(".ac-workflow-level-head")].map((el) => el.textContent);
    expect(heads).toEqual([
      "Depth 0 · no dependencies · 2 steps side by side",
      "Depth 1 · after facts",
      "Depth 2 · after angles, paragraphs",
    ]);
    expect([...root.querySelectorAll(".ac-workflow-level")].map((l) => [...l.querySelectorAll(".ac-workflow-step")].map((s) => (s as HTMLElement).dataset.step))).toEqual(levels);
  });

  it("shows each step's status, items, duration, tokens and cost, and the run's totals", () => {
    const root = paint(DAG.turns[0] ?? []);
    const rows = rowTexts(root);
    expect(rows.map((r) => r[0])).toEqual(["✓completed", "✓completed", "✓completed", "✓completed"]);
    expect(rows[2]?.[1]).toBe("paragraphs writer");
    expect(rows[2]?.[2]).toBe("3/3 items");
    for (const row of rows) {
      expect(row[3]).toMatch(/^\d+ ms$|^\d+\.\d s$/);
      expect(row[4]).toMatch(/^in \d+ · out \d+$/);
      expect(row[5]).toMatch(/^\$/);
    }
    // The totals are the rows' sums.
    const state = fold(DAG.turns[0] ?? []);
    const [run] = [...state.workflows.values()];
    if (!run) throw new Error("no run in the log");
    const summary = runSummary(state, run);
    const rowsOut = summary.levels.flat().reduce((n, r) => n + r.usage.output, 0);
    expect(summary.usage.output).toBe(rowsOut);
    expect(rowsOut).toBeGreaterThan(0);
    expect(summary.usage.cost).toBe(summary.levels.flat().reduce((n, r) => n + r.usage.cost, 0n));
    expect(summary.done).toBe(6);
    expect(summary.total).toBe(6);
    const head = root.querySelector(".ac-workflow-head")?.textContent ?? "";
    expect(head).toContain("Workflow diamond");
    expect(head).toContain("completed");
    expect(head).toContain(`6 of 6 items`);
    expect(head).toContain(`out ${rowsOut}`);
  });

  it("says a second run reused every item, with no time, tokens or cost of its own", () => {
    const root = paint(DAG.turns[1] ?? []);
    const rows = rowTexts(root);
    expect(rows.map((r) => r[0])).toEqual(["↺reused", "↺reused", "↺reused", "↺reused"]);
    expect(rows.map((r) => r.slice(3))).toEqual(Array(4).fill(["—", "in 0 · out 0", "$0"]));
    expect(root.querySelector(".ac-workflow-head")?.textContent).toContain("6 reused");
    // Reused items ran in no thread of this turn: the rows open to lines saying where their output came from.
    expect(root.querySelectorAll(".ac-thread").length).toBe(0);
    expect(root.querySelector('[data-step="paragraphs"] .ac-wf-item-line')?.textContent).toBe("item 1 — reused from an earlier run");
  });

  it("shows an item that failed and continued, and a run that failed at its step", () => {
    const review = paint(REVIEW.turns[0] ?? []);
    const checks = review.querySelector('[data-step="checks"]');
    expect(checks?.querySelector(".ac-wf-status")?.textContent).toBe("⚠completed, 1 failed");
    const lines = [...(checks?.querySelectorAll(".ac-wf-item-line") ?? [])].map((l) => l.firstChild?.textContent);
    expect(lines).toEqual(["item 1: style — completed", "item 2: facts — failed, the run went on"]);
    expect(checks?.querySelector(".ac-wf-item-error")?.textContent).toMatch(/schema|JSON/i);
    const broken = paint(REVIEW.turns[1] ?? []);
    expect(broken.querySelector(".ac-workflow-status")?.textContent).toBe("failed");
    expect(broken.querySelector(".ac-workflow-error")?.textContent).toMatch(/^only: /);
    expect(broken.querySelector('[data-step="only"] .ac-wf-status')?.textContent).toBe("✗failed");
  });

  it("puts each step item's thread inside its step's row, and no other thread there", () => {
    const root = paint(DAG.turns[0] ?? []);
    const paragraphs = root.querySelector('[data-step="paragraphs"]');
    expect(paragraphs?.querySelectorAll(".ac-thread").length).toBe(3);
    expect(root.querySelectorAll(".ac-workflow .ac-thread").length).toBe(6);
    expect(root.querySelectorAll(".ac-threads > .ac-thread").length).toBe(0);
    // The run handing each item its prompt is no note of the turn: the item's thread shows what it received.
    expect(root.querySelector(".ac-body")?.textContent).toBe("");
    expect(paragraphs?.querySelector(".ac-thread .ac-note")?.textContent).toMatch(/^writer ← .*: Write about the moon/);
    // A row opens to its threads: closed until the user opens it.
    const step = paragraphs as HTMLDetailsElement;
    expect(step.open).toBe(false);
    expect(step.querySelector(".ac-thread .ac-message")?.textContent).toMatch(/^Done: /);
  });
});

describe("workflow progress view, live", () => {
  it("moves rows from waiting to running to completed as the items arrive", () => {
    const items = DAG.turns[0] ?? [];
    const root = document.createElement("div");
    const view = new TurnView(root, () => undefined);
    const state = emptyState();
    const seen: string[][] = [];
    for (const item of items) {
      apply(state, item);
      view.paint(state);
      const labels = [...root.querySelectorAll(".ac-workflow-step")].map((s) => (s as HTMLElement).dataset.status ?? "");
      if (labels.length && JSON.stringify(labels) !== JSON.stringify(seen[seen.length - 1])) seen.push(labels);
    }
    expect(seen.slice(0, 2)).toEqual([
      ["waiting", "waiting", "waiting", "waiting"],
      ["running", "waiting", "waiting", "waiting"],
    ]);
    expect(seen).toContainEqual(["completed", "completed", "running", "waiting"]);
    expect(seen[seen.length - 1]).toEqual(["completed", "completed", "completed", "completed"]);
    view.dispose();
  });

  it("counts a running item's tokens from its thread before its step completes, and clocks it", () => {
    const items = DAG.turns[0] ?? [];
    const firstEnd = items.findIndex((i) => i.type === "span.model_request_end");
    const state = fold(items.slice(0, firstEnd + 1));
    const [run] = [...state.workflows.values()];
    if (!run) throw new Error("no run in the log");
    const started = Date.parse(String(items.find((i) => i.type === "workflow_run.step_started")?.created_at));
    const facts = runSummary(state, run, started + 2500).levels[0]?.[0];
    expect(facts?.label).toBe("running");
    expect(facts?.usage.output).toBeGreaterThan(0);
    expect(facts?.seconds).toBe(2.5);
  });

  it("repaints only the rows that changed: an unchanged row keeps its cells", () => {
    const items = DAG.turns[0] ?? [];
    const root = document.createElement("div");
    const view = new TurnView(root, () => undefined);
    const state = emptyState();
    const cut = items.findIndex((i) => i.type === "workflow_run.step_completed");
    for (const item of items.slice(0, cut + 1)) apply(state, item);
    view.paint(state);
    const storyCell = root.querySelector('[data-step="story"] .ac-wf-status');
    const factsCell = root.querySelector('[data-step="facts"] .ac-wf-status');
    for (const item of items.slice(cut + 1, cut + 3)) apply(state, item);
    view.paint(state);
    expect(root.querySelector('[data-step="story"] .ac-wf-status')).toBe(storyCell);
    expect(root.querySelector('[data-step="facts"] .ac-wf-status')).toBe(factsCell);
    view.dispose();
  });
});
