/**
 * The JupyterLab / Notebook 7 renderer of a saved turn: the bundle the kernel leaves folds and paints as
 * the live widget ended, over every recorded event log (previews and all streamed to the live view; only
 * durable events, the context and approval requests in the bundle).
 */

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { STALE_NOTE, bundleItems, isTurnBundle, withImages } from "../src/lab/bundle";
import { PYTHON_MIMETYPE, cellMimetype } from "../src/lab/cell_language";
import { renderTurn } from "../src/lab/render";
import { TurnStore } from "../src/store";
import type { Item } from "../src/types";
import { TurnView } from "../src/view/turn";
import { context } from "./items";

// jsdom replaces URL: resolve the folder from this file's path instead.
const DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "fixtures", "event_logs") + "/";
const LOGS = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(DIR + f, "utf-8")) as { name: string; turns: Item[][] });

/** What the live widget shows at the end: every item streamed in batches, then painted. */
function liveText(items: Item[]): string {
  const store = new TurnStore();
  store.load([items[0] as Item]);
  store.receive({ type: "items", start: 1, items: items.slice(1) });
  const root = document.createElement("div");
  new TurnView(root, () => undefined).paint(store.state);
  return root.textContent ?? "";
}

describe("the saved turn renderer", () => {
  for (const log of LOGS) {
    it(`${log.name}: a saved turn reads as the live widget ended`, () => {
      for (const turn of log.turns) {
        const ctx = context();
        const events = turn.filter((item) => !item.type.startsWith("event_"));
        const root = document.createElement("div");
        renderTurn(root, { context: ctx, events });
        expect(root.textContent).toEqual(liveText([ctx, ...turn]));
        // Nothing that would talk to a kernel: no Stop, no Allow/Deny, no steer box; only Copy and a proposed
        // cell's answers, which ask the page (the extension applies them; a saved proposal stays answerable).
        const buttons = [...root.querySelectorAll("button")].map((b) => b.textContent);
        const page = ["Copy", "Accept", "Accept & run", "Reject"];
        expect(buttons.filter((label) => !page.includes(label ?? ""))).toEqual([]);
        expect(root.querySelector("textarea, input")).toBeNull();
      }
    });
  }

  it("puts each approval request right after the call it asked about", () => {
    const call = { type: "agent.tool_use", id: "t1", name: "bash", input: {} };
    const asked = { type: "widget.approval_request", tool_use_id: "t1", reason: "bash wants to run", preset: "default" };
    const items = bundleItems({ context: context(), events: [{ type: "user.message", id: "u1" }, call, { type: "agent.tool_result", id: "r1", tool_use_id: "t1" }], approvals: [asked] });
    expect(items.map((i) => i.type)).toEqual(["widget.context", "user.message", "agent.tool_use", "widget.approval_request", "agent.tool_result"]);
  });

  it("says a superseded turn is stale, and only then", () => {
    const events = LOGS[0]?.turns[0]?.filter((item) => !item.type.startsWith("event_")) ?? [];
    const fresh = document.createElement("div");
    renderTurn(fresh, { events });
    expect(fresh.querySelector(".ac-stale")).toBeNull();
    const stale = document.createElement("div");
    renderTurn(stale, { events, stale: true });
    expect(stale.querySelector(".ac-stale")?.textContent).toBe(`Stale: ${STALE_NOTE}`);
    expect(stale.querySelector(".agentcell-turn")?.classList.contains("ac-stale-turn")).toBe(true);
  });

  it("takes only bundles that carry events", () => {
    expect(isTurnBundle({ events: [] })).toBe(true);
    expect(isTurnBundle({ items: [] })).toBe(false);
    expect(isTurnBundle(null)).toBe(false);
  });
});

describe("a saved turn's images", () => {
  it("come back from the HTML fallback, which holds the bundle's one copy", () => {
    const png = "iVBORw0KGgoAAAANSUhEUg==";
    const shared = { type: "base64", media_type: "image/png", data: "", in: "text/html" };
    const result: Item = {
      type: "agent.tool_result",
      id: "r",
      tool_use_id: "toolu_1",
      content: [{ type: "text", text: "<Figure>" }, { type: "image", source: shared }],
    };
    const html = `<p>x</p><img src="data:image/png;base64,${png}" alt="tool output image" data-image="toolu_1/1">`;
    const back = withImages({ events: [result] }, [html.slice(0, 20), html.slice(20)]);
    const content = back.events?.[0]?.content as { source?: Record<string, unknown> }[];
    expect(content[1]?.source).toEqual({ type: "base64", media_type: "image/png", data: png });
    expect(content[0]).toEqual({ type: "text", text: "<Figure>" });
    const call: Item = { type: "agent.tool_use", id: "toolu_1", name: "python", input: { code: "plot()" } };
    const view = renderTurn(document.createElement("div"), { events: [call, ...(back.events ?? [])] });
    expect(view.el.querySelector("img.ac-image")?.getAttribute("src")).toBe(`data:image/png;base64,${png}`);
    // Without the HTML, nothing to take: the bundle is as it was.
    const bundle = { events: [result] };
    expect(withImages(bundle, undefined)).toBe(bundle);
  });
});

describe("cell magics' languages", () => {
  it("are Python while their first line's first word is %%python", () => {
    expect(cellMimetype("%%python\nxs = [1, 2]")).toBe(PYTHON_MIMETYPE);
    expect(cellMimetype("  %%python  \nx")).toBe(PYTHON_MIMETYPE);
    expect(cellMimetype("%%python")).toBe(PYTHON_MIMETYPE);
    expect(cellMimetype("%%pythonic\nx")).toBeNull();
    expect(cellMimetype("Explain %%python\nplease")).toBeNull();
    expect(cellMimetype("Plot [1, 2]")).toBeNull();
  });

  it("are YAML for a %%workflow plan and plain text for an %%outcome, prose otherwise", () => {
    expect(cellMimetype("%%workflow topic=sea\nsteps:\n  - for_each: [fish, waves]")).toBe("text/x-yaml");
    expect(cellMimetype("%%outcome max_iterations=2\nWrite a sentence.\n---\nOne sentence.")).toBe("text/plain");
    expect(cellMimetype("Write a sentence.\n---\nOne sentence.")).toBeNull();
  });
});
