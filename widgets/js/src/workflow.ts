/**
 * Workflow runs in a turn: the `workflow_run.*` events folded into runs, steps and step items, by the
 * rules of the engine's own fold (`kernel/agentcell/engine/workflows/result.py`), and the rows the progress
 * view shows (`kernel/agentcell/render/workflow_rows.py` says the same for the static fallbacks; the parity
 * test over recorded event logs holds the two together).
 */

import { formatUsd, parseMoney } from "./money";
import { type TurnState, type UsageSums, emptyUsage } from "./state";
import { type Item, type UsageJson, num, str } from "./types";

export type RunStatus = "running" | "completed" | "failed" | "interrupted" | "budget_reached";
export type StepStatus = "pending" | "running" | "completed" | "failed";

/** One run of a step: the step itself, or one item of its `for_each`. */
export interface WorkflowItem {
  index: number | null;
  value: unknown;
  status: "running" | "completed" | "failed";
  threadId: string | null;
  startedAt: string | null;
  endedAt: string | null;
  /** The item's own usage once it ended (its event's); while it runs its thread's requests say it. */
  usage: UsageSums | null;
  reused: boolean;
  /** Failed under `on_error: continue`: the run went on with an error value for it. */
  continued: boolean;
  error: string | null;
}

export interface WorkflowStep {
  id: string;
  agentName: string;
  dependsOn: string[];
  depth: number;
  forEach: boolean;
  /** How many items a `for_each` has (null until known); a plain step has one. */
  itemCount: number | null;
  status: StepStatus;
  items: WorkflowItem[];
  /** The step failed before any item ran (its template, its items). */
  error: string | null;
}

export interface WorkflowRun {
  id: string;
  name: string;
  status: RunStatus;
  steps: WorkflowStep[];
  maxConcurrency: number;
  startedAt: string | null;
  endedAt: string | null;
  error: string | null;
  failedStep: string | null;
  ran: number;
  reused: number;
  /** The last step's outcome status, when it has one: a completed run may still have failed it. */
  outcome: string | null;
}

type Handler = (state: TurnState, item: Item) => void;

export const WORKFLOW_HANDLERS: Record<string, Handler> = {
  "workflow_run.started": (state, item) => {
    const id = str(item.run_id);
    if (!id) return;
    const infos = Array.isArray(item.steps) ? (item.steps as Record<string, unknown>[]) : [];
    state.workflows.set(id, {
      id,
      name: str(item.name, id),
      status: "running",
      steps: infos.map((info) => ({
        id: str(info.id),
        agentName: str(info.agent_name),
        dependsOn: Array.isArray(info.depends_on) ? info.depends_on.filter((d): d is string => typeof d === "string") : [],
        depth: num(info.depth),
        forEach: info.for_each === true,
        itemCount: typeof info.items === "number" ? info.items : null,
        status: "pending",
        items: [],
        error: null,
      })),
      maxConcurrency: num(item.max_concurrency) || 1,
      startedAt: item.created_at ?? null,
      endedAt: null,
      error: null,
      failedStep: null,
      ran: 0,
      reused: 0,
      outcome: null,
    });
  },
  "workflow_run.step_started": (state, item) =>
    onItem(state, item, (it) => {
      it.threadId = str(item.session_thread_id) || null;
      it.startedAt = item.created_at ?? null;
      it.value = item.item_value ?? null;
    }),
  "workflow_run.step_completed": (state, item) =>
    onItem(state, item, (it) => {
      it.status = "completed";
      it.usage = usageSums(item.usage);
      it.reused = typeof item.reused_from === "string";
      it.endedAt = item.created_at ?? null;
      it.threadId = str(item.session_thread_id) || it.threadId;
    }),
  "workflow_run.step_failed": (state, item) =>
    onItem(state, item, (it) => {
      it.status = "failed";
      it.error = str(item.error);
      it.usage = usageSums(item.usage);
      it.endedAt = item.created_at ?? null;
      it.continued = item.continued === true;
    }),
  "workflow_run.completed": (state, item) => endRun(state, item, "completed"),
  "workflow_run.failed": (state, item) => endRun(state, item, runStatus(item.status)),
};

/** Whether a thread runs an item of one of the turn's workflow runs. */
export function isWorkflowThread(state: TurnState, threadId: unknown): boolean {
  if (typeof threadId !== "string") return false;
  for (const run of state.workflows.values()) {
    for (const step of run.steps) if (step.items.some((i) => i.threadId === threadId)) return true;
  }
  return false;
}

