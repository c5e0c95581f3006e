/**
 * Gives every agentcell notebook an id of its own in its metadata (`metadata.agentcell.notebook_id`). The
 * kernel maps that id to the notebook's session (kernel/notebook_id.py), so renaming or moving the
 * notebook keeps its agent, its model and its history; without it the session follows only the path. A
 * copy of the file keeps the id, and so continues the same session.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { UUID } from "@lumino/coreutils";

export const METADATA_KEY = "agentcell";

async function isAgentCell(panel: NotebookPanel): Promise<boolean> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) return false;
  const info = await kernel.info;
  return info.implementation === "agentcell";
}

async function ensureId(panel: NotebookPanel): Promise<void> {
  const model = panel.content.model;
  const kernel = panel.sessionContext.session?.kernel;
  if (!model || !kernel || !(await isAgentCell(panel))) return;
  const section = (model.getMetadata(METADATA_KEY) ?? {}) as Record<string, unknown>;
  let id = section.notebook_id;
  if (typeof id !== "string" || !id) {
    id = UUID.uuid4();
    model.setMetadata(METADATA_KEY, { ...section, notebook_id: id });
  }
  // Tell the kernel before the user's first cell (execute requests run in order), silently: no output, no
  // execution count. The kernel also reads the id from the saved file, for front ends without this plugin.
  const code = `%%python\n__agentcell__.adopt_notebook_id(${JSON.stringify(id)})`;
  await kernel.requestExecute({ code, silent: true, store_history: false }).done;
}

function follow(panel: NotebookPanel): void {
  const check = (): void => void ensureId(panel).catch(() => undefined);
  panel.sessionContext.kernelChanged.connect(check);
  void panel.sessionContext.ready.then(check);
}

export const notebookIdPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:notebook-id",
  description: "Keeps an agentcell notebook's id in its metadata, so its session survives a rename.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
