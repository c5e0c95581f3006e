/** The widget's compaction card, as a note: the same heading as the Python renderers'
 * (`render/compaction_card.py`), then the summary the model sees in place of what it covers. */
import { type Item, num } from "./types";

export function compactionNote(item: Item): string {
  const why = item.trigger === "manual" ? "by hand" : "the conversation neared the context window";
  const done: string[] = [];
  const cleared = Array.isArray(item.cleared_tool_results) ? item.cleared_tool_results.length : 0;
  if (cleared) done.push(`${cleared} old tool result${cleared === 1 ? "" : "s"} cleared`);
  const summary = typeof item.summary === "string" ? item.summary : null;
  if (summary !== null) done.push(`summarised by the model${item.kept_from ? ", the latest turn kept verbatim" : ""}`);
  const window = num(item.window) || 1;
  const before = num(item.tokens_before);
  const after = num(item.tokens_after);
  const share = (tokens: number): string => `${Math.round((100 * tokens) / window)}%`;
  const heading =
    `Context compacted (${why}): ${done.join(", ")} · ${before.toLocaleString("en-US")} → ` +
    `${after.toLocaleString("en-US")} tokens (${share(before)} → ${share(after)} of the ` +
    `${window.toLocaleString("en-US")}-token window)`;
  return summary === null ? heading : `${heading}. Summary the model sees: ${summary}`;
}