function runStatus(value: unknown): RunStatus {
  return value === "interrupted" || value === "budget_reached" ? value : "failed";
}

function endRun(state: TurnState, item: Item, status: RunStatus): void {
  const run = state.workflows.get(str(item.run_id));
  if (!run) return;
  run.status = status;
  run.endedAt = item.created_at ?? null;
  run.ran = num(item.ran);
  run.reused = num(item.reused);
  if (status === "completed") {
    const outcome = (item.outcome ?? null) as { status?: unknown } | null;
    run.outcome = outcome && typeof outcome.status === "string" ? outcome.status : null;
  } else {
    run.error = str(item.error);
    run.failedStep = typeof item.step_id === "string" ? item.step_id : null;
  }
}

/** The step item an event is about (created on its first event), changed by `change`, then the step settled. */
function onItem(state: TurnState, event: Item, change: (item: WorkflowItem) => void): void {
  const step = state.workflows.get(str(event.run_id))?.steps.find((s) => s.id === event.step_id);
  if (!step) return;
  if (typeof event.items === "number") step.itemCount = event.items;
  const index = typeof event.item === "number" ? event.item : null;
  if (event.type === "workflow_run.step_failed" && !event.session_thread_id && !event.key) {
    step.error = str(event.error); // failed before any item ran
    settle(step);
    return;
  }
  let found = step.items.find((i) => i.index === index);
  if (!found) {
    found = { index, value: null, status: "running", threadId: null, startedAt: null, endedAt: null, usage: null, reused: false, continued: false, error: null };
    step.items.push(found);
    step.items.sort((a, b) => (a.index ?? -1) - (b.index ?? -1));
  }
  change(found);
  settle(step);
}

function settle(step: WorkflowStep): void {
  const count = step.forEach ? step.itemCount : 1;
  if (step.error !== null || step.items.some((i) => i.status === "failed" && !i.continued)) step.status = "failed";
  else if (count !== null && step.items.length === count && step.items.every((i) => i.status !== "running")) step.status = "completed";
  else if (step.items.length) step.status = "running";
}

function usageSums(value: unknown): UsageSums {
  const sums = emptyUsage();
  addUsage(sums, (value ?? {}) as UsageJson);
  return sums;
}

/** Add one request's (or item's) usage to running sums. */
export function addUsage(sums: UsageSums, usage: UsageJson): void {
  const writes = num(usage.cache_creation?.ephemeral_5m_input_tokens) + num(usage.cache_creation?.ephemeral_1h_input_tokens);
  sums.input += num(usage.input_tokens);
  sums.output += num(usage.output_tokens);
  sums.cacheRead += num(usage.cache_read_input_tokens);
  sums.cacheWrite += writes;
  sums.cost += parseMoney(usage.list_cost);
  // Usage logged before uncached_cost existed had no discount to report: uncached, it cost its list cost.
  sums.uncached += parseMoney(usage.uncached_cost ?? usage.list_cost);
  // A request of a model without a list price has no cost (not a cost of $0): the engine counts them.
  sums.unpriced += num(usage.unpriced_requests);
}

function plus(a: UsageSums, b: UsageSums): UsageSums {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cost: a.cost + b.cost,
    uncached: a.uncached + b.uncached,
    unpriced: a.unpriced + b.unpriced,
  };
}

// ------------------------------------------------------------------------------------------------- rows

/** How far a step, or a whole run, has got: what its row (or the run's head line) says. */
export interface Progress {
  /** waiting, running, completed, completed with N failed, reused, failed, stopped, not run. */
  label: string;
  /** Items that ended (completed or failed) and how many there are (null: not known yet). */
  done: number;
  total: number | null;
  running: number;
  /** From the first item's start to the last one's end (to `now` while one runs); null if none ran. */
  seconds: number | null;
  usage: UsageSums;
}

/** One step as the progress view lists it. */
export interface StepRow extends Progress {
  step: WorkflowStep;
}

export interface RunSummary extends Progress {
  run: WorkflowRun;
  /** Rows by dependency depth: `levels[d]` holds the steps of depth d, in the plan's order. */
  levels: StepRow[][];
}

