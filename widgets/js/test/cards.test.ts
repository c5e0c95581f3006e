/**
 * Tool cards, approvals, threads, steering and the live footer, for daily use. Threads, steers and retries
 * come from the real event logs (`tests/fixtures/event_logs/`); the rest from the engine's wire shapes.
 */

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { apply, fold } from "../src/fold";
import type { Item, OutgoingMessage } from "../src/types";
import { actionOf } from "../src/view/action";
import { TurnView } from "../src/view/turn";
import { context, delta, idle, message, resetClock, running, start, text, toolResult, toolUse, usageEnd } from "./items";
import { XSS, assertInert } from "./xss";

beforeEach(resetClock);
afterEach(() => document.body.replaceChildren());

// vitest runs in widgets/js (jsdom's import.meta.url is not a file URL).
const DIR = `${resolve(process.cwd(), "../../tests/fixtures/event_logs")}/`;
const turnsOf = (name: string): Item[][] => (JSON.parse(readFileSync(`${DIR}${name}.json`, "utf-8")) as { turns: Item[][] }).turns;

function mount(sent: OutgoingMessage[] = []): { view: TurnView; root: HTMLElement } {
  const root = document.createElement("div");
  document.body.append(root);
  return { view: new TurnView(root, (m) => sent.push(m)), root };
}

function paint(items: Item[], sent: OutgoingMessage[] = []): HTMLElement {
  const { view, root } = mount(sent);
  view.paint(fold(items));
  return root;
}

const q = (root: Element, selector: string): HTMLElement => {
  const el = root.querySelector<HTMLElement>(selector);
  if (!el) throw new Error(`no ${selector} in ${root.innerHTML.slice(0, 2000)}`);
  return el;
};

const asking = (name: string, input: Record<string, unknown>, reason = "it would change the workspace"): Item[] => [
  context(),
  running(),
  { type: "widget.live", approvals: true },
  toolUse("t", name, input, "ask"),
  { type: "widget.approval_request", tool_use_id: "t", reason, preset: "workspace-write" },
];

describe("tool cards", () => {
  it("show what the code displayed inside the card: HTML sanitised in place of its text form", () => {
    const table = "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>";
    const root = paint([
      running(),
      toolUse("p", "python", { code: "display(df)" }),
      toolResult("p", [text("   a\n0  1"), text("done")], false, { displays: [{ block: 0, media_type: "text/html", data: table }] }),
    ]);
    const card = q(root, ".ac-tool");
    expect(q(card, ".ac-display[data-mime='text/html'] td").textContent).toBe("1");
    expect([...card.querySelectorAll(".ac-tool-output pre")].map((p) => p.textContent)).toEqual(["done"]); // not the text form too
  });

  it("keep every payload in captured HTML and Markdown displays inert", () => {
    for (const payload of XSS) {
      const root = paint([
        running(),
        toolUse("p", "python", { code: "x" }),
        toolResult("p", [text("html"), text("md")], false, {
          displays: [
            { block: 0, media_type: "text/html", data: payload },
            { block: 1, media_type: "text/markdown", data: `# t\n\n${payload} $${payload}$` },
          ],
        }),
      ]);
      assertInert(root);
    }
  });

  it("keep every payload in diffs and approval headlines inert", () => {
    for (const payload of XSS) {
      const root = paint([
        ...asking("edit_file", { path: payload, old_string: payload, new_string: payload }),
        toolUse("u", "edit_file", { path: "a", old_string: "x", new_string: payload }),
        toolResult("u", [text(`--- a\n+++ a\n-${payload}\n+${payload}`)]),
      ]);
      assertInert(root);
    }
  });

  it("fold completed cards to one line when the turn has many, and keep running and failed ones open", () => {
    const items: Item[] = [running()];
    for (const id of ["a", "b", "c", "d"]) items.push(toolUse(id, "bash", { command: `echo ${id}` }), toolResult(id, [text(id)], id === "c"));
    items.push(toolUse("e", "bash", { command: "sleep 5" }));
    const root = paint(items);
    const open = [...root.querySelectorAll<HTMLDetailsElement>("details.ac-tool")].map((d) => [d.dataset.status, d.open]);
    expect(open).toEqual([
      ["completed", false],
      ["completed", false],
      ["failed", true],
      ["completed", false],
      ["running", true],
    ]);
    expect(q(root, ".ac-tool .ac-tool-line").textContent).toBe("$ echo a");
    const few = paint([running(), toolUse("a", "bash", { command: "ls" }), toolResult("a", [text("x")])]);
    expect(q(few, "details.ac-tool").hasAttribute("open")).toBe(true);
  });

  it("say how many lines a long output holds, show the first and expand to all", () => {
    const lines = Array.from({ length: 300 }, (_, i) => `line ${i + 1}`).join("\n");
    const root = paint([running(), toolUse("a", "bash", { command: "seq 300" }), toolResult("a", [text(lines)])]);
    expect(q(root, ".ac-tool-lines").textContent).toBe("300 lines");
    const pre = q(root, ".ac-tool-output pre");
    expect(pre.textContent?.split("\n").length).toBe(40);
    const more = q(root, ".ac-more");
    expect(more.textContent).toBe("Show all 300 lines");
    more.click();
    expect(pre.textContent).toBe(lines);
  });
});

