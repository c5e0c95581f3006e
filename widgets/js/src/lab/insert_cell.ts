/**
 * "Insert below" in a turn's code block: the view asks the page with a bubbling `agentcell:insert-cell`
 * event ({ source }) because it cannot reach the notebook (view/turn.ts). This answers it in JupyterLab and
 * Notebook 7: a new cell below the one whose output holds the button, with the block's source (a `%%python`
 * cell for Python code, a prose cell otherwise), made the active cell. preventDefault tells the view the cell
 * was inserted, so it does not fall back to copying.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { cellOf } from "./cell_of";

export const INSERT_CELL_EVENT = "agentcell:insert-cell";

function insertBelow(panel: NotebookPanel, event: Event): void {
  const source = (event as CustomEvent<{ source?: unknown }>).detail?.source;
  const notebook = panel.content;
  const model = notebook.model;
  const cell = cellOf(notebook, event.target);
  if (typeof source !== "string" || !model || !cell || model.readOnly) return;
  const index = notebook.widgets.indexOf(cell) + 1;
  model.sharedModel.insertCell(index, { cell_type: "code", source });
  notebook.activeCellIndex = index;
  void notebook.scrollToItem(index, "smart");
  event.preventDefault();
}

function follow(panel: NotebookPanel): void {
  panel.node.addEventListener(INSERT_CELL_EVENT, (event) => insertBelow(panel, event));
}

export const insertCellPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:insert-cell",
  description: "'Insert below' in an agent turn's code blocks adds the code as a new cell.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
