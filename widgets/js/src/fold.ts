/**
 * The turn as a fold over items: `fold(items)` from a saved state and `apply(state, item)` per live
 * batch are the same function, so the live view and the re-rendered notebook cannot disagree.
 */

import { compactionNote } from "./compaction";
import { parseMoney } from "./money";
import {
  type Block,
  type Outcome,
  type Thread,
  type ThinkingBlock,
  type NotebookContextView,
  type ProposalBlock,
  type ToolBlock,
  type TurnState,
  type UsageSums,
  emptyState,
  emptyUsage,
} from "./state";
import { RUNNING, threadStatus } from "./status";
import { type ContextItem, type Item, type UsageJson, contentBlocks, num, str, textOf, toolDisplays } from "./types";
import { WORKFLOW_HANDLERS, addUsage, isWorkflowThread } from "./workflow";

export function fold(items: Iterable<Item>): TurnState {
  const state = emptyState();
  for (const item of items) apply(state, item);
  return state;
}

export function apply(state: TurnState, item: Item): void {
  state.version += 1;
  if (!state.startedAt && typeof item.created_at === "string" && item.type !== "widget.context") state.startedAt = item.created_at;
  const handler = HANDLERS[item.type];
  if (handler) handler(state, item);
}

type Handler = (state: TurnState, item: Item) => void;

/** The item types the fold reads (the tests check each against the recorded event logs). */
export function foldedTypes(): string[] {
  return Object.keys(HANDLERS);
}

