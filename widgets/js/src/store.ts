/**
 * One turn's state per widget model, shared by all its views. The kernel numbers every item of the
 * turn's log; batches carry where they start, so an item is folded exactly once even when batches
 * arrive before a view exists or a view asks again (`hello` with what it has).
 */

import { apply, fold } from "./fold";
import { type TurnState, emptyState } from "./state";
import type { Item, ItemsMessage } from "./types";

export class TurnStore {
  state: TurnState = emptyState();
  /** Items of the kernel's log folded so far. */
  received = 0;
  /** The final state (set once by the kernel at the end of the turn) was loaded: live batches are moot. */
  final = false;
  private readonly listeners = new Set<() => void>();

  /** The `items` trait: the context at the start, the compact final state at the end. */
  load(items: Item[]): void {
    if (isFinal(items)) {
      this.state = fold(items);
      this.final = true;
    } else if (!this.final && this.received === 0) {
      for (const item of items) apply(this.state, item);
      this.received = items.length;
    } else {
      return;
    }
    this.notify();
  }

  /** A live batch; false when items before it are missing (the caller asks the kernel again). */
  receive(message: ItemsMessage): boolean {
    if (this.final) return true;
    if (message.start > this.received) return false;
    const fresh = message.items.slice(this.received - message.start);
    if (!fresh.length) return true;
    for (const item of fresh) apply(this.state, item);
    this.received += fresh.length;
    this.notify();
    return true;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}

function isFinal(items: Item[]): boolean {
  return items.some((item) => item.type === "session.status_idle" && !item.thread_id);
}
