/** The folded state of one turn. Only `fold.ts` writes it; the views read it. */

import type { BudgetJson, ContentBlock, ContextItem, ToolDisplay, UsageJson } from "./types";
import type { WorkflowRun } from "./workflow";

export interface MessageBlock {
  kind: "message";
  id: string;
  text: string;
  /** Still streaming from previews; the buffered `agent.message` clears it. */
  streaming: boolean;
  interrupted: boolean;
}

export interface ThinkingBlock {
  kind: "thinking";
  id: string;
  /** null while only the start-only preview has arrived. */
  text: string | null;
  redacted: boolean;
}

/** What `session.skill_activated` says of an `activate_skill` call: the skill it loaded. */
export interface SkillActivation {
  name: string;
  version: number;
  /** The folder it is mounted at, read-only, relative to the workspace. */
  path: string;
  /** The files it brought besides SKILL.md (listed for the model, not read). */
  files: string[];
  requestedBy: "model" | "user";
}

export interface ToolBlock {
  kind: "tool";
  id: string;
  name: string;
  custom: boolean;
  /** An agent.server_tool_use: the provider ran it (web search), its result came with the response. */
  server: boolean;
  input: Record<string, unknown>;
  permission: string | null;
  startedAt: string | null;
  endedAt: string | null;
  output: ContentBlock[];
  /** Richer forms of some output blocks for people (what the python tool's code displayed), by block index. */
  displays: ToolDisplay[];
  fullText: string | null;
  isError: boolean;
  /** The result's `error_code` (DENIED, DECLINED, INTERRUPTED, TOOL_FAILED...) and, for a refusal, `denied_by`. */
  errorCode: string | null;
  deniedBy: string | null;
  answered: boolean;
  /** Set when the kernel forwarded this call's approval request to the widget. */
  approval: { reason: string; preset: string } | null;
  /** byRule: nobody was asked, an earlier "always" answer (a rule %permissions lists) decided. */
  confirmation: { result: "allow" | "deny"; remember: string; message: string | null; at: string | null; byRule: boolean } | null;
  /** Set when the call activated a skill: the card shows the skill rather than a plain tool. */
  skill: SkillActivation | null;
}

export interface ErrorBlock {
  kind: "error";
  id: string;
  errorType: string;
  message: string;
  retry: string;
  /** For a retried failure: which attempt failed (from 1) and how many the engine makes (0: not said). */
  attempt: number;
  maxAttempts: number;
}

export interface NoteBlock {
  kind: "note";
  id: string;
  text: string;
}

/** A cell the agent proposed (`agent.cell_proposed`), waiting for the user unless `resolution` says otherwise. */
export interface ProposalBlock {
  kind: "proposal";
  id: string;
  number: number;
  action: "insert" | "edit" | "delete";
  cellType: "code" | "markdown";
  source: string;
  cellId: string | null;
  position: "after" | "before";
  oldSource: string | null;
  turnCellId: string | null;
  note: string;
  /** "accepted", "rejected" or "failed" once answered in this view's items; null while pending. */
  resolution: string | null;
}

export type Block = MessageBlock | ThinkingBlock | ToolBlock | ErrorBlock | NoteBlock | ProposalBlock;

export interface Iteration {
  n: number;
  /** null while the grader is still evaluating. */
  result: string | null;
  explanation: string;
  /** The agent's text of this revision (its messages since the previous evaluation). */
  revision: string;
}

export interface Outcome {
  id: string;
  description: string;
  rubric: string;
  maxIterations: number;
  /** The latest `session.outcome_updated`'s status (pending until the first). */
  status: string;
  /** The revision cycle it is on, from 0. */
  iteration: number;
  iterations: Iteration[];
}

export interface Thread {
  id: string;
  title: string;
  /** The thread's model, from its session.thread_created. */
  model: string;
  usage: UsageSums;
  /** running, then the stop reason of its `session.thread_status_idle` (see status.ts). */
  status: string;
  order: string[];
}

