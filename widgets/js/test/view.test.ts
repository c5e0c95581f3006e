import { beforeEach, describe, expect, it } from "vitest";
import { apply, fold } from "../src/fold";
import type { Item, OutgoingMessage } from "../src/types";
import { TurnView } from "../src/view/turn";
import { context, delta, idle, message, refused, resetClock, running, skillActivated, start, text, thinking, toolResult, toolUse, usageEnd } from "./items";

beforeEach(resetClock);

function paint(items: Item[], sent: OutgoingMessage[] = []): HTMLElement {
  const root = document.createElement("div");
  new TurnView(root, (m) => sent.push(m)).paint(fold(items));
  return root;
}

function live(items: Item[]): { view: TurnView; root: HTMLElement; sent: OutgoingMessage[] } {
  const root = document.createElement("div");
  const sent: OutgoingMessage[] = [];
  return { view: new TurnView(root, (m) => sent.push(m)), root, sent };
}

const q = (root: Element, selector: string): HTMLElement => {
  const el = root.querySelector<HTMLElement>(selector);
  if (!el) throw new Error(`no ${selector} in ${root.innerHTML}`);
  return el;
};

describe("turn view", () => {
  it("renders streaming markdown progressively, keeping finished blocks", () => {
    const { view, root } = live([]);
    const state = fold([context(), running(), start("m1"), delta("m1", "# Title\n\nFirst para")]);
    view.paint(state);
    const heading = q(root, ".ac-message h1");
    expect(heading.textContent).toBe("Title");
    expect(q(root, ".ac-message").classList.contains("ac-streaming")).toBe(true);
    for (const piece of [" grows.\n\n", "Second ", "para\n\n- a\n- b\n\n", "Third"]) {
      const s = state;
      const block = s.blocks.get("m1");
      if (block?.kind === "message") block.text += piece;
      view.paint(s);
    }
    expect(root.querySelector(".ac-message h1")).toBe(heading); // the finished block kept its DOM
    expect(q(root, ".ac-message").textContent).toContain("First para grows.");
    expect([...root.querySelectorAll(".ac-message li")].map((li) => li.textContent)).toEqual(["a", "b"]);
    const final = fold([context(), running(), start("m1"), message("m1", "# Title\n\nAll done.")]);
    view.paint(final);
    expect(q(root, ".ac-message").classList.contains("ac-streaming")).toBe(false);
    expect(q(root, ".ac-message h1").textContent).toBe("Title");
    expect(q(root, ".ac-message p").textContent).toBe("All done.");
    expect(root.querySelectorAll(".ac-message p").length).toBe(1);
  });

  it("shows thinking as a collapsible block: a start-only preview, then the text", () => {
    const { view, root } = live([]);
    view.paint(fold([start("t1", "agent.thinking")]));
    const details = q(root, "details.ac-thinking");
    expect(q(details, "summary").textContent).toBe("Thinking…");
    expect((details as HTMLDetailsElement).open).toBe(false);
    view.paint(fold([start("t1", "agent.thinking"), thinking("t1", "Consider *this*")]));
    expect(q(root, "details.ac-thinking summary").textContent).toBe("Thinking");
    expect(q(root, "details.ac-thinking em").textContent).toBe("this");
  });

  it("shows a tool card: name, kind, code input, status, duration and output", () => {
    const items = [running(), toolUse("a", "python", { code: "print(6*7)" }), toolResult("a", [text("42\n")])];
    const root = paint(items);
    const card = q(root, ".ac-tool");
    expect(q(card, ".ac-tool-name").textContent).toBe("python");
    expect(q(card, ".ac-tool-kind").textContent).toBe("code");
    expect(q(card, ".ac-tool-input code.language-python").textContent).toContain("print(6*7)");
    expect(q(card, ".ac-status").textContent).toBe("completed");
    expect(q(card, ".ac-tool-time").textContent).toBe("2.5 s");
    expect(q(card, ".ac-tool-output pre").textContent).toBe("42\n");
  });

  it("shows a skill activation as its own card: name, version, who chose it, folder, files", () => {
    const body = '<skill_content name="csv-style">\nThree bullets.\n</skill_content>';
    const items = [
      running(),
      toolUse("s", "activate_skill", { name: "csv-style" }),
      skillActivated("s", "csv-style", ["references/STYLE.md", "scripts/summarise.py"]),
      toolResult("s", [text(body)]),
    ];
    const card = q(paint(items), ".ac-tool.ac-skill");
    expect(q(card, ".ac-skill-name").textContent).toBe("csv-style");
    expect(q(card, ".ac-skill-version").textContent).toBe("v2");
    expect(q(card, ".ac-tool-kind").textContent).toBe("skill");
    expect(q(card, ".ac-status").textContent).toBe("completed");
    expect(q(card, ".ac-skill-meta").textContent).toBe("chosen by the model · mounted read-only at .agentcell/skills/csv-style/v2/");
    expect([...card.querySelectorAll(".ac-skill-files li")].map((li) => li.textContent)).toEqual([
      "references/STYLE.md",
      "scripts/summarise.py",
    ]);
    const details = q(card, "details.ac-skill-instructions");
    expect(details.hasAttribute("open")).toBe(false); // the instructions are there, folded away
    expect(q(details, "pre").textContent).toBe(body);
    expect(card.querySelector(".ac-tool-input")).toBeNull();
    expect(card.getAttribute("aria-label")).toBe("skill csv-style version 2, completed");
    // A refused activation stays a plain tool card with its error.
    const refused = q(paint([running(), toolUse("r", "activate_skill", { name: "x" }), toolResult("r", [text("blocked")], true)]), ".ac-tool");
    expect(refused.classList.contains("ac-skill")).toBe(false);
    expect(q(refused, ".ac-tool-kind").textContent).toBe("skill");
    expect(q(refused, ".ac-tool-output.ac-error pre").textContent).toBe("blocked");
  });

  it("shows JSON input pretty-printed, images, diffs and errors", () => {
    const png = "iVBORw0KGgo=";
    const root = paint([
      running(),
      toolUse("r", "read_file", { path: "a.png" }),
      toolResult("r", [text("a.png (8 bytes)"), { type: "image", source: { type: "base64", media_type: "image/png", data: png } }]),
      toolUse("e", "edit_file", { path: "a.py", old: "x", new: "y" }),
      toolResult("e", [text("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n")]),
      toolUse("m", "github__search", { q: "x" }),
      toolResult("m", [text("boom")], true),
      toolUse("s", "svg", {}),
      toolResult("s", [{ type: "image", source: { type: "base64", media_type: "image/svg+xml", data: "PHN2Zz4=" } }]),
    ]);
    const [read, edit, mcp, svg] = [...root.querySelectorAll(".ac-tool")] as HTMLElement[];
    if (!read || !edit || !mcp || !svg) throw new Error("cards missing");
    expect(q(read, ".ac-tool-input code").textContent).toBe('{\n  "path": "a.png"\n}');
    expect(q(read, "img").getAttribute("src")).toBe(`data:image/png;base64,${png}`);
    expect(q(edit, ".ac-diff .hljs-addition").textContent).toContain("+y");
    expect(q(edit, ".ac-diff .hljs-deletion").textContent).toContain("-x");
    expect(q(mcp, ".ac-tool-kind").textContent).toBe("mcp: github");
    expect(q(mcp, ".ac-status").textContent).toBe("failed");
    expect(q(mcp, ".ac-tool-output").classList.contains("ac-error")).toBe(true);
    expect(svg.querySelector("img")).toBeNull();
  });

  it("shows pending and running tools while the turn runs", () => {
    const root = paint([running(), toolUse("a", "bash", { command: "sleep 1" }), toolUse("b", "bash", { command: "ls" })]);
    expect([...root.querySelectorAll(".ac-status")].map((s) => s.textContent)).toEqual(["running", "pending"]);
  });

  it("offers Allow once / Allow always / Deny when the front end is live, and sends custom messages", () => {
    const asking = [
      context(),
      running(),
      { type: "widget.live", approvals: true },
      toolUse("b", "bash", { command: "rm -rf build" }, "ask"),
      { type: "widget.approval_request", tool_use_id: "b", reason: "bash runs a shell command", preset: "workspace-write" },
    ];
    for (const [label, expected] of [
      ["Allow once", { result: "allow", remember: "once" }],
      ["Allow always", { result: "allow", remember: "always" }],
      ["Deny", { result: "deny", remember: "once", message: "not now" }],
    ] as const) {
      const sent: OutgoingMessage[] = [];
      const root = paint(asking, sent);
      const panel = q(root, ".ac-approval");
      expect(q(panel, ".ac-approval-title").textContent).toBe("bash wants to run:");
      expect(q(panel, ".ac-command").textContent).toBe("$ rm -rf build"); // the concrete action is the headline
      expect(q(panel, ".ac-approval-reason").textContent).toBe("Asked because bash runs a shell command");
      expect(q(root, ".ac-status").textContent).toBe("awaiting approval");
      (q(panel, ".ac-deny-message") as HTMLInputElement).value = "not now";
      const button = [...panel.querySelectorAll("button")].find((b) => b.firstChild?.textContent === label);
      button?.click();
      button?.click(); // a second click sends nothing more
      expect(sent).toEqual([{ type: "approval", tool_use_id: "b", ...expected }]);
      expect(root.querySelector(".ac-approval")).toBeNull();
      expect(q(root, ".ac-tool").textContent).toContain("Answer sent");
    }
  });

  it("shows the approval panel when the kernel's request arrives after the call", () => {
    const { view, root } = live([]);
    const items = [context(), running(), { type: "widget.live", approvals: true }, toolUse("b", "bash", { command: "ls" }, "ask")];
    const state = fold(items);
    view.paint(state);
    expect(q(root, ".ac-status").textContent).toBe("awaiting approval");
    expect(root.querySelector(".ac-approval")).toBeNull(); // nothing a click could answer yet
    apply(state, { type: "widget.approval_request", tool_use_id: "b", reason: "bash runs a shell command", preset: "workspace-write" });
    view.paint(state);
    expect(q(root, ".ac-approval .ac-command").textContent).toBe("$ ls");
  });

  it("says the preset decided when approvals could not be offered", () => {
    const root = paint([
      context(),
      running(),
      toolUse("b", "bash", { command: "ls" }, "ask"),
      toolResult("b", [text("not run: bash runs a shell command. That needs the user's approval...")], true, refused("no-view")),
      idle(),
    ]);
    expect(root.querySelector(".ac-approval")).toBeNull();
    expect(q(root, ".ac-status").textContent).toBe("denied");
    expect(q(root, ".ac-note-preset").textContent).toContain("the workspace-write preset decided without asking");
  });

  it("shows what the user answered", () => {
    const root = paint([
      running(),
      toolUse("b", "bash", { command: "ls" }, "ask"),
      { type: "widget.approval_request", tool_use_id: "b", reason: "r", preset: "p" },
      { type: "user.tool_confirmation", id: "c", tool_use_id: "b", result: "deny", remember: "once", deny_message: "too risky" },
      toolResult("b", [text("The user declined this tool call. They said: too risky")], true, refused("user", "DECLINED")),
    ]);
    expect(q(root, ".ac-note-deny").textContent).toBe("Denied: too risky");
    expect(q(root, ".ac-status").textContent).toBe("denied");
  });

  it("has a Stop button only while a live turn runs, sending a stop message once", () => {
    const sent: OutgoingMessage[] = [];
    const root = paint([context(), running(), { type: "widget.live", approvals: true }], sent);
    const stop = q(root, ".ac-stop") as HTMLButtonElement;
    stop.click();
    expect(sent).toEqual([{ type: "stop" }]);
    expect(q(root, ".ac-stop").textContent).toBe("Stopping…");
    expect(paint([context(), running()]).querySelector(".ac-stop")).toBeNull();
    expect(paint([context(), running(), { type: "widget.live", approvals: true }, idle()]).querySelector(".ac-stop")).toBeNull();
  });

  it("has a steer box while a live turn runs, sending the guidance as a custom message", () => {
    const sent: OutgoingMessage[] = [];
    const root = paint([context(), running(), { type: "widget.live", approvals: true }], sent);
    const input = q(root, ".ac-steer-input") as HTMLInputElement;
    input.value = "  use the median instead  ";
    (q(root, ".ac-steer-form") as HTMLFormElement).requestSubmit();
    expect(sent).toEqual([{ type: "steer", text: "use the median instead" }]);
    expect(input.value).toBe("");
    (q(root, ".ac-steer-form") as HTMLFormElement).requestSubmit(); // empty: nothing sent
    expect(sent.length).toBe(1);
    expect(paint([context(), running(), { type: "widget.live", approvals: true }, idle()]).querySelector(".ac-steer-form")).toBeNull();
  });

  it("shows the header: model, agent and version, preset, status and stop reason", () => {
    const root = paint([context(), { type: "span.model_request_start", id: "s", model: "claude-x" }, idle("max_turns")]);
    expect(q(root, ".ac-model").textContent).toBe("claude-x");
    expect(q(root, ".ac-agent").textContent).toBe("helper v3");
    expect(q(root, ".ac-preset").textContent).toBe("workspace-write");
    expect(q(root, ".ac-turn-status").textContent).toBe("done: max_turns");
    expect(q(paint([context(), running()]), ".ac-turn-status").textContent).toBe("running");
  });

  it("says a failed turn's error once, in its body, and offers Retry where the page can run the cell", () => {
    const error = { type: "session.error", id: "e", error: { type: "overloaded_error", message: "overloaded", retry_status: "terminal" } };
    const failed = { type: "session.status_idle", id: "i", stop_reason: { type: "error", message: "overloaded" } };
    expect(q(paint([context(), running(), error, failed]), ".ac-turn-status").textContent).toBe("failed");
    expect(paint([context(), running(), error, failed]).querySelector(".ac-retry")).toBeNull(); // no one to run it
    document.body.dataset.agentcellRetry = "true";
    try {
      const root = paint([context(), running(), error, failed]);
      expect(root.textContent?.split("overloaded").length).toBe(3); // "overloaded_error: overloaded", once
      const asked: Event[] = [];
      root.addEventListener("agentcell:retry", (event) => asked.push(event));
      (q(root, ".ac-retry") as HTMLButtonElement).click();
      expect(asked.length).toBe(1);
      // Without an error block, the header keeps the detail: it is the only place that says it.
      expect(q(paint([context(), running(), failed]), ".ac-turn-status").textContent).toBe("failed: overloaded");
    } finally {
      delete document.body.dataset.agentcellRetry;
    }
  });

  it("says in the header where the answers came from, only when the notebook's recording was consulted", () => {
    const replayed = paint([context(), running(), { ...usageEnd({ input_tokens: 3 }), source: "replay" }, idle()]);
    expect(q(replayed, ".ac-origin").textContent).toBe("replayed");
    expect(q(replayed, ".ac-origin").getAttribute("title")).toBe("replayed from the notebook's recording");
    const mixed = [{ ...usageEnd({ input_tokens: 3 }), source: "replay" }, { ...usageEnd({ input_tokens: 4 }), source: "live" }];
    expect(q(paint([context(), running(), ...mixed, idle()]), ".ac-origin").textContent).toBe("partly replayed");
    expect(q(paint([context(), running(), { ...usageEnd({}), source: "live" }, idle()]), ".ac-origin-live").textContent).toBe("live");
    expect(paint([context(), running(), usageEnd({ input_tokens: 3 }), idle()]).querySelector(".ac-origin")).toBeNull();
  });

  it("shows the cost meter: tokens, turn and session cost, budget bar and sparkline", () => {
    const root = paint([
      context(),
      usageEnd({ input_tokens: 1200, output_tokens: 300, cache_read_input_tokens: 40, cache_creation: { ephemeral_5m_input_tokens: 7 }, list_cost: "0.0123" }),
      { type: "session.usage", id: "u", usage: { list_cost: "0.0423" }, budget: { type: "limit", max_list_cost: "0.5", currency: "USD" } },
    ]);
    expect(q(root, ".ac-tokens").textContent).toBe("in 1,200 · out 300 · cache read 40 · cache write 7");
    expect(q(root, ".ac-turn-cost").textContent).toBe("turn $0.0123");
    expect(q(root, ".ac-session-cost").textContent).toBe(" · session $0.0423");
    expect(q(root, ".ac-budget-label").textContent).toBe("budget $0.5: $0.4577 left");
    expect(q(root, ".ac-budget-bar").getAttribute("aria-valuenow")).toBe("8");
    const bars = root.querySelectorAll(".ac-sparkline rect");
    expect(bars.length).toBe(3); // two earlier turns and this one
    expect(bars[2]?.getAttribute("class")).toBe("ac-spark-current");
  });

  it("draws no sparkline while every turn was free, and one as soon as a turn cost something", () => {
    const free = paint([context({ turn_costs: ["0", "0"] }), usageEnd({ input_tokens: 1162, output_tokens: 12, list_cost: "0" })]);
    expect(free.querySelector(".ac-sparkline")).toBeNull();
    expect(q(free, ".ac-turn-cost").textContent).toBe("turn $0");
    const paid = paint([context({ turn_costs: ["0", "0"] }), usageEnd({ input_tokens: 10, list_cost: "0.002" })]);
    expect(paid.querySelectorAll(".ac-sparkline rect").length).toBeGreaterThan(0);
  });

  it("says what the prompt cache saved, per turn and per session, and nothing when it changed nothing", () => {
    const write = { input_tokens: 10, cache_creation: { ephemeral_5m_input_tokens: 4000 }, list_cost: "0.0125", uncached_cost: "0.01" };
    const read = { input_tokens: 10, cache_read_input_tokens: 4000, list_cost: "0.001", uncached_cost: "0.01" };
    const session = { type: "session.usage", id: "u", usage: { list_cost: "0.59", uncached_cost: "1" } };
    const root = paint([context(), usageEnd(write), { ...usageEnd(read), id: "end2" }, session]);
    expect(q(root, ".ac-turn-cost").textContent).toBe("turn $0.0135");
    expect(q(root, ".ac-turn-saving").textContent).toBe(" (uncached $0.02, saved $0.0065 by cache)");
    expect(q(root, ".ac-session-saving").textContent).toBe(" (uncached $1, saved $0.41 by cache)");
    // The first request of a session writes the cache: dearer than plain input until it is read back.
    expect(q(paint([context(), usageEnd(write)]), ".ac-turn-saving").textContent).toBe(
      " (uncached $0.01, $0.0025 more for cache writes)",
    );
    // No cache tokens, or a log older than uncached_cost: no line at all.
    const plain = paint([context(), usageEnd({ input_tokens: 5, list_cost: "0.003", uncached_cost: "0.003" }), { type: "session.usage", id: "u", usage: { list_cost: "0.2" } }]);
    expect(plain.querySelector(".ac-cache-saving")).toBeNull();
  });

  it("shows errors, interrupted messages, outcomes and nested threads", () => {
    const root = paint([
      { type: "session.error", id: "e1", error: { type: "model_overloaded_error", message: "busy", retry_status: "retrying" } },
      message("m1", "partial", { interrupted: true }),
      { type: "user.define_outcome", id: "o", outcome_id: "o1", description: "A haiku", rubric: { type: "text", content: "5-7-5" } },
      { type: "span.outcome_evaluation_end", id: "e", outcome_id: "o1", iteration: 0, result: "needs_revision", explanation: "too long" },
      { type: "session.thread_created", id: "tc", session_thread_id: "th1", agent_name: "researcher" },
      { ...message("tm", "thread *text*"), thread_id: "th1" },
    ]);
    expect(q(root, ".ac-retrying").textContent).toBe("The provider is overloaded; retrying (2)…");
    expect(root.querySelector(".ac-error-block")).toBeNull(); // a retry is news, not an alarm
    expect(q(root, ".ac-interrupted").textContent).toBe("(interrupted)");
    const outcome = q(root, ".ac-outcome");
    expect(q(outcome, "h4").textContent).toBe("Outcome: A haiku");
    expect(q(outcome, ".ac-rubric .ac-prose").textContent).toBe("5-7-5");
    expect(q(outcome, ".ac-iteration-n").textContent).toBe("Cycle 1");
    expect(q(outcome, ".ac-verdict").textContent).toBe("needs revision");
    expect(q(outcome, ".ac-explanation").textContent).toBe("Grader: too long");
    expect(q(outcome, ".ac-revision").textContent).toContain("partial");
    const thread = q(root, "details.ac-thread");
    expect(q(thread, "summary").textContent).toContain("researcher");
    expect(q(thread, ".ac-message em").textContent).toBe("text");
    expect(root.querySelector(".ac-body .ac-message em")).toBeNull();
  });

  it("is usable by keyboard: real buttons and details, a polite status", () => {
    const root = paint([
      context(),
      running(),
      { type: "widget.live", approvals: true },
      toolUse("b", "bash", { command: "ls" }, "ask"),
      { type: "widget.approval_request", tool_use_id: "b", reason: "r", preset: "p" },
      start("t", "agent.thinking"),
      message("m", "```py\nx\n```"),
    ]);
    for (const button of root.querySelectorAll("button")) {
      // Plain buttons everywhere; only the steer box submits its own form (Enter sends the guidance).
      expect(button.type).toBe(button.closest("form.ac-steer-form") ? "submit" : "button");
    }
    // stop, steer, 3 answers, copy and insert below (message code); the approval shows the command, not the input
    expect(root.querySelectorAll("button").length).toBe(7);
    expect(q(root, ".ac-turn-status").getAttribute("aria-live")).toBe("polite");
    expect(root.querySelector("details.ac-thinking summary")).not.toBeNull();
  });

  it("renders a failed attempt's previews away", () => {
    const { view, root } = live([]);
    view.paint(fold([start("m1"), delta("m1", "first attempt")]));
    expect(root.textContent).toContain("first attempt");
    view.paint(fold([start("m1"), delta("m1", "first attempt"), usageEnd({}, true), start("m2"), delta("m2", "retry")]));
    expect(root.textContent).not.toContain("first attempt");
    expect(root.textContent).toContain("retry");
  });
});

describe("notebook context line", () => {
  it("shows what the turn took from the notebook, opening to each cell as text (never as HTML)", () => {
    const prompt = {
      type: "user.message",
      id: "u1",
      created_at: "2026-01-01T00:00:00Z",
      content: [{ type: "text", text: "what happened?" }],
      context: { cells: [{ source: "print('<b>x</b>')", outputs: [{ kind: "stdout", text: "<b>x</b>" }] }], variables: [] },
    } as Item;
    const root = paint([prompt, running()]);
    const details = q(root, ".ac-notebook-context details");
    expect(q(details, "summary").textContent).toBe("notebook: 1 cell");
    expect(q(details, "pre.ac-notebook-cell").textContent).toBe("print('<b>x</b>')\n—\n<b>x</b>");
    expect(details.querySelector("b")).toBeNull();
    expect(paint([running()]).querySelector(".ac-notebook-context details")).toBeNull();
  });
});