describe("approvals", () => {
  it("headline the concrete action: the command, the code, a diff, the URL", () => {
    expect(actionOf("bash", { command: "ls -la" })).toMatchObject({ kind: "shell", text: "$ ls -la" });
    expect(actionOf("python", { code: "import os\nos.remove('x')" })).toMatchObject({ kind: "code", line: "import os …" });
    expect(actionOf("edit_file", { path: "a.py", old_string: "x = 1", new_string: "x = 2" })).toMatchObject({
      kind: "diff",
      text: "--- a.py\n+++ a.py\n-x = 1\n+x = 2",
      line: "edit a.py",
    });
    expect(actionOf("web__fetch", { url: "https://example.org/a" })).toMatchObject({ kind: "url", text: "https://example.org/a" });
    expect(actionOf("bash", { command: "rm -r build", description: "clean the build" }).why).toBe("clean the build");
    const diff = paint(asking("edit_file", { path: "a.py", old_string: "x = 1", new_string: "x = 2" }));
    expect(q(diff, ".ac-approval .ac-diff .hljs-deletion").textContent).toBe("-x = 1");
    const code = paint(asking("python", { code: "import shutil" }));
    expect(q(code, ".ac-approval code.language-python").textContent).toBe("import shutil");
    const said = paint(asking("bash", { command: "rm -r build", description: "clean the build" }));
    expect(q(said, ".ac-approval-why").textContent).toBe("The agent says: clean the build");
  });

  it("answer y / a / n from the keyboard while the panel has focus, once", () => {
    for (const [key, expected] of [
      ["y", { result: "allow", remember: "once" }],
      ["a", { result: "allow", remember: "always" }],
      ["n", { result: "deny", remember: "once" }],
    ] as const) {
      const sent: OutgoingMessage[] = [];
      const root = paint(asking("bash", { command: "ls" }), sent);
      const panel = q(root, ".ac-approval");
      expect(panel.getAttribute("data-lm-suppress-shortcuts")).toBe("true"); // JupyterLab's y/a/n stay out
      panel.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
      panel.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
      expect(sent).toEqual([{ type: "approval", tool_use_id: "t", ...expected }]);
    }
    const sent: OutgoingMessage[] = [];
    const root = paint(asking("bash", { command: "ls" }), sent);
    const message = q(root, ".ac-deny-message") as HTMLInputElement;
    message.dispatchEvent(new KeyboardEvent("keydown", { key: "y", bubbles: true })); // typing a reason
    expect(sent).toEqual([]);
  });

  it("takes focus when a new approval arrives while the user is at the turn", () => {
    const { view, root } = mount();
    const state = fold([context(), running(), { type: "widget.live", approvals: true }, toolUse("t", "bash", { command: "ls" }, "ask")]);
    view.paint(state);
    q(root, ".ac-steer-input").focus();
    apply(state, { type: "widget.approval_request", tool_use_id: "t", reason: "r", preset: "workspace-write" });
    view.paint(state);
    expect(document.activeElement).toBe(q(root, ".ac-approval"));
    // Not at the turn (focus elsewhere in the page): the panel waits without taking it.
    const other = mount();
    const input = document.createElement("input");
    document.body.append(input);
    input.focus();
    other.view.paint(fold(asking("bash", { command: "ls" })));
    expect(document.activeElement).toBe(input);
  });

  it("tell the page when an approval waits off-screen, and the tab's title until it is answered", () => {
    const callbacks: ((entries: { isIntersecting: boolean }[]) => void)[] = [];
    // jsdom has no layout: a stand-in observer reports the panel out of view, as a scrolled-away cell is.
    (globalThis as { IntersectionObserver?: unknown }).IntersectionObserver = class {
      constructor(callback: (entries: { isIntersecting: boolean }[]) => void) {
        callbacks.push(callback);
      }
      observe(): void {
        callbacks.at(-1)?.([{ isIntersecting: false }]);
      }
      disconnect(): void {}
    };
    const told: { tool: string; action: string }[] = [];
    const listener = (event: Event) => told.push((event as CustomEvent<{ tool: string; action: string }>).detail);
    document.addEventListener("agentcell:approval-pending", listener);
    document.title = "notebook";
    try {
      const sent: OutgoingMessage[] = [];
      const { view, root } = mount(sent);
      const state = fold(asking("bash", { command: "make deploy" }));
      view.paint(state);
      expect(told).toMatchObject([{ tool: "bash", action: "Approve bash: $ make deploy" }]);
      expect(document.title).toBe("⏸ approval needed · notebook");
      q(root, ".ac-allow").click();
      expect(sent.length).toBe(1);
      expect(document.title).toBe("notebook");
    } finally {
      document.removeEventListener("agentcell:approval-pending", listener);
      delete (globalThis as { IntersectionObserver?: unknown }).IntersectionObserver;
    }
  });

  it("say on the card when a call ran under an 'always' answer", () => {
    const root = paint([
      running(),
      toolUse("t", "bash", { command: "ls" }, "ask"),
      { type: "user.tool_confirmation", id: "c", tool_use_id: "t", result: "allow", remember: "always" },
      toolResult("t", [text("a")]),
    ]);
    expect(q(root, ".ac-note-allow").textContent).toBe("Allowed always (a rule of this session: %permissions lists it)");
  });

  it("show a call the user denied once: no duration, and the denial said once, with their message", () => {
    const root = paint([
      running(),
      toolUse("t", "bash", { command: "rm -rf build" }, "ask"),
      { type: "user.tool_confirmation", id: "c", tool_use_id: "t", result: "deny", remember: "once", deny_message: "not now" },
      toolResult("t", [text("The user declined this tool call. Their message: not now")], true, { error_code: "DENIED", denied_by: "user" }),
    ]);
    expect(q(root, ".ac-status").textContent).toBe("denied");
    expect(q(root, ".ac-note-deny").textContent).toBe("Denied: not now");
    expect(root.querySelector(".ac-tool-time")).toBeNull();
    expect(root.querySelector(".ac-tool-output")).toBeNull();
    expect(root.textContent).not.toContain("The user declined");
  });

  it("make danger-full-access unmistakable: a red pill and a warning", () => {
    const root = paint([context({ preset: "danger-full-access" }), running()]);
    expect(q(root, ".ac-preset").classList.contains("ac-preset-danger")).toBe(true);
    expect(q(root, ".ac-danger-warning").textContent).toContain("without asking");
    const safe = paint([context(), running()]);
    expect(safe.querySelector(".ac-preset-danger, .ac-danger-warning")).toBeNull();
  });
});

