/** The notebook cell whose node holds an element of a turn's view (its output, or the view inside it). */

import type { Cell } from "@jupyterlab/cells";
import type { Notebook } from "@jupyterlab/notebook";

export function cellOf(notebook: Notebook, target: EventTarget | null): Cell | null {
  if (!(target instanceof Node)) return null;
  return notebook.widgets.find((cell) => cell.node.contains(target)) ?? null;
}