/** The usage an item has so far: its own once it ended, else what its thread's requests spent. */
function itemUsage(state: TurnState, item: WorkflowItem): UsageSums {
  if (item.usage) return item.usage;
  return (item.threadId ? state.threads.get(item.threadId)?.usage : undefined) ?? emptyUsage();
}

export function stepLabel(run: WorkflowRun, step: WorkflowStep, turnOver: boolean): string {
  switch (step.status) {
    case "failed":
      return "failed";
    case "running":
      return run.status === "running" && !turnOver ? "running" : "stopped";
    case "pending":
      return run.status === "running" && !turnOver ? "waiting" : "not run";
    case "completed": {
      if (step.items.length && step.items.every((i) => i.reused)) return "reused";
      const failed = step.items.filter((i) => i.status === "failed").length;
      return failed ? `completed, ${failed} failed` : "completed";
    }
  }
}

export function runLabel(run: WorkflowRun, turnOver: boolean): string {
  if (run.status === "running") return turnOver ? "stopped" : "running";
  const status = run.status.replace(/_/g, " ");
  return run.outcome && run.outcome !== "satisfied" ? `${status}, outcome ${run.outcome.replace(/_/g, " ")}` : status;
}

function span(starts: (string | null)[], ends: (string | null)[], now: number | null): number | null {
  const start = Math.min(...starts.map((s) => (s ? Date.parse(s) : Number.NaN)).filter(Number.isFinite));
  const endTimes = ends.map((e) => (e ? Date.parse(e) : now ?? Number.NaN)).filter(Number.isFinite);
  if (!Number.isFinite(start) || !endTimes.length) return null;
  const seconds = (Math.max(...endTimes) - start) / 1000;
  return seconds >= 0 ? seconds : null;
}

export function stepRow(state: TurnState, run: WorkflowRun, step: WorkflowStep, now: number | null): StepRow {
  const turnOver = state.status === "idle";
  const ran = step.items.filter((i) => i.startedAt);
  const clock = turnOver ? null : now;
  return {
    step,
    label: stepLabel(run, step, turnOver),
    done: step.items.filter((i) => i.status !== "running").length,
    total: step.forEach ? step.itemCount : 1,
    running: turnOver ? 0 : step.items.filter((i) => i.status === "running").length,
    seconds: span(ran.map((i) => i.startedAt), ran.map((i) => i.endedAt), clock),
    usage: step.items.reduce((sum, item) => plus(sum, itemUsage(state, item)), emptyUsage()),
  };
}

/** The run's rows, grouped by depth, with its totals. `now` (ms) is the clock of running items (live only). */
export function runSummary(state: TurnState, run: WorkflowRun, now: number | null = null): RunSummary {
  const rows = run.steps.map((step) => stepRow(state, run, step, now));
  const levels: StepRow[][] = [];
  for (const row of rows) (levels[row.step.depth] ??= []).push(row);
  const totals = rows.map((r) => r.total);
  const turnOver = state.status === "idle";
  return {
    run,
    levels: levels.filter((level) => level !== undefined),
    label: runLabel(run, turnOver),
    done: rows.reduce((n, r) => n + r.done, 0),
    total: totals.every((t) => t !== null) ? totals.reduce<number>((n, t) => n + (t ?? 0), 0) : null,
    running: rows.reduce((n, r) => n + r.running, 0),
    seconds: span([run.startedAt], [run.endedAt ?? (turnOver ? (state.endedAt ?? null) : null)], turnOver ? null : now),
    usage: rows.reduce((sum, r) => plus(sum, r.usage), emptyUsage()),
  };
}

/** The part of the parity statuses a run contributes: its status, each step's and each item's. */
export interface RunStatuses {
  status: RunStatus;
  steps: Record<string, { status: StepStatus; items: string[] }>;
}

export function runStatuses(run: WorkflowRun): RunStatuses {
  const steps: RunStatuses["steps"] = {};
  for (const step of run.steps) steps[step.id] = { status: step.status, items: step.items.map((i) => i.status) };
  return { status: run.status, steps };
}

/** A row as the fixtures' `workflows` list records it (the Python fallbacks' row, for the parity test). */
export function rowRecord(row: StepRow): Record<string, unknown> {
  return {
    step: row.step.id,
    depth: row.step.depth,
    label: row.label,
    done: row.done,
    total: row.total,
    seconds: row.seconds,
    input: row.usage.input,
    output: row.usage.output,
    cost: formatUsd(row.usage.cost),
  };
}