describe("threads", () => {
  const threadTurn = turnsOf("threads")[0] ?? [];
  const createdAt = threadTurn.findIndex((item) => item.type === "session.thread_created");
  const threadIdle = threadTurn.findIndex((item) => item.type === "session.thread_status_idle");

  it("are open with a spinner while running, then finished, with model, tokens and cost", () => {
    const { view, root } = mount();
    view.paint(fold([context(), ...threadTurn.slice(0, threadIdle)]));
    const details = q(root, "details.ac-thread") as HTMLDetailsElement;
    expect(details.open).toBe(true);
    expect(q(details, ".ac-spinner").getAttribute("role")).toBe("progressbar");
    expect(q(details, ".ac-thread-status").textContent).toBe("running");
    view.paint(fold([context(), ...threadTurn]));
    expect(details.open).toBe(false);
    expect(details.querySelector(".ac-spinner")).toBeNull();
    expect(q(details, ".ac-thread-status").textContent).toBe("finished");
    expect(q(details, ".ac-thread-model").textContent).toBe("scripted");
    expect(q(details, ".ac-thread-usage").textContent).toBe("in 200 · out 40 · $0.0012");
    expect(q(details, "summary").textContent).not.toMatch(/items|idle/);
  });

  it("say why a thread stopped when it was not the end of its turn", () => {
    const stopped = threadTurn.map((item) =>
      item.type === "session.thread_status_idle" ? { ...item, stop_reason: { type: "max_turns" } } : item,
    );
    expect(q(paint([context(), ...stopped]), ".ac-thread-status").textContent).toBe("finished: max turns");
  });

  it("name the agents on both sides of each note and show the answer once", () => {
    const root = paint([context({ agent_name: "coordinator" }), ...threadTurn]);
    const notes = [...root.querySelectorAll(".ac-thread-note")].map((n) => n.textContent);
    expect(notes).toEqual([
      "coordinator → counter: Count the files",
      "counter ← coordinator: Count the files",
      "counter → coordinator: (its answer, above)",
    ]);
    expect(createdAt).toBeGreaterThan(0);
    const answers = [...root.querySelectorAll(".ac-message, .ac-tool-output")].filter((m) => m.textContent?.trim() === "There are 3.");
    expect(answers.length).toBe(1); // in the thread; its note and the wait_thread card point to it
    expect(q(root, ".ac-thread-answer").textContent).toBe("counter's answer, shown in its thread.");
  });
});

