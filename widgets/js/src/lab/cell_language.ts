/** Which language a code cell's editor should use, by the kernel's routing rule (kernel/routing.py). */

export const PYTHON_MIMETYPE = "text/x-ipython";

/** The first line's first word is `%%python`: the kernel runs the cell as Python. */
export function wantsPython(source: string): boolean {
  const first = source.split("\n", 1)[0] ?? "";
  return first.trim().split(/\s+/, 1)[0] === "%%python";
}
