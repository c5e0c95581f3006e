import type { AnyModel } from "@anywidget/types";
import { beforeEach, describe, expect, it, vi } from "vitest";
import widget from "../src/widget";
import type { Item } from "../src/types";
import { context, delta, idle, message, resetClock, running, start } from "./items";

beforeEach(resetClock);

/** The part of an anywidget model the entry uses: traits, change events, custom messages both ways. */
class FakeModel {
  sent: unknown[] = [];
  private handlers = new Map<string, ((...args: unknown[]) => void)[]>();
  constructor(private items: Item[]) {}
  get(key: string): unknown {
    return key === "items" ? this.items : undefined;
  }
  set(key: string, value: unknown): void {
    if (key !== "items") return;
    this.items = value as Item[];
    this.emit("change:items");
  }
  on(event: string, handler: (...args: unknown[]) => void): void {
    this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler]);
  }
  off(): void {}
  save_changes(): void {}
  send(content: unknown): void {
    this.sent.push(content);
  }
  emit(event: string, ...args: unknown[]): void {
    for (const handler of this.handlers.get(event) ?? []) handler(...args);
  }
  batch(start: number, items: Item[]): void {
    this.emit("msg:custom", { type: "items", start, items });
  }
  widget_manager = { get_model: () => Promise.reject(new Error("unused")) };
}

async function mount(model: FakeModel): Promise<HTMLElement> {
  const el = document.createElement("div");
  const props = { model: model as unknown as AnyModel<{ items: Item[] }>, el, signal: new AbortController().signal };
  await widget.initialize?.(props as never);
  await widget.render?.({ ...props, host: {} as never, experimental: {} as never });
  return el;
}

const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(null)));

describe("the anywidget entry", () => {
  it("says hello with what it has, folds batches in order, once each", async () => {
    const model = new FakeModel([context()]);
    const el = await mount(model);
    expect(model.sent).toEqual([{ type: "hello", from: 1 }]);
    model.batch(1, [running(), start("m1"), delta("m1", "Hello")]);
    model.batch(1, [running(), start("m1"), delta("m1", "Hello")]); // a repeat (a second view's hello) is skipped
    model.batch(4, [delta("m1", " there")]);
    await frame();
    expect(el.querySelector(".ac-message")?.textContent?.trim()).toBe("Hello there");
  });

  it("asks again from what it has when a batch skips ahead", async () => {
    const model = new FakeModel([context()]);
    await mount(model);
    model.sent = [];
    model.batch(5, [delta("m1", "x")]);
    model.batch(6, [delta("m1", "y")]); // still missing: it does not ask twice
    expect(model.sent).toEqual([{ type: "hello", from: 1 }]);
  });

  it("replaces the live state with the final state, which alone renders a saved turn", async () => {
    const model = new FakeModel([context()]);
    const el = await mount(model);
    model.batch(1, [running(), start("m1"), delta("m1", "draft")]);
    model.set("items", [context(), running(), message("m1", "**final** text"), idle()]);
    await frame();
    expect(el.querySelector(".ac-message strong")?.textContent).toBe("final");
    expect(el.querySelector(".ac-turn-status")?.textContent).toBe("done");

    const saved = new FakeModel([context(), running(), message("m1", "**final** text"), idle()]);
    const again = await mount(saved);
    expect(saved.sent).toEqual([]); // a finished turn has nothing to ask the kernel
    expect(again.querySelector(".ac-message strong")?.textContent).toBe("final");
  });

  it("sends clicks as custom messages, never through traits", async () => {
    const model = new FakeModel([context()]);
    const setSpy = vi.spyOn(model, "set");
    const el = await mount(model);
    model.batch(1, [running(), { type: "widget.live", approvals: true }]);
    await frame();
    (el.querySelector(".ac-stop") as HTMLButtonElement).click();
    expect(model.sent.at(-1)).toEqual({ type: "stop" });
    expect(setSpy).not.toHaveBeenCalled();
  });
});