const HANDLERS: Record<string, Handler> = {
  "widget.context": (state, item) => {
    state.context = item as ContextItem;
    state.model = state.model || str(item.model);
  },
  // Live only: the session's gauge as the turn starts (its latest request), until one of the turn's ends.
  "widget.window": (state, item) => {
    if (typeof item.tokens !== "number" || typeof item.size !== "number" || item.size <= 0) return;
    if (state.windowTokens === null) state.windowTokens = item.tokens;
    if (state.contextWindow === null) state.contextWindow = item.size;
  },
  "widget.live": (state, item) => {
    state.live = true;
    state.approvalsOffered = item.approvals === true;
  },
  "widget.approval_request": (state, item) => {
    const tool = toolBlock(state, str(item.tool_use_id));
    if (tool) tool.approval = { reason: str(item.reason), preset: str(item.preset) };
  },
  "user.message": (state, item) => {
    const text = textOf(contentBlocks(item.content));
    if (item.steered === true) note(state, item, `Steer delivered: ${text}`);
    else {
      state.prompt = text;
      state.notebook = notebookContext(item.context);
    }
  },
  "session.steer_undelivered": (state, item) =>
    note(state, item, `Steer not delivered (the turn ended before the next step): ${textOf(contentBlocks(item.content))}`),
  "session.context_compacted": (state, item) => {
    // The conversation now reads as the compaction left it: the gauge drops before the next request ends.
    if (!item.thread_id && typeof item.tokens_after === "number") state.windowTokens = item.tokens_after;
    if (!item.thread_id && typeof item.window === "number" && item.window > 1) state.contextWindow = item.window;
    note(state, item, compactionNote(item));
  },
  "agent.cell_proposed": (state, item) => {
    open(state, item.thread_id ?? null, proposalBlock(item));
  },
  "user.cell_proposal_resolved": (state, item) => {
    const block = state.blocks.get(str(item.proposal_id));
    if (block?.kind === "proposal") block.resolution = str(item.outcome);
  },
  "user.interrupt": (state, item) => {
    // With a thread_id only that thread was stopped; its coordinator goes on.
    if (!item.thread_id) state.interruptRequested = true;
  },
  "user.tool_confirmation": (state, item) => {
    const tool = toolBlock(state, str(item.tool_use_id));
    if (!tool) return;
    const result = item.result === "allow" ? "allow" : "deny";
    const message = typeof item.deny_message === "string" ? item.deny_message : null;
    tool.confirmation = { result, remember: str(item.remember, "once"), message, at: item.created_at ?? null, byRule: item.by_rule === true };
  },
  event_start: (state, item) => {
    const ref = (item.event ?? {}) as { type?: unknown; id?: unknown };
    const id = str(ref.id);
    if (!id) return;
    const thread = item.thread_id ?? null;
    if (ref.type === "agent.thinking") open(state, thread, { kind: "thinking", id, text: null, redacted: false }, true);
    else open(state, thread, { kind: "message", id, text: "", streaming: true, interrupted: false }, true);
    state.previewed.add(id);
  },
  event_delta: (state, item) => {
    const block = state.blocks.get(str(item.event_id));
    const delta = (item.delta ?? {}) as { content?: { type?: unknown; text?: unknown } };
    const text = delta.content?.type === "text" ? str(delta.content.text) : "";
    if (block?.kind === "message" && block.streaming) block.text += text;
    if (!item.thread_id && state.request) state.request.streamedChars += text.length;
  },
  "agent.message": (state, item) => {
    const id = str(item.id);
    const block = open(state, item.thread_id ?? null, {
      kind: "message",
      id,
      text: "",
      streaming: false,
      interrupted: false,
    });
    if (block.kind !== "message") return;
    block.text = textOf(contentBlocks(item.content));
    block.streaming = false;
    block.interrupted = item.interrupted === true;
    state.previewed.delete(id);
  },
  "agent.thinking": (state, item) => {
    const id = str(item.id);
    const fresh: ThinkingBlock = { kind: "thinking", id, text: null, redacted: false };
    const block = open(state, item.thread_id ?? null, fresh);
    if (block.kind !== "thinking") return;
    block.redacted = Boolean(item.redacted_data) && !item.thinking;
    block.text = str(item.thinking);
    state.previewed.delete(id);
  },
  "agent.tool_use": (state, item) => openTool(state, item, "engine"),
  "agent.custom_tool_use": (state, item) => openTool(state, item, "custom"),
  "agent.server_tool_use": (state, item) => openTool(state, item, "server"),
  "agent.server_tool_result": (state, item) => {
    const tool = toolBlock(state, str(item.tool_use_id));
    if (!tool) return;
    tool.answered = true;
    tool.output = [{ type: "text", text: `${str(item.kind)}:\n${JSON.stringify(item.content ?? null, null, 2)}` }];
    tool.endedAt = item.created_at ?? null;
  },
  "agent.tool_result": (state, item) => {
    const tool = toolBlock(state, str(item.tool_use_id));
    if (!tool) return;
    tool.answered = true;
    tool.output = contentBlocks(item.content);
    tool.displays = toolDisplays(item.displays);
    tool.isError = item.is_error === true;
    tool.errorCode = typeof item.error_code === "string" ? item.error_code : null;
    tool.deniedBy = typeof item.denied_by === "string" ? item.denied_by : null;
    tool.fullText = typeof item.full_text === "string" ? item.full_text : null;
    tool.endedAt = item.created_at ?? null;
  },
  "user.custom_tool_result": (state, item) => {
    const tool = toolBlock(state, str(item.custom_tool_use_id));
    if (!tool) return;
    tool.answered = true;
    tool.output = contentBlocks(item.content);
    tool.isError = item.is_error === true;
    tool.endedAt = item.created_at ?? null;
  },
  "span.model_request_start": (state, item) => {
    if (item.thread_id) return;
    if (typeof item.model === "string" && item.model) state.model = item.model;
    if (state.contextTurns === null && typeof item.context_turns === "number") state.contextTurns = item.context_turns;
    if (typeof item.context_window === "number" && item.context_window > 0) state.contextWindow = item.context_window;
    state.request = {
      model: str(item.model, state.model),
      preparing: typeof item.preparing === "string" && item.preparing ? item.preparing : null,
      maxTokens: typeof item.max_tokens === "number" ? item.max_tokens : null,
      shortenedFrom: typeof item.budget_shortened_from === "number" ? item.budget_shortened_from : null,
      started: false,
      streamedChars: 0,
    };
  },
  "span.model_request_end": (state, item) => {
    const usage = (item.model_usage ?? {}) as UsageJson;
    addUsage(state.turnUsage, usage);
    if (item.thread_id) addUsage(thread(state, item.thread_id).usage, usage);
    else {
      if (item.is_error !== true) {
        const input = num(usage.input_tokens) + num(usage.cache_read_input_tokens) + cacheWrites(usage);
        if (state.contextTokens === null) state.contextTokens = input;
        state.windowTokens = input + num(usage.output_tokens);
      }
      state.request = null;
      state.retries = item.is_error === true ? state.retries : 0;
      if (typeof item.source === "string") state.sources.add(item.source);
    }
    if (item.is_error === true) {
      // A failed attempt's previews are abandoned: its retry streams afresh under new ids.
      for (const id of state.previewed) drop(state, id);
      state.previewed.clear();
    }
  },
  "session.usage": (state, item) => {
    state.sessionUsage = (item.usage ?? null) as UsageJson | null;
    state.budget = (item.budget ?? null) as TurnState["budget"];
  },
  "session.error": (state, item) => {
    const error = (item.error ?? {}) as { type?: unknown; message?: unknown; retry_status?: unknown; attempt?: unknown; max_attempts?: unknown };
    const retrying = error.retry_status === "retrying";
    if (retrying && !item.thread_id) state.retries += 1;
    open(state, item.thread_id ?? null, {
      kind: "error",
      id: str(item.id, `error-${state.version}`),
      errorType: str(error.type, "error"),
      message: str(error.message),
      retry: str(error.retry_status, "terminal"),
      attempt: num(error.attempt) || (retrying ? state.retries : 0),
      maxAttempts: num(error.max_attempts),
    });
  },
  // The primary thread's status; spawned threads have session.thread_status_* instead.
  "session.status_running": (state) => {
    state.status = "running";
  },
  "session.status_idle": (state, item) => {
    const stop = (item.stop_reason ?? {}) as { type?: unknown; message?: unknown };
    state.status = "idle";
    state.request = null;
    state.endedAt = item.created_at ?? null;
    state.stopReason = str(stop.type, "end_turn");
    state.stopDetail = typeof stop.message === "string" ? stop.message : null;
  },
  "session.skill_activated": (state, item) => {
    const tool = toolBlock(state, str(item.tool_use_id));
    if (!tool) return;
    const files = Array.isArray(item.files) ? item.files.filter((f): f is string => typeof f === "string") : [];
    tool.skill = {
      name: str(item.name),
      version: num(item.version),
      path: str(item.path),
      files,
      requestedBy: item.requested_by === "user" ? "user" : "model",
    };
  },
  "session.updated": (state, item) => {
    if (typeof item.permissions === "string" && state.context) {
      state.context = { ...state.context, preset: item.permissions };
    }
  },
  // Outcomes and sub-agent threads: the managed-agents shapes, in the engine's field names.
  "user.define_outcome": (state, item) => {
    const rubric = (item.rubric ?? {}) as { type?: unknown; content?: unknown; path?: unknown };
    const id = str(item.outcome_id);
    state.outcomes.set(id, {
      id,
      description: str(item.description),
      rubric: rubric.type === "file" ? `file: ${str(rubric.path)}` : str(rubric.content),
      maxIterations: num(item.max_iterations) || 3,
      status: "pending",
      iteration: 0,
      iterations: [],
    });
  },
  "session.outcome_updated": (state, item) => {
    const data = (item.outcome ?? {}) as Record<string, unknown>;
    const id = str(data.outcome_id);
    if (!id) return;
    const outcome = state.outcomes.get(id) ?? outcomeFrom(state, id, data);
    outcome.status = str(data.status, outcome.status);
    outcome.iteration = num(data.iteration);
  },
  "span.outcome_evaluation_start": (state, item) => {
    const outcome = state.outcomes.get(str(item.outcome_id));
    if (!outcome) return;
    const n = num(item.iteration);
    if (!outcome.iterations.some((it) => it.n === n)) {
      outcome.iterations.push({ n, result: null, explanation: "", revision: latestRevision(state) });
    }
  },
  "span.outcome_evaluation_end": (state, item) => {
    const outcome = state.outcomes.get(str(item.outcome_id));
    if (!outcome) return;
    const n = num(item.iteration);
    let iteration = outcome.iterations.find((it) => it.n === n);
    if (!iteration) {
      iteration = { n, result: null, explanation: "", revision: latestRevision(state) };
      outcome.iterations.push(iteration);
    }
    iteration.result = str(item.result, "failed");
    iteration.explanation = str(item.explanation);
  },
  // A thread's events carry its id as thread_id; session.thread_created names it session_thread_id (its
  // own thread_id is the coordinator's).
  "session.thread_created": (state, item) => {
    const id = str(item.session_thread_id);
    if (!id) return;
    const t = thread(state, id);
    t.title = str(item.agent_name, id);
    t.model = str(item.model);
  },
  "session.thread_status_running": (state, item) => {
    if (item.thread_id) thread(state, item.thread_id).status = RUNNING;
  },
  "session.thread_status_idle": (state, item) => {
    if (item.thread_id) thread(state, item.thread_id).status = threadStatus(item.stop_reason);
  },
  "agent.thread_message_sent": (state, item) => {
    // A workflow run handing a step item its prompt: the item's thread shows it received it, in its row.
    if (!item.thread_id && isWorkflowThread(state, item.to_thread_id)) return;
    threadNote(state, item, "→", item.to_thread_id);
  },
  "agent.thread_message_received": (state, item) => threadNote(state, item, "←", item.from_thread_id),
  // A workflow run's own events: its steps' items run as the threads above.
  ...WORKFLOW_HANDLERS,
};

