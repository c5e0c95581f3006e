/**
 * A finished turn's MIME bundle (`application/vnd.agentcell.turn+json`) as the items the widget's fold
 * reads. The kernel writes the widget's context, the approval requests it showed and the turn's durable
 * events once each; this puts them back in the order the live view received them, so the saved turn folds
 * to the same state the live widget ended in.
 */

import type { Item } from "../types";

export const TURN_MIMETYPE = "application/vnd.agentcell.turn+json";

export const STALE_NOTE = "an earlier cell was re-run: run this cell again to bring it back";

export interface TurnBundle {
  context?: Item | null;
  approvals?: Item[];
  events?: Item[];
  stale?: boolean;
  /** Set on a stale mark the kernel sends without the turn's events (it did not show the turn: a restart). */
  opening?: string;
}

/** The bundle as widget items: context first, each approval request right after the call it asked about. */
export function bundleItems(bundle: TurnBundle): Item[] {
  const approvals = new Map<string, Item[]>();
  for (const approval of bundle.approvals ?? []) {
    const id = String(approval.tool_use_id ?? "");
    approvals.set(id, [...(approvals.get(id) ?? []), approval]);
  }
  const items: Item[] = bundle.context ? [bundle.context] : [];
  for (const event of bundle.events ?? []) {
    items.push(event);
    const asked = approvals.get(String(event.id ?? ""));
    if (asked) {
      items.push(...asked);
      approvals.delete(String(event.id));
    }
  }
  for (const rest of approvals.values()) items.push(...rest);
  return items;
}

export function isTurnBundle(value: unknown): value is TurnBundle {
  return value !== null && typeof value === "object" && Array.isArray((value as TurnBundle).events);
}

/** The id of the event that opened the turn (`user.message`, or `user.define_outcome` for an outcome): the
 * kernel derives the turn's display id from it (render/displays.py). */
export function openingEventId(bundle: TurnBundle): string | null {
  const openers = ["user.message", "user.define_outcome", "user.start_workflow_run"];
  const opens = (e: Item) => openers.includes(String(e.type)) && !e.thread_id && e.steered !== true;
  const opening = (bundle.events ?? []).find(opens);
  return opening?.id ?? null;
}

/** A tool's image as the HTML fallback writes it (render/fallback_html.py, `_output_html`). */
const SHARED_IMAGE = /<img src="data:[^;"]+;base64,([A-Za-z0-9+/=\s]*)" alt="tool output image" data-image="([^"]*)">/g;

/**
 * The bundle with each tool result's image back in its event: the kernel keeps one copy of an image, in the
 * bundle's HTML fallback, and leaves the event's `source` with `data: ""` and `in: "text/html"`
 * (render/renderer.py, `_images_once`). `html` is the output's `text/html`, a string or lines.
 */
export function withImages(bundle: TurnBundle, html: unknown): TurnBundle {
  const text = Array.isArray(html) ? html.join("") : typeof html === "string" ? html : "";
  if (!text.includes("data-image=")) return bundle;
  const images = new Map<string, string>();
  for (const match of text.matchAll(SHARED_IMAGE)) images.set(match[2] ?? "", match[1] ?? "");
  const events = (bundle.events ?? []).map((event) => {
    if (event.type !== "agent.tool_result" || !Array.isArray(event.content)) return event;
    const content = (event.content as Record<string, unknown>[]).map((block, index) => {
      const source = block.source as Record<string, unknown> | undefined;
      const data = source?.in === "text/html" ? images.get(`${String(event.tool_use_id)}/${index}`) : undefined;
      if (data === undefined) return block;
      return { ...block, source: { type: source?.type, media_type: source?.media_type, data } };
    });
    return { ...event, content };
  });
  return { ...bundle, events };
}
