/**
 * The anywidget entry. `initialize` (once per model) keeps the turn's store and listens for batches, so
 * nothing is lost before a view exists; `render` (once per view) paints the store and announces itself
 * with `hello`: the kernel offers approvals and Stop only once a view has said so during the turn.
 * Browser → kernel traffic is custom messages only (`model.send`): synced traits would be lost during a
 * running cell on ipykernel 7.4 (shared/reference/kernel-mechanics.md §2).
 *
 * A page gets this code once, from the lab extension or from the kernel (`turn_part.ts`), through the small
 * loader each turn's widget carries (`loader.ts`).
 */

import type { AnyModel, InitializeProps, RenderProps } from "@anywidget/types";
import { TurnStore } from "./store";
import type { Item, ItemsMessage, OutgoingMessage } from "./types";
import { TurnView } from "./view/turn";

interface TurnModel {
  items: Item[];
}

const stores = new WeakMap<AnyModel<TurnModel>, TurnStore>();

function storeFor(model: AnyModel<TurnModel>): TurnStore {
  let store = stores.get(model);
  if (!store) {
    const created = new TurnStore();
    store = created;
    stores.set(model, created);
    created.load(model.get("items") ?? []);
    model.on("change:items", () => created.load(model.get("items") ?? []));
    let asking = false;
    model.on("msg:custom", (message: unknown) => {
      if (!isItemsMessage(message)) return;
      if (created.receive(message)) {
        asking = false;
      } else if (!asking) {
        // Batches went out before this model listened: ask for the log from what we have.
        asking = true;
        send(model, { type: "hello", from: created.received });
      }
    });
  }
  return store;
}

const HELLO_RETRY_MS = 2000;

function send(model: AnyModel<TurnModel>, message: OutgoingMessage): void {
  model.send(message);
}

function isItemsMessage(value: unknown): value is ItemsMessage {
  const m = value as Partial<ItemsMessage> | null;
  return m !== null && typeof m === "object" && m.type === "items" && typeof m.start === "number" && Array.isArray(m.items);
}

function initialize({ model }: InitializeProps<TurnModel>): void {
  storeFor(model);
}

function render({ model, el }: RenderProps<TurnModel>): () => void {
  const store = storeFor(model);
  const view = new TurnView(el, (message) => send(model, message));
  let frame = 0;
  const paint = () => {
    frame = 0;
    view.paint(store.state);
  };
  // Paint at most once a frame however many batches arrive.
  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(paint);
  };
  const unsubscribe = store.subscribe(schedule);
  view.paint(store.state);
  let retry: ReturnType<typeof setTimeout> | undefined;
  const announce = (tries: number): void => {
    send(model, { type: "hello", from: store.received });
    // A hello can be lost on its way in (seen on ipykernel 7.3 with comms over subshells); the kernel takes
    // a repeat as a resync, so say it again until the turn goes live or ends.
    retry = setTimeout(() => {
      if (!store.final && !store.state.live && tries > 1) announce(tries - 1);
    }, HELLO_RETRY_MS);
  };
  if (!store.final) announce(3);
  return () => {
    unsubscribe();
    view.dispose();
    if (frame) cancelAnimationFrame(frame);
    if (retry) clearTimeout(retry);
  };
}

export default { initialize, render };
