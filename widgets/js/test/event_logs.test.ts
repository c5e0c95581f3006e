// @vitest-environment node
/**
 * The widget's fold over real event logs: the files `tests/fixtures/make_event_logs.py` records from engine
 * turns on the scripted provider, with the statuses the Python fold (the static fallbacks) showed after each
 * item. The widget must show the same ones: this is the parity test between the widget and the fallbacks
 * (`tests/render/test_event_logs.py` holds the Python side to the same files).
 */

import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { apply, fold, foldedTypes } from "../src/fold";
import { emptyState } from "../src/state";
import { contextLine } from "../src/view/cost";
import { type Statuses, statusesOf } from "../src/status";
import type { Item } from "../src/types";

interface EventLog {
  name: string;
  turns: Item[][];
  outside_turns: Item[];
  statuses: [number, Statuses][][];
  context_lines: (string | null)[];
}

const DIR = fileURLToPath(new URL("../../../tests/fixtures/event_logs/", import.meta.url));
const LOGS: EventLog[] = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(DIR + f, "utf-8")) as EventLog);

/** Engine events the widget has nothing to show for, and why. */
const NOT_SHOWN: Record<string, string> = {
  "system.message": "the grader's feedback to the agent; the outcome panel shows the verdict it carries",
  "session.status_terminated": "comes after the last turn, never inside one",
  "session.turns_superseded": "earlier turns leaving the conversation's active path, not the turn shown",
  "user.start_workflow_run": "opens a workflow run's turn; the run's progress view shows what it started",
  "user.permission_revoked": "comes between turns (%permissions revoke); %permissions lists the rules in force",
};

function statusChanges(items: Item[]): [number, Statuses][] {
  const state = emptyState();
  const changes: [number, Statuses][] = [];
  items.forEach((item, index) => {
    apply(state, item);
    const now = statusesOf(state);
    const last = changes[changes.length - 1];
    if (!last || JSON.stringify(last[1]) !== JSON.stringify(now)) changes.push([index, now]);
  });
  return changes;
}

