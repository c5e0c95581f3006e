/**
 * A proposed cell in the turn view, from the recorded event log (`cell_proposals`): its code or its diff,
 * buttons that ask the page (`agentcell:proposal`) and by keyboard, and the magic to run where no page answers.
 */

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fold } from "../src/fold";
import type { Item } from "../src/types";
import { PROPOSAL_EVENT, lineDiff } from "../src/view/proposal";
import { TurnView } from "../src/view/turn";

afterEach(() => document.body.replaceChildren());

const DIR = `${resolve(process.cwd(), "../../tests/fixtures/event_logs")}/`;
const log = JSON.parse(readFileSync(`${DIR}cell_proposals.json`, "utf-8")) as { turns: Item[][]; outside_turns: Item[] };

function paint(items: Item[]): HTMLElement {
  const root = document.createElement("div");
  document.body.append(root);
  new TurnView(root, () => undefined).paint(fold(items));
  return root;
}

describe("a proposed cell", () => {
  it("shows a new cell's code and answers through the page when the extension listens", () => {
    const root = paint(log.turns[0] ?? []);
    const card = root.querySelector<HTMLElement>(".ac-proposal");
    expect(card?.textContent).toContain("Proposed 1: a new code cell below the turn");
    expect(card?.querySelector(".ac-proposal-code")?.textContent).toBe("y = x * 2");
    const asked: unknown[] = [];
    root.addEventListener(PROPOSAL_EVENT, (event) => {
      asked.push((event as CustomEvent).detail);
      event.preventDefault();
    });
    card?.querySelector<HTMLButtonElement>(".ac-proposal-run")?.click();
    expect(asked).toMatchObject([{ answer: "run", proposal: { number: 1, source: "y = x * 2" } }]);
    expect(card?.querySelector(".ac-proposal-status")?.textContent).toBe("Accepted; running…");
    expect([...(card?.querySelectorAll("button") ?? [])].every((b) => b.disabled)).toBe(true);
  });

  it("shows an edit as a diff, answers by keyboard, and names the magic where nobody listens", () => {
    const root = paint(log.turns[1] ?? []);
    const card = root.querySelector<HTMLElement>(".ac-proposal");
    const lines = [...(card?.querySelectorAll(".ac-diff-line") ?? [])].map((l) => l.textContent);
    expect(lines).toEqual(["- x = 2", "+ x = 21"]);
    card?.dispatchEvent(new KeyboardEvent("keydown", { key: "x", bubbles: true }));
    expect(card?.querySelector(".ac-proposal-status")?.textContent).toBe("Run %reject 2 in a cell to answer.");
  });

  it("reads the user's answer when it is among the items", () => {
    const state = fold([...(log.turns[1] ?? []), ...log.outside_turns]);
    const proposals = [...state.blocks.values()].filter((b) => b.kind === "proposal");
    expect(proposals.map((p) => p.kind === "proposal" && p.resolution)).toEqual(["rejected"]);
  });

  it("diffs lines by their longest common run", () => {
    expect(lineDiff("a\nb\nc", "a\nc\nd")).toEqual([
      { sign: " ", text: "a" },
      { sign: "-", text: "b" },
      { sign: " ", text: "c" },
      { sign: "+", text: "d" },
    ]);
  });
});

describe("a proposed cell's mark", () => {
  it("carries the proposal on the card for the extension, and reads back from a cell's metadata", async () => {
    const root = paint(log.turns[0] ?? []);
    const card = root.querySelector<HTMLElement>(".ac-proposal");
    const carried = JSON.parse(card?.getAttribute("data-proposal") ?? "{}") as { number?: number; action?: string };
    expect(carried).toMatchObject({ number: 1, action: "insert" });
    const { markOf } = await import("../src/lab/proposed_cells");
    const cell = (metadata: unknown) => ({ id: "c", getSource: () => "", getMetadata: () => metadata, setMetadata: () => undefined });
    expect(markOf(cell({ proposal: { id: 1, status: "pending", source: "x = 1" } }))).toEqual({ id: 1, status: "pending", source: "x = 1" });
    expect(markOf(cell({ proposal: { id: 1, status: "accepted" } }))?.status).toBe("accepted");
    expect(markOf(cell({ proposal: 1 }))).toBeNull(); // what a card-accepted cell carried before marks had a status: not waiting
    expect(markOf(cell(undefined))).toBeNull();
  });
});