/** A turn that resumes an outcome defined in an earlier turn knows it from its updates only. */
function outcomeFrom(state: TurnState, id: string, data: Record<string, unknown>): Outcome {
  const outcome: Outcome = {
    id,
    description: str(data.description),
    rubric: "",
    maxIterations: num(data.max_iterations) || 3,
    status: "pending",
    iteration: 0,
    iterations: [],
  };
  state.outcomes.set(id, outcome);
  return outcome;
}

/**
 * Place a block: a preview at the end; a buffered event's block before the blocks that are still only
 * previews, so that when a response commits (its server tools, then the text that streamed after them) the
 * order is the log's, as the fold of the saved state has it.
 */
function open(state: TurnState, threadId: string | null, fresh: Block, preview = false): Block {
  if (!threadId && state.request && fresh.kind !== "note" && fresh.kind !== "error") state.request.started = true;
  const order = threadId ? thread(state, threadId).order : state.order;
  const existing = state.blocks.get(fresh.id);
  if (preview) {
    if (!existing) order.push(fresh.id);
  } else {
    const at = order.indexOf(fresh.id);
    if (at >= 0) order.splice(at, 1);
    const firstPreview = order.findIndex((key) => state.previewed.has(key));
    order.splice(firstPreview < 0 ? order.length : firstPreview, 0, fresh.id);
  }
  if (existing) return existing;
  state.blocks.set(fresh.id, fresh);
  return fresh;
}

