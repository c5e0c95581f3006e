/** Builders for the items the engine and the kernel's renderer send (the wire shapes of events.py). */

import type { Item } from "../src/types";

let clock = Date.parse("2026-01-01T00:00:00Z");
export function at(offsetMs = 0): string {
  return new Date(clock + offsetMs).toISOString();
}
export function resetClock(): void {
  clock = Date.parse("2026-01-01T00:00:00Z");
}

export const context = (extra: Partial<Item> = {}): Item => ({
  type: "widget.context",
  model: "claude-test",
  agent_name: "helper",
  agent_version: 3,
  preset: "workspace-write",
  turn_costs: ["0.01", "0.02"],
  ...extra,
});

export const running = (): Item => ({ type: "session.status_running", id: "run", created_at: at() });
export const idle = (stop = "end_turn", extra: Record<string, unknown> = {}): Item => ({
  type: "session.status_idle",
  id: `idle-${stop}`,
  created_at: at(5000),
  stop_reason: { type: stop, ...extra },
});
export const start = (id: string, type = "agent.message"): Item => ({ type: "event_start", event: { type, id } });
export const delta = (id: string, text: string): Item => ({
  type: "event_delta",
  event_id: id,
  delta: { type: "content_delta", index: 0, content: { type: "text", text } },
});
export const message = (id: string, text: string, extra: Partial<Item> = {}): Item => ({
  type: "agent.message",
  id,
  created_at: at(),
  content: [{ type: "text", text }],
  ...extra,
});
export const thinking = (id: string, text: string): Item => ({ type: "agent.thinking", id, created_at: at(), thinking: text });
export const toolUse = (id: string, name: string, input: Record<string, unknown>, permission = "allow"): Item => ({
  type: "agent.tool_use",
  id,
  call_id: `call-${id}`,
  name,
  input,
  evaluated_permission: permission,
  created_at: at(1000),
});
export const toolResult = (toolUseId: string, content: unknown[], isError = false, extra: Partial<Item> = {}): Item => ({
  type: "agent.tool_result",
  id: `result-${toolUseId}`,
  tool_use_id: toolUseId,
  content,
  is_error: isError,
  created_at: at(3500),
  ...extra,
});
/** How the engine says a call was refused (events.py, AgentToolResult.denied_by). */
export const refused = (deniedBy: string, errorCode = "DENIED"): Partial<Item> => ({ error_code: errorCode, denied_by: deniedBy });
export const text = (t: string) => ({ type: "text", text: t });
export const usageEnd = (usage: Record<string, unknown>, isError = false): Item => ({
  type: "span.model_request_end",
  id: `end-${Math.random()}`,
  model_request_start_id: "start",
  model_usage: usage,
  is_error: isError,
  created_at: at(),
});
export const skillActivated = (toolUseId: string, name: string, files: string[], requestedBy = "model"): Item => ({
  type: "session.skill_activated",
  id: `skill-${toolUseId}`,
  created_at: at(2000),
  tool_use_id: toolUseId,
  name,
  skill_id: "skill_1",
  version: 2,
  path: `.agentcell/skills/${name}/v2`,
  files,
  requested_by: requestedBy,
});
