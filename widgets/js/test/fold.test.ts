import { beforeEach, describe, expect, it } from "vitest";
import { apply, fold } from "../src/fold";
import { toolStatus } from "../src/status";
import { formatUsd } from "../src/money";
import type { Item } from "../src/types";
import { context, delta, idle, message, refused, resetClock, running, skillActivated, start, text, thinking, toolResult, toolUse, usageEnd } from "./items";

beforeEach(resetClock);

describe("fold", () => {
  it("streams a message from previews and lets the buffered event win", () => {
    const state = fold([context(), running(), start("m1"), delta("m1", "Hel"), delta("m1", "lo")]);
    const block = state.blocks.get("m1");
    expect(block).toMatchObject({ kind: "message", text: "Hello", streaming: true });
    apply(state, message("m1", "Hello, world"));
    expect(state.blocks.get("m1")).toMatchObject({ text: "Hello, world", streaming: false });
    expect(state.order).toEqual(["m1"]);
  });

  it("puts a skill's activation on the activate_skill call that made it, and nowhere else", () => {
    const state = fold([
      running(),
      toolUse("u1", "activate_skill", { name: "csv-style" }),
      skillActivated("u1", "csv-style", ["scripts/summarise.py"], "user"),
      skillActivated("nope", "other", []),
      toolResult("u1", [text('<skill_content name="csv-style">…</skill_content>')]),
    ]);
    expect(state.blocks.get("u1")).toMatchObject({
      kind: "tool",
      answered: true,
      skill: { name: "csv-style", version: 2, path: ".agentcell/skills/csv-style/v2", files: ["scripts/summarise.py"], requestedBy: "user" },
    });
    expect(state.order).toEqual(["u1"]);
  });

  it("ignores deltas after the buffered message and for unknown ids", () => {
    const state = fold([start("m1"), message("m1", "final"), delta("m1", " late"), delta("zz", "x")]);
    expect(state.blocks.get("m1")).toMatchObject({ text: "final" });
    expect(state.blocks.size).toBe(1);
  });

  it("marks interrupted messages and interrupt requests", () => {
    const state = fold([message("m1", "part", { interrupted: true }), { type: "user.interrupt", id: "i" }]);
    expect(state.blocks.get("m1")).toMatchObject({ interrupted: true });
    expect(state.interruptRequested).toBe(true);
  });

  it("thinking is start-only, then buffered; redacted thinking says so", () => {
    const state = fold([start("t1", "agent.thinking")]);
    expect(state.blocks.get("t1")).toMatchObject({ kind: "thinking", text: null });
    apply(state, thinking("t1", "Let me see"));
    expect(state.blocks.get("t1")).toMatchObject({ text: "Let me see", redacted: false });
    apply(state, { type: "agent.thinking", id: "t2", thinking: "", redacted_data: "redacted" });
    expect(state.blocks.get("t2")).toMatchObject({ redacted: true });
  });

  it("drops a failed attempt's previews", () => {
    const state = fold([start("m1"), delta("m1", "partial"), usageEnd({ input_tokens: 1 }, true), start("m2")]);
    expect(state.order).toEqual(["m2"]);
  });

  it("derives tool statuses from the log", () => {
    const state = fold([running(), toolUse("a", "python", { code: "1" }), toolUse("b", "read_file", { path: "x" })]);
    const status = (id: string) => {
      const b = state.blocks.get(id);
      if (b?.kind !== "tool") throw new Error(id);
      return toolStatus(state, b);
    };
    expect(status("a")).toBe("running");
    expect(status("b")).toBe("pending");
    apply(state, toolResult("a", [text("1")]));
    expect(status("a")).toBe("completed");
    expect(status("b")).toBe("running");
    apply(state, toolResult("b", [text("boom")], true));
    expect(status("b")).toBe("failed");

    apply(state, toolUse("c", "bash", { command: "ls" }, "ask"));
    apply(state, { type: "widget.approval_request", tool_use_id: "c", reason: "runs a shell command", preset: "workspace-write" });
    expect(status("c")).toBe("awaiting approval");
    apply(state, { type: "user.tool_confirmation", id: "k", tool_use_id: "c", result: "deny", remember: "once", deny_message: "no" });
    expect(status("c")).toBe("denied");
    apply(state, toolResult("c", [text("The user declined this tool call. They said: no")], true, refused("user", "DECLINED")));
    expect(status("c")).toBe("denied");

    // Needs approval, nobody could be asked: the preset refused it.
    apply(state, toolUse("d", "bash", { command: "ls" }, "ask"));
    apply(state, toolResult("d", [text("not run: ...")], true, refused("no-view")));
    expect(status("d")).toBe("denied");
    // Denied by the preset outright.
    apply(state, toolUse("e", "write_file", { path: "/etc/x" }, "deny"));
    apply(state, toolResult("e", [text("outside")], true, refused("preset")));
    expect(status("e")).toBe("denied");
  });

  it("sums usage exactly and keeps the session's usage and budget", () => {
    const state = fold([
      usageEnd({ input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 5, cache_creation: { ephemeral_5m_input_tokens: 3, ephemeral_1h_input_tokens: 4 }, list_cost: "0.1" }),
      usageEnd({ input_tokens: 50, output_tokens: 10, list_cost: "0.2" }),
      { type: "session.usage", id: "u", usage: { list_cost: "1.3" }, budget: { type: "limit", max_list_cost: "2", currency: "USD" } },
    ]);
    expect(state.turnUsage).toMatchObject({ input: 150, output: 30, cacheRead: 5, cacheWrite: 7 });
    expect(formatUsd(state.turnUsage.cost)).toBe("$0.3");
    expect(state.sessionUsage?.list_cost).toBe("1.3");
    expect(state.budget?.max_list_cost).toBe("2");
  });

  it("keeps header facts: context, model, preset updates, status and stop reason", () => {
    const state = fold([context(), { type: "span.model_request_start", id: "s", model: "claude-x" }, running()]);
    expect(state.model).toBe("claude-x");
    expect(state.status).toBe("running");
    apply(state, { type: "session.updated", id: "up", permissions: "read-only" });
    expect(state.context?.preset).toBe("read-only");
    apply(state, idle("error", { message: "boom" }));
    expect(state).toMatchObject({ status: "idle", stopReason: "error", stopDetail: "boom" });
  });

  it("records errors, the prompt and custom tools", () => {
    const state = fold([
      { type: "user.message", id: "u", content: [text("Do it")] },
      { type: "session.error", id: "e1", error: { type: "model_overloaded_error", message: "busy", retry_status: "retrying" } },
      { type: "agent.custom_tool_use", id: "c1", call_id: "x", name: "lookup", input: { q: 1 } },
      { type: "user.custom_tool_result", id: "r", custom_tool_use_id: "c1", content: [text("42")] },
    ]);
    expect(state.prompt).toBe("Do it");
    expect(state.blocks.get("e1")).toMatchObject({ kind: "error", errorType: "model_overloaded_error", retry: "retrying" });
    expect(state.blocks.get("c1")).toMatchObject({ kind: "tool", custom: true, answered: true });
  });

  it("folds outcomes: rubric, each revision's verdict and text", () => {
    const state = fold([
      { type: "user.define_outcome", id: "o", outcome_id: "out1", description: "A haiku", rubric: { type: "text", content: "5-7-5" }, max_iterations: 2 },
      message("m1", "first try"),
      { type: "span.outcome_evaluation_start", id: "s0", outcome_id: "out1", iteration: 0 },
      { type: "span.outcome_evaluation_end", id: "e0", outcome_id: "out1", iteration: 0, result: "needs_revision", explanation: "too long" },
      message("m2", "second try"),
      { type: "span.outcome_evaluation_start", id: "s1", outcome_id: "out1", iteration: 1 },
      { type: "span.outcome_evaluation_end", id: "e1", outcome_id: "out1", iteration: 1, result: "satisfied", explanation: "good" },
    ]);
    const outcome = state.outcomes.get("out1");
    expect(outcome).toMatchObject({ description: "A haiku", rubric: "5-7-5", maxIterations: 2 });
    expect(outcome?.iterations).toEqual([
      { n: 0, result: "needs_revision", explanation: "too long", revision: "first try" },
      { n: 1, result: "satisfied", explanation: "good", revision: "second try" },
    ]);
  });

  it("puts a sub-agent thread's events in its own view", () => {
    const items: Item[] = [
      { type: "session.thread_created", id: "tc", session_thread_id: "th1", agent_name: "researcher" },
      { ...message("tm", "from the thread"), thread_id: "th1" },
      { type: "session.thread_status_idle", id: "ti", thread_id: "th1" },
      message("main", "main text"),
    ];
    const state = fold(items);
    expect(state.order).toEqual(["main"]);
    expect(state.threads.get("th1")).toMatchObject({ title: "researcher", status: "idle", order: ["tm"] });
  });

  it("ignores unknown item types", () => {
    const state = fold([{ type: "something.new", id: "x" }]);
    expect(state.blocks.size).toBe(0);
  });
});

describe("notebook context", () => {
  it("says what the turn took from the notebook, cells and variables, images counted", () => {
    const item = {
      ...message("u1", "what happened?"),
      type: "user.message",
      content: [{ type: "text", text: "what happened?" }],
      context: {
        cells: [
          { source: "print(1)", outputs: [{ kind: "stdout", text: "1" }] },
          { source: "plot()", outputs: [{ kind: "display", text: "[image: image/png] <Figure>", image: null }] },
        ],
        variables: [{ name: "sales", type: "dict", summary: "length 2" }],
        variables_left_out: 0,
      },
    } as Item;
    const state = fold([item]);
    expect(state.prompt).toBe("what happened?");
    expect(state.notebook?.summary).toBe("2 cells, 1 image, 1 variable");
    expect(state.notebook?.cells[0]).toBe("print(1)\n—\n1");
    expect(state.notebook?.cells.at(-1)).toBe("sales: dict length 2");
    expect(fold([{ ...item, context: undefined } as Item]).notebook).toBeNull();
  });
});
