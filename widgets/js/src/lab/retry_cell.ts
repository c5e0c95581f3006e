/**
 * Retry on a failed turn (view/header.ts): the view asks with a bubbling `agentcell:retry` event because it
 * cannot reach the notebook; this runs the cell whose output holds it, as Shift+Enter on that cell would (a
 * re-run cell supersedes its earlier turn: engine/path.py), in JupyterLab and Notebook 7. The body's
 * `data-agentcell-retry` tells the views that Retry has someone to answer it.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker, NotebookActions, type NotebookPanel } from "@jupyterlab/notebook";
import { RETRY_EVENT, RETRY_FLAG } from "../view/header";
import { cellOf } from "./cell_of";

function retry(panel: NotebookPanel, event: Event): void {
  const notebook = panel.content;
  const cell = cellOf(notebook, event.target);
  if (!cell || !notebook.model || notebook.model.readOnly) return;
  event.preventDefault();
  notebook.activeCellIndex = notebook.widgets.indexOf(cell);
  notebook.deselectAll();
  void NotebookActions.run(notebook, panel.sessionContext);
}

function follow(panel: NotebookPanel): void {
  panel.node.addEventListener(RETRY_EVENT, (event) => retry(panel, event));
}

export const retryCellPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:retry-cell",
  description: "Retry on a failed agent turn runs its cell again.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    document.body.dataset[RETRY_FLAG] = "true";
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
