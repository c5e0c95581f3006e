/**
 * The items the turn view folds: the engine's events as JSON (`kernel/agentcell/events.py` is the
 * authority for their shape), its previews, and the few `widget.*` items the kernel's renderer adds
 * (context at the start, whether approvals can be answered, which tool call is waiting for an answer).
 * Fields are read defensively: a saved notebook may come from an older or newer engine.
 */

export interface TextBlock {
  type: "text";
  text: string;
}

export interface ImageBlock {
  type: "image";
  source: { type: "base64"; media_type: string; data: string };
}

export type ContentBlock = TextBlock | ImageBlock;

/** `events.ToolDisplay`: the HTML or Markdown a tool's code displayed, standing for one content block. */
export interface ToolDisplay {
  block: number;
  media_type: "text/html" | "text/markdown";
  data: string;
}

export function toolDisplays(value: unknown): ToolDisplay[] {
  if (!Array.isArray(value)) return [];
  return value.filter((d): d is ToolDisplay => {
    const x = d as Partial<ToolDisplay> | null;
    return (
      typeof x === "object" &&
      x !== null &&
      typeof x.block === "number" &&
      (x.media_type === "text/html" || x.media_type === "text/markdown") &&
      typeof x.data === "string"
    );
  });
}

export interface UsageJson {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number };
  list_cost?: string;
  /** What the same tokens would have cost without the prompt cache (absent in logs older than it). */
  uncached_cost?: string;
  /** Requests counted whose model has no known list price (then the cost is unknown or incomplete). */
  unpriced_requests?: number;
}

export interface BudgetJson {
  max_list_cost: string;
  currency?: string;
}

/** Any item: a discriminated record whose other fields the fold reads by type. */
export interface Item {
  type: string;
  id?: string;
  thread_id?: string | null;
  created_at?: string;
  [field: string]: unknown;
}

/** The first item of every turn: what the header and the sparkline need from outside the turn. */
export interface ContextItem extends Item {
  type: "widget.context";
  model: string;
  agent_name: string;
  agent_version: number;
  preset: string;
  /** List cost of each earlier turn of the session, oldest first (decimal strings). */
  turn_costs: string[];
  /** USD per million output tokens of the agent's model (a decimal string), when it has a known price. */
  output_price_mtok?: string | null;
}

/** Kernel → browser custom message: a batch of items continuing the turn's log at `start`. */
export interface ItemsMessage {
  type: "items";
  start: number;
  items: Item[];
}

/** Browser → kernel custom messages. */
export type OutgoingMessage =
  | { type: "hello"; from: number }
  | { type: "approval"; tool_use_id: string; result: "allow" | "deny"; remember: "once" | "always"; message?: string }
  | { type: "stop" }
  | { type: "steer"; text: string };

export function isContentBlock(value: unknown): value is ContentBlock {
  if (typeof value !== "object" || value === null) return false;
  const block = value as { type?: unknown; text?: unknown; source?: unknown };
  if (block.type === "text") return typeof block.text === "string";
  if (block.type === "image") {
    const source = block.source as { media_type?: unknown; data?: unknown } | undefined;
    return typeof source?.media_type === "string" && typeof source.data === "string";
  }
  return false;
}

export function contentBlocks(value: unknown): ContentBlock[] {
  return Array.isArray(value) ? value.filter(isContentBlock) : [];
}

export function textOf(blocks: ContentBlock[]): string {
  return blocks.map((b) => (b.type === "text" ? b.text : "")).join("");
}

export function str(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

export function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