describe("event logs recorded from the engine", () => {
  it("say the context each turn carried as the fallbacks do", () => {
    const said = LOGS.flatMap((log) =>
      log.turns.map((items, turn) => {
        const state = emptyState();
        for (const item of items) apply(state, item);
        // The meter's line leaves out what the notebook sent (the turn view's "notebook:" line says it).
        const python = log.context_lines[turn] ?? null;
        const notebook = python && / · notebook: ([^·]+) ·/.exec(python);
        const widget = contextLine(state.contextTurns, state.contextTokens);
        const withNotebook = notebook && widget ? widget.replace(" · ", ` · notebook: ${state.notebook?.summary ?? "?"} · `) : widget;
        return [`${log.name} ${turn}`, withNotebook, python];
      }),
    );
    expect(said.filter(([, widget, python]) => widget !== python)).toEqual([]);
    expect(said.some(([, widget]) => typeof widget === "string" && widget.includes("turn above"))).toBe(true);
  });

  it("are there", () => {
    expect(LOGS.map((l) => l.name)).toContain("refusals");
    expect(LOGS.length).toBeGreaterThanOrEqual(9);
  });

  for (const log of LOGS) {
    it(`${log.name}: the widget shows the statuses the fallbacks show, item by item`, () => {
      log.turns.forEach((items, turn) => {
        expect(statusChanges(items), `turn ${turn}`).toEqual(log.statuses[turn]);
      });
    });
  }

  it("hold every item type the fold reads, and the fold reads every one they hold", () => {
    const seen = new Set(LOGS.flatMap((l) => [...l.turns.flat(), ...l.outside_turns].map((i) => i.type)));
    const folded = foldedTypes();
    // The kernel's renderer adds widget.* items; everything else must be something the engine sends.
    const neverSent = folded.filter((t) => !t.startsWith("widget.") && !seen.has(t));
    expect(neverSent).toEqual([]);
    const unread = [...seen].filter((t) => !folded.includes(t) && !(t in NOT_SHOWN));
    expect(unread).toEqual([]);
  });

  it("fold a refused call as denied whoever refused it, and say when nobody was asked", () => {
    const refusals = LOGS.find((l) => l.name === "refusals");
    if (!refusals) throw new Error("refusals.json missing");
    const deniedBy = refusals.turns.map((items) => {
      const state = fold(items);
      return [...state.blocks.values()].flatMap((b) => (b.kind === "tool" ? [b.deniedBy] : []));
    });
    expect(deniedBy).toEqual([["guard"], ["preset"], [null, "user"], ["no-approver"], ["no-view"], ["approver"]]);
    const afterPresetChange = fold(refusals.turns[1] ?? []);
    expect(afterPresetChange.context).toBeNull(); // no widget.context in an engine log
  });

  it("stream a message of two text blocks into one block, as the buffered message reads", () => {
    const items = LOGS.find((l) => l.name === "text_and_thinking")?.turns[0] ?? [];
    const whole = "Hello! How can I help with your notebook today? Ask me about your data.";
    const streamed = fold(items.filter((i) => i.type !== "agent.message"));
    const done = fold(items);
    for (const state of [streamed, done]) {
      const messages = [...state.blocks.values()].filter((b) => b.kind === "message");
      expect(messages.map((b) => (b.kind === "message" ? b.text : ""))).toEqual([whole]);
    }
  });

  it("fold a provider's own tool as a card answered by its result, before the text that followed it", () => {
    const state = fold(LOGS.find((l) => l.name === "server_tools")?.turns[0] ?? []);
    const kinds = state.order.map((id) => state.blocks.get(id)?.kind);
    expect(kinds).toEqual(["tool", "message"]);
    const [search] = [...state.blocks.values()].filter((b) => b.kind === "tool");
    expect(search).toMatchObject({ name: "web_search", server: true, answered: true, input: { query: "population of Lyon" } });
  });

  it("fold a retried request to its retry, an interrupted message to what streamed", () => {
    const retry = fold(LOGS.find((l) => l.name === "retry")?.turns[0] ?? []);
    const texts = retry.order.map((id) => retry.blocks.get(id)).flatMap((b) => (b?.kind === "message" ? [b.text] : []));
    expect(texts).toEqual(["The answer is 42."]);
    const interrupted = fold(LOGS.find((l) => l.name === "interrupt")?.turns[0] ?? []);
    const message = [...interrupted.blocks.values()].find((b) => b.kind === "message");
    expect(message).toMatchObject({ interrupted: true, streaming: false });
    expect(interrupted.interruptRequested).toBe(true);
  });

  it("fold steered guidance as a note, and say when no request took it", () => {
    const steer = LOGS.find((l) => l.name === "steer");
    const notes = (steer?.turns ?? []).map((items) => {
      const state = fold(items);
      return { prompt: state.prompt, notes: [...state.blocks.values()].flatMap((b) => (b.kind === "note" ? [b.text] : [])) };
    });
    expect(notes).toEqual([
      { prompt: "Measure it", notes: ["Steer delivered: use the median, not the mean"] },
      { prompt: "Now dawdle", notes: ["Steer not delivered (the turn ended before the next step): hurry up"] },
    ]);
  });

  it("fold a thread under its own id with its events, and an outcome with its verdicts", () => {
    const threads = fold(LOGS.find((l) => l.name === "threads")?.turns[0] ?? []);
    const [thread] = [...threads.threads.values()];
    expect(thread).toMatchObject({ title: "counter", status: "end_turn" });
    expect(thread?.order.map((id) => threads.blocks.get(id)?.kind)).toEqual(["note", "tool", "message", "note"]);
    const outcome = [...fold(LOGS.find((l) => l.name === "outcome")?.turns[0] ?? []).outcomes.values()][0];
    expect(outcome).toMatchObject({ status: "satisfied", iteration: 1, maxIterations: 3 });
    expect(outcome?.iterations.map((it) => [it.n, it.result])).toEqual([
      [0, "needs_revision"],
      [1, "satisfied"],
    ]);
    expect(outcome?.iterations[1]?.revision).toContain("the year lets them go");
  });
});
