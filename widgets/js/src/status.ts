/**
 * The status vocabulary, as `kernel/agentcell/render/statuses.py` defines it for the static fallbacks: the
 * same rules over the same fields, checked by the parity test over recorded event logs. Nothing here reads
 * a result's words: a tool call's status comes from `is_error`, `error_code` and `denied_by`, a thread's
 * from its stop reason, an outcome's from `session.outcome_updated`.
 */

import type { ToolBlock, TurnState } from "./state";
import { type RunStatuses, runStatuses } from "./workflow";

export type ToolStatus =
  | "pending"
  | "awaiting approval"
  | "running"
  | "waiting for the client"
  | "completed"
  | "failed"
  | "denied"
  | "interrupted";

/** A thread's or the turn's status until it stops; then its stop reason's `type`. */
export const RUNNING = "running";

/**
 * A tool call's status. Calls run in order, so the first unanswered call of its thread is the current
 * one and later ones are pending.
 */
export function toolStatus(state: TurnState, tool: ToolBlock): ToolStatus {
  if (tool.answered) {
    if (!tool.isError) return "completed";
    if (tool.deniedBy !== null) return "denied";
    if (tool.errorCode === "INTERRUPTED") return "interrupted";
    return "failed";
  }
  if (tool.confirmation?.result === "deny") return "denied";
  // Only the widget sees this: the kernel forwarded the call's approval request to this view.
  if (tool.approval && !tool.confirmation) return "awaiting approval";
  if (tool.custom) return "waiting for the client";
  // The provider runs its own tools as it answers, not in the order of the engine's calls.
  if (tool.server) return state.status === "idle" ? "pending" : "running";
  if (state.status === "idle" || !isCurrent(state, tool)) return "pending";
  if (tool.permission === "ask" && !tool.confirmation) return "awaiting approval";
  return "running";
}

/** The call was refused because nobody could be asked: the permission preset decided by itself. */
export function notAsked(tool: ToolBlock): boolean {
  return tool.answered && (tool.deniedBy === "no-view" || tool.deniedBy === "no-approver");
}

/** A thread's status from its `session.thread_status_idle` (a saved log from an engine without one: idle). */
export function threadStatus(stopReason: unknown): string {
  const stop = (stopReason ?? {}) as { type?: unknown };
  return typeof stop.type === "string" ? stop.type : "idle";
}

function isCurrent(state: TurnState, tool: ToolBlock): boolean {
  const first = threadOrderOf(state, tool.id).find((id) => {
    const block = state.blocks.get(id);
    return block?.kind === "tool" && !block.answered && !block.custom && !block.server;
  });
  return first === tool.id;
}

function threadOrderOf(state: TurnState, id: string): string[] {
  if (state.order.includes(id)) return state.order;
  for (const t of state.threads.values()) if (t.order.includes(id)) return t.order;
  return [];
}

/** What each origin says to people (the badge's tooltip), as `ORIGIN_WORDS` on the Python side. */
export const ORIGIN_WORDS: Record<string, string> = {
  replayed: "replayed from the notebook's recording",
  live: "sent live: not in the notebook's recording",
  "partly replayed": "partly replayed, partly sent live (not in the notebook's recording)",
};

/**
 * Where a turn's answers came from when the notebook's recording was consulted: "replayed", "live" or
 * "partly replayed"; null otherwise (a notebook without a recording: the quiet case).
 */
export function originOf(sources: Set<string>): string | null {
  if (!sources.size) return null;
  if (sources.size === 1 && sources.has("replay")) return "replayed";
  return sources.size === 1 && sources.has("live") ? "live" : "partly replayed";
}

export interface Statuses {
  turn: string;
  tools: Record<string, ToolStatus>;
  threads: Record<string, string>;
  outcomes: Record<string, { status: string; verdicts: (string | null)[] }>;
  /** Only where the notebook's recording was consulted (so logs made without one keep their shape). */
  origin?: string;
  /** Only in a turn with workflow runs (so logs without one keep their shape). */
  workflows?: Record<string, RunStatuses>;
}

/** Every status the view shows, in the shape of `TurnFold.statuses()` on the Python side (for the parity test). */
export function statusesOf(state: TurnState): Statuses {
  const tools: Record<string, ToolStatus> = {};
  for (const block of state.blocks.values()) if (block.kind === "tool") tools[block.id] = toolStatus(state, block);
  const threads: Record<string, string> = {};
  for (const t of state.threads.values()) threads[t.id] = t.status;
  const outcomes: Statuses["outcomes"] = {};
  for (const o of state.outcomes.values()) {
    const verdicts = [...o.iterations].sort((a, b) => a.n - b.n).map((it) => it.result);
    outcomes[o.id] = { status: o.status, verdicts };
  }
  const turn = state.status === "running" ? RUNNING : (state.stopReason ?? RUNNING);
  const statuses: Statuses = { turn, tools, threads, outcomes };
  const origin = originOf(state.sources);
  if (origin) statuses.origin = origin;
  if (!state.workflows.size) return statuses;
  const workflows: Record<string, RunStatuses> = {};
  for (const run of state.workflows.values()) workflows[run.id] = runStatuses(run);
  return { ...statuses, workflows };
}
