/**
 * An empty cell of an agentcell notebook says what it is for ("Ask the agent…"), where JupyterLab shows an
 * empty editor. The notebook panel is marked while its kernel is agentcell's; `placeholder.css` draws the hint on the
 * editor's only, empty line, so it disappears with the first character and never reaches the cell's source.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import css from "./placeholder.css";
import { injectStyle } from "../inject_style";

export const AGENTCELL_NOTEBOOK = "agentcell-notebook";

function follow(panel: NotebookPanel): void {
  const mark = (): void => {
    const kernel = panel.sessionContext.session?.kernel?.name ?? panel.sessionContext.kernelPreference.name;
    panel.node.classList.toggle(AGENTCELL_NOTEBOOK, kernel === "agentcell");
  };
  panel.sessionContext.kernelChanged.connect(mark);
  panel.sessionContext.sessionChanged.connect(mark);
  void panel.sessionContext.ready.then(mark);
  mark();
}

export const placeholderPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:placeholder",
  description: "'Ask the agent…' in the empty cells of agentcell notebooks.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    injectStyle("notebook", css);
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