function drop(state: TurnState, id: string): void {
  state.blocks.delete(id);
  state.order = state.order.filter((key) => key !== id);
  for (const t of state.threads.values()) t.order = t.order.filter((key) => key !== id);
}

function thread(state: TurnState, id: string): Thread {
  let found = state.threads.get(id);
  if (!found) {
    found = { id, title: id, model: "", usage: emptyUsage(), status: RUNNING, order: [] };
    state.threads.set(id, found);
  }
  return found;
}

function proposalBlock(item: Item): ProposalBlock {
  const action = item.action === "edit" || item.action === "delete" ? item.action : "insert";
  return {
    kind: "proposal",
    id: str(item.id),
    number: num(item.number),
    action,
    cellType: item.cell_type === "markdown" ? "markdown" : "code",
    source: str(item.source),
    cellId: typeof item.cell_id === "string" ? item.cell_id : null,
    position: item.position === "before" ? "before" : "after",
    oldSource: typeof item.old_source === "string" ? item.old_source : null,
    turnCellId: typeof item.turn_cell_id === "string" ? item.turn_cell_id : null,
    note: str(item.note),
    resolution: null,
  };
}

function note(state: TurnState, item: Item, text: string): void {
  open(state, item.thread_id ?? null, { kind: "note", id: str(item.id, `note-${state.version}`), text });
}

