/** The widget's code once per page: the loader's parts come from the page when it has them, else from the
 * kernel through one `code` message, whichever turn asks first. */

import type { AnyModel } from "@anywidget/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { part, provide } from "../src/code_parts";

/** A model whose kernel answers `code` messages as the renderer does: the part's module and CSS as buffers. */
class KernelModel {
  sent: unknown[] = [];
  private handlers: ((message: unknown, buffers?: DataView[]) => void)[] = [];
  constructor(private readonly answers = true) {}
  on(_event: string, handler: (message: unknown, buffers?: DataView[]) => void): void {
    this.handlers.push(handler);
  }
  off(_event: string, handler: (message: unknown, buffers?: DataView[]) => void): void {
    this.handlers = this.handlers.filter((h) => h !== handler);
  }
  send(content: { type: string; part: string }): void {
    this.sent.push(content);
    if (!this.answers) return;
    const buffers = [`module ${content.part}`, `.css-of-${content.part} {}`].map((text) => new DataView(new TextEncoder().encode(text).buffer));
    queueMicrotask(() => {
      for (const handler of [...this.handlers]) handler({ type: "code", part: content.part }, buffers);
    });
  }
  get listeners(): number {
    return this.handlers.length;
  }
}

const asModel = (model: KernelModel) => model as unknown as AnyModel;

afterEach(() => {
  vi.useRealTimers();
});

// Each test is a fresh page.
beforeEach(() => {
  delete (globalThis as unknown as Record<symbol, unknown>)[Symbol.for("agentcell-widgets.parts")];
});

describe("the widget's code parts", () => {
  it("come from the kernel once per page: evaluated once, and no turn asks after they came", async () => {
    const evaluated: string[] = [];
    const evaluate = (js: string) => {
      evaluated.push(js);
      return Promise.resolve({ default: { render: () => undefined }, source: js });
    };
    const first = new KernelModel();
    const second = new KernelModel();
    const [a, b, again] = await Promise.all([
      part("math", asModel(first), { evaluate }),
      part("math", asModel(second), { evaluate }),
      part("math", asModel(first), { evaluate }),
    ]);
    expect(a).toBe(b);
    expect(again).toBe(a);
    expect(first.sent).toEqual([{ type: "code", part: "math" }]); // once per model
    expect(evaluated).toEqual(["module math"]); // the first answer only
    expect(first.listeners).toBe(0);
    const later = new KernelModel();
    await part("math", asModel(later), { evaluate });
    expect(later.sent).toEqual([]);
    expect(evaluated).toHaveLength(1);
  });

  it("reach a later turn when the turn that asked first ended unanswered", async () => {
    const ended = new KernelModel(false); // the kernel drops a closed widget's question
    const evaluate = (js: string) => Promise.resolve({ default: { render: () => undefined }, js });
    const pending = part("turn", asModel(ended), { evaluate });
    const view = new KernelModel(); // the same turn's view, under a proxy of its own: it joins, no second question
    expect(part("turn", asModel(view), { join: true })).toBe(pending);
    expect(view.sent).toEqual([]);
    const next = new KernelModel();
    const loaded = part("turn", asModel(next));
    expect(loaded).toBe(pending);
    expect(next.sent).toEqual([{ type: "code", part: "turn" }]);
    expect(await pending).toMatchObject({ js: "module turn" });
  });

  it("ask again, three times at most, while no answer has come (a question can be lost on its way in)", async () => {
    vi.useFakeTimers();
    const silent = new KernelModel(false);
    void part("turn", asModel(silent));
    expect(silent.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(silent.sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(silent.sent).toHaveLength(3);
  });

  it("use the copy the lab extension provided without asking the kernel", async () => {
    const views = { default: { render: () => undefined } };
    provide("turn", () => Promise.resolve(views));
    const model = new KernelModel();
    expect(await part("turn", asModel(model))).toBe(views);
    expect(model.sent).toEqual([]);
  });
});
