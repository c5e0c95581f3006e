/**
 * Cell magics get their body's language: `%%python` cells are Python, `%%workflow` plans YAML, `%%outcome`
 * cells plain text (`cellMimetype`). The editor switches while the first line says so, and back to the
 * notebook's language (Markdown for agentcell prose) when it stops saying so. The notebook resets every
 * code cell's language when its kernel's language arrives, so a reset is undone for these cells.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import type { ICellModel } from "@jupyterlab/cells";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { cellMimetype } from "./cell_language";

function follow(panel: NotebookPanel): void {
  const watched = new WeakSet<ICellModel>();
  const apply = (model: ICellModel): void => {
    if (model.type !== "code") return;
    const wanted = cellMimetype(model.sharedModel.getSource()) ?? panel.content.codeMimetype;
    if (model.mimeType !== wanted) model.mimeType = wanted;
  };
  const watch = (model: ICellModel): void => {
    if (watched.has(model)) return;
    watched.add(model);
    model.contentChanged.connect(() => apply(model));
    model.mimeTypeChanged.connect(() => apply(model));
    apply(model);
  };
  const watchAll = (): void => {
    const cells = panel.content.model?.cells;
    if (!cells) return;
    for (let i = 0; i < cells.length; i++) watch(cells.get(i));
  };
  panel.content.modelContentChanged.connect(watchAll);
  void panel.context.ready.then(watchAll);
}

export const pythonCellsPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:python-cells",
  description: "The body's language for %%python, %%workflow and %%outcome cells.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