export interface UsageSums {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** 1e-15 USD units (see money.ts). */
  cost: bigint;
  /** What the same tokens would have cost without the prompt cache, in the same units. */
  uncached: bigint;
  /** Requests whose usage had no list cost (a model without a known price): the sum is then a floor. */
  unpriced: number;
}

export function emptyUsage(): UsageSums {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0n, uncached: 0n, unpriced: 0 };
}

/** The model request in flight, from its span.model_request_start until its first output or its end. */
export interface PendingRequest {
  model: string;
  /** What the request waits on before the model itself ("loading the local model"), when anything. */
  preparing: string | null;
  maxTokens: number | null;
  /** Set when the budget lowered max_tokens: what the agent asked for. */
  shortenedFrom: number | null;
  /** Output has started arriving (previews or committed blocks). */
  started: boolean;
  /** Characters streamed so far (a live estimate of output tokens until the request's usage arrives). */
  streamedChars: number;
}

/** What a turn took from the notebook (the kernel's `NotebookContext.describe()` and the cells' text). */
export interface NotebookContextView {
  summary: string;
  cells: string[];
}

export interface TurnState {
  context: ContextItem | null;
  model: string;
  prompt: string;
  /** The code cells and variables the turn's message carried (null: none). */
  notebook: NotebookContextView | null;
  status: "running" | "idle";
  stopReason: string | null;
  stopDetail: string | null;
  interruptRequested: boolean;
  /** A view announced itself during the turn: clicks reach the kernel (Stop works). */
  live: boolean;
  /** ... and the kernel forwards approval requests to this widget. */
  approvalsOffered: boolean;
  blocks: Map<string, Block>;
  /** Block ids of the main thread in order. */
  order: string[];
  threads: Map<string, Thread>;
  outcomes: Map<string, Outcome>;
  /** Workflow runs of the turn by run id, in the order they started (their steps run as threads). */
  workflows: Map<string, WorkflowRun>;
  turnUsage: UsageSums;
  /** The primary thread's request in flight (null between requests). */
  request: PendingRequest | null;
  /** When the turn started (its first item's created_at), for the elapsed time. */
  startedAt: string | null;
  endedAt: string | null;
  /** Failed attempts in a row that the engine retries (reset by a request that ends well). */
  retries: number;
  /** How many turns of the active path the turn's requests carried before its own (null: not said). */
  contextTurns: number | null;
  /** The input tokens of the turn's first answered request: the context it started from. */
  contextTokens: number | null;
  /** The model's context window in tokens, when the engine knew it (null: unknown). */
  contextWindow: number | null;
  /** The tokens the conversation uses of that window: the latest answered request's input and output (which
   * the next request carries), from the session's last request before the turn until one of its own ends. */
  windowTokens: number | null;
  /** Where the turn's answers came from when the notebook's recording was consulted ("replay", "live"). */
  sources: Set<string>;
  sessionUsage: UsageJson | null;
  budget: BudgetJson | null;
  /** Ids opened by a preview and not yet confirmed by their buffered event (dropped if the attempt fails). */
  previewed: Set<string>;
  /** Bumped on every change, so a view can tell whether to paint. */
  version: number;
}

export function emptyState(): TurnState {
  return {
    context: null,
    model: "",
    prompt: "",
    notebook: null,
    status: "running",
    stopReason: null,
    stopDetail: null,
    interruptRequested: false,
    live: false,
    approvalsOffered: false,
    blocks: new Map(),
    order: [],
    threads: new Map(),
    outcomes: new Map(),
    workflows: new Map(),
    turnUsage: emptyUsage(),
    request: null,
    startedAt: null,
    endedAt: null,
    retries: 0,
    contextTurns: null,
    contextTokens: null,
    contextWindow: null,
    windowTokens: null,
    sources: new Set(),
    sessionUsage: null,
    budget: null,
    previewed: new Set(),
    version: 0,
  };
}