describe("steering", () => {
  it("sends with Enter and says in the transcript whether each steer was delivered", () => {
    const sent: OutgoingMessage[] = [];
    const root = paint([context(), running(), { type: "widget.live", approvals: true }], sent);
    const input = q(root, ".ac-steer-input") as HTMLInputElement;
    expect(q(root, ".ac-steer-form").getAttribute("data-lm-suppress-shortcuts")).toBe("true");
    input.value = "use the median";
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    expect(sent).toEqual([{ type: "steer", text: "use the median" }]);
    expect(input.value).toBe("");
    expect(input.placeholder).toContain("Sent: use the median");
    const [delivered, undelivered] = turnsOf("steer");
    const notes = (items: Item[] | undefined) => [...paint(items ?? []).querySelectorAll(".ac-note")].map((n) => n.textContent);
    expect(notes(delivered)).toContain("Steer delivered: use the median, not the mean");
    expect(notes(undelivered)).toContain("Steer not delivered (the turn ended before the next step): hurry up");
  });
});

describe("the live footer", () => {
  const requestStart = (extra: Record<string, unknown> = {}): Item => ({
    type: "span.model_request_start",
    id: "rs",
    model: "claude-sonnet-4-5",
    max_tokens: 4096,
    budget_shortened_from: null,
    preparing: null,
    ...extra,
  });

  it("says what the turn waits for before the first token, then counts what streams", () => {
    const live = { type: "widget.live", approvals: true };
    expect(q(paint([context(), running(), live, requestStart()]), ".ac-progress").textContent).toBe("waiting for claude-sonnet-4-5…");
    const local = paint([context(), running(), live, requestStart({ preparing: "loading the local model" })]);
    expect(q(local, ".ac-progress").textContent).toBe("loading the local model…");
    const streaming = paint([context({ output_price_mtok: "15" }), running(), live, requestStart(), start("m"), delta("m", "x".repeat(400))]);
    expect(streaming.querySelector(".ac-progress")).toBeNull();
    expect(q(streaming, ".ac-tokens").textContent).toContain("out 0 + ~100 streaming");
    expect(q(streaming, ".ac-turn-cost").textContent).toBe("turn $0 + ~$0.0015");
    expect(q(streaming, ".ac-elapsed").textContent).toMatch(/\d/);
    const done = paint([context(), running(), live, requestStart(), message("m", "hi"), usageEnd({ output_tokens: 3, list_cost: "0.01" }), idle()]);
    expect(q(done, ".ac-tokens").textContent).toContain("out 3 ·");
    expect(q(done, ".ac-elapsed").textContent).toBe("5.0 s");
  });

  it("says when the budget shortened the reply", () => {
    const root = paint([context(), running(), requestStart({ max_tokens: 512, budget_shortened_from: 4096 }), start("m")]);
    expect(q(root, ".ac-progress").textContent).toBe("the budget shortened this reply (at most 512 of 4,096 tokens)…");
  });

  it("reads a retry as 'retrying (2 of 3)…' in a neutral style", () => {
    const root = paint([
      running(),
      { type: "session.error", id: "e", error: { type: "model_overloaded_error", message: "busy", retry_status: "retrying", attempt: 1, max_attempts: 3 } },
    ]);
    expect(q(root, ".ac-retrying").textContent).toBe("The provider is overloaded; retrying (2 of 3)…");
    expect(q(root, ".ac-retrying").getAttribute("role")).toBe("status");
    const retried = paint(turnsOf("retry")[0] ?? []);
    expect(retried.querySelector(".ac-error-block")).toBeNull();
    expect(q(retried, ".ac-retrying").textContent).toMatch(/retrying \(2( of \d)?\)…$/);
  });

  it("shows how much of the context window the conversation uses while the turn runs", () => {
    const live = { type: "widget.live", approvals: true };
    const gauge = (items: Item[]): string => q(paint(items), ".ac-window").textContent ?? "";
    // As the turn starts: the session's latest request, from the kernel's live-only item.
    const opening = [context(), { type: "widget.window", tokens: 150_000, size: 200_000 }, running(), live, requestStart({ context_window: 200_000 })];
    expect(gauge(opening)).toBe("window 75% of 200k · ");
    // A request of this turn ended (the turn still runs: tool calls follow): its input and output.
    const answered = [...opening, usageEnd({ input_tokens: 120_000, cache_read_input_tokens: 50_000, output_tokens: 10_000 })];
    expect(gauge(answered)).toBe("window 90% of 200k · ");
    // A compaction in the turn leaves the conversation at its tokens_after, before the next request ends.
    const compacted = { type: "session.context_compacted", id: "c", trigger: "threshold", window: 200_000, tokens_before: 180_000, tokens_after: 20_000, summary: "S" };
    expect(gauge([...answered, compacted])).toBe("window 10% of 200k · ");
    // A small window reads in full; an unknown one shows no gauge.
    expect(gauge([context(), running(), requestStart({ context_window: 4000 }), usageEnd({ input_tokens: 3000, output_tokens: 200 })])).toBe("window 80% of 4,000 · ");
    expect(paint([context(), running(), requestStart(), usageEnd({ input_tokens: 3000 })]).querySelector(".ac-window")).toBeNull();
    // A thread's request fills the thread's own window, not the conversation's.
    const thread = { ...usageEnd({ input_tokens: 1000, output_tokens: 5 }), thread_id: "sthr_1" };
    expect(gauge([...answered, thread])).toBe("window 90% of 200k · ");
  });

  it("says 'cost unknown' for a model without a list price, never $0", () => {
    const root = paint([
      context(),
      usageEnd({ input_tokens: 10, output_tokens: 5, unpriced_requests: 1 }),
      { type: "session.usage", id: "u", usage: { input_tokens: 10, unpriced_requests: 1 } },
    ]);
    expect(q(root, ".ac-turn-cost").textContent).toBe("turn cost unknown");
    expect(q(root, ".ac-session-cost").textContent).toBe(" · session cost unknown");
    const part = paint([context(), usageEnd({ list_cost: "0.01" }), usageEnd({ unpriced_requests: 1 })]);
    expect(q(part, ".ac-turn-cost").textContent).toBe("turn cost unknown beyond $0.01");
  });
});
