/**
 * "Fix with the agent" on a failed `%%python` cell of the agentcell kernel: a button under its traceback that
 * puts a `%fix` cell below it and runs it, a turn with the error as context whose fix comes back as a
 * proposed edit of the failing cell (`kernel/magics/proposals.py`). The button goes when the cell's outputs
 * change (it runs again, or they are cleared).
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import type { CodeCell } from "@jupyterlab/cells";
import { INotebookTracker, NotebookActions, type NotebookPanel } from "@jupyterlab/notebook";

function offerFix(panel: NotebookPanel, cell: CodeCell): void {
  const outputs = cell.model.outputs;
  if (cell.node.querySelector(".ac-fix-error")) return;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "ac-button ac-fix-error";
  button.textContent = "Fix with the agent";
  button.title = "Ask the agent for a fix of this cell, as a proposed edit (%fix)";
  const row = document.createElement("div");
  row.className = "ac-fix-error-row";
  row.append(button);
  const gone = (): void => {
    row.remove();
    outputs.changed.disconnect(gone);
  };
  button.addEventListener("click", () => {
    const notebook = panel.content;
    const model = notebook.model;
    if (!model || model.readOnly) return;
    const index = notebook.widgets.indexOf(cell) + 1;
    model.sharedModel.insertCell(index, { cell_type: "code", source: "%fix" });
    notebook.activeCellIndex = index;
    gone();
    void NotebookActions.run(notebook, panel.sessionContext);
  });
  outputs.changed.connect(gone);
  cell.outputArea.node.append(row);  // under the traceback, in the output area's column
}

export const fixErrorPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:fix-error",
  description: "A failed %%python cell of the agentcell kernel offers 'Fix with the agent' (%fix).",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    NotebookActions.executed.connect((_, { notebook, cell, success }) => {
      const panel = tracker.find((p) => p.content === notebook);
      if (success || !panel || cell.model.type !== "code") return;
      if (panel.sessionContext.session?.kernel?.name !== "agentcell") return;
      if (!/^%%python\b/.test(cell.model.sharedModel.getSource())) return;  // a failed turn is no code to fix
      offerFix(panel, cell as CodeCell);
    });
  },
};