/** The name of a thread's agent as notes show it; the primary thread is the turn's own agent. */
function threadName(state: TurnState, threadId: unknown): string {
  if (typeof threadId === "string" && threadId) return state.threads.get(threadId)?.title || threadId;
  return state.context?.agent_name || "coordinator";
}

/**
 * A message between threads, with both agents' names ("counter → coordinator"). A thread sending back the
 * answer it just gave in its own transcript says so instead of repeating it.
 */
function threadNote(state: TurnState, item: Item, arrow: "→" | "←", peerId: unknown): void {
  const id = str(item.id, `note-${state.version}`);
  let text = textOf(contentBlocks(item.content));
  const self = threadName(state, item.thread_id);
  const peer = threadName(state, peerId);
  if (arrow === "→" && item.thread_id && text && text === lastMessage(state, item.thread_id)) text = "(its answer, above)";
  const names = arrow === "→" ? `${self} → ${peer}` : `${self} ← ${peer}`;
  open(state, item.thread_id ?? null, { kind: "note", id, text: `${names}: ${text}` });
}

function lastMessage(state: TurnState, threadId: string): string {
  const order = state.threads.get(threadId)?.order ?? [];
  for (let i = order.length - 1; i >= 0; i -= 1) {
    const block = state.blocks.get(order[i] ?? "");
    if (block?.kind === "message") return block.text;
  }
  return "";
}

function openTool(state: TurnState, item: Item, runner: "engine" | "custom" | "server"): void {
  const input = typeof item.input === "object" && item.input !== null ? (item.input as Record<string, unknown>) : {};
  open(state, item.thread_id ?? null, {
    kind: "tool",
    id: str(item.id),
    name: str(item.name, "tool"),
    custom: runner === "custom",
    server: runner === "server",
    input,
    permission: typeof item.evaluated_permission === "string" ? item.evaluated_permission : null,
    startedAt: item.created_at ?? null,
    endedAt: null,
    output: [],
    displays: [],
    fullText: null,
    isError: false,
    errorCode: null,
    deniedBy: null,
    answered: false,
    approval: null,
    confirmation: null,
    skill: null,
  });
}

function toolBlock(state: TurnState, id: string): ToolBlock | null {
  const block = state.blocks.get(id);
  return block?.kind === "tool" ? block : null;
}

function cacheWrites(usage: UsageJson): number {
  return num(usage.cache_creation?.ephemeral_5m_input_tokens) + num(usage.cache_creation?.ephemeral_1h_input_tokens);
}

function latestRevision(state: TurnState): string {
  for (let i = state.order.length - 1; i >= 0; i -= 1) {
    const block = state.blocks.get(state.order[i] ?? "");
    if (block?.kind === "message" && block.text) return block.text;
  }
  return "";
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** The kernel's `NotebookContext.describe()` ("3 cells, 1 image, 12 variables") and each cell as text. */
export function notebookContext(value: unknown): NotebookContextView | null {
  if (!value || typeof value !== "object") return null;
  const context = value as { cells?: unknown; variables?: unknown; variables_left_out?: unknown };
  const cells = Array.isArray(context.cells) ? (context.cells as Record<string, unknown>[]) : [];
  const variables = Array.isArray(context.variables) ? (context.variables as Record<string, unknown>[]) : null;
  if (!cells.length && !variables?.length) return null;
  let images = 0;
  const texts = cells.map((cell) => {
    const outputs = Array.isArray(cell.outputs) ? (cell.outputs as Record<string, unknown>[]) : [];
    const shown = outputs.map((output) => {
      if (output.image || str(output.text).startsWith("[image:")) images += 1;
      return str(output.text);
    });
    return [str(cell.source), ...shown].filter((text) => text).join("\n—\n");
  });
  const parts = [plural(cells.length, "cell")];
  if (images) parts.push(plural(images, "image"));
  if (variables?.length) parts.push(plural(variables.length + num(context.variables_left_out), "variable"));
  if (variables?.length) texts.push(variables.map((v) => `${str(v.name)}: ${str(v.type)} ${str(v.summary)}`.trim()).join("\n"));
  return { summary: parts.join(", "), cells: texts };
}
