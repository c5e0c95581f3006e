/** Which language a code cell's editor should use, by the kernel's routing rule (kernel/routing.py). */

export const PYTHON_MIMETYPE = "text/x-ipython";

/**
 * The editor language of a cell whose first line's first word is one of these cell magics, whose bodies
 * are not agentcell prose (Markdown): `%%python` runs Python; a `%%workflow` plan is YAML (as Markdown its
 * `[a, b]` lists read as links); an `%%outcome` is a task, `---`, then a rubric (as Markdown the task reads
 * as a heading over the `---`).
 */
const CELL_MAGIC_LANGUAGES: Record<string, string> = {
  "%%python": PYTHON_MIMETYPE,
  "%%workflow": "text/x-yaml",
  "%%outcome": "text/plain",
};

function firstWord(source: string): string {
  const first = source.split("\n", 1)[0] ?? "";
  return first.trim().split(/\s+/, 1)[0] ?? "";
}

/** The mimetype a cell's editor should use for its cell magic, or null for the notebook's own language. */
export function cellMimetype(source: string): string | null {
  return CELL_MAGIC_LANGUAGES[firstWord(source)] ?? null;
}
