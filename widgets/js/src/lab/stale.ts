/**
 * Marks a turn stale across the notebook. When an earlier cell is re-run, the kernel updates each
 * superseded turn's display (`update_display_data`, display id `agentcell-turn-<opening event id>`) to its
 * bundle flagged stale. JupyterLab applies a display update only within the cell whose execution sent it,
 * and the superseded turns are in other cells, so this plugin finds the outputs whose bundle opened with
 * that event (a saved output keeps no display id, but its events say which turn it is) and replaces them:
 * the notebook then saves them stale too.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import type { ICodeCellModel } from "@jupyterlab/cells";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import type { Kernel, KernelMessage } from "@jupyterlab/services";
import { STALE_NOTE, TURN_MIMETYPE, type TurnBundle, isTurnBundle, openingEventId } from "./bundle";

const DISPLAY_PREFIX = "agentcell-turn-";

function markStale(panel: NotebookPanel, msg: KernelMessage.IIOPubMessage): void {
  if (msg.header.msg_type !== "update_display_data") return;
  const content = msg.content as KernelMessage.IUpdateDisplayDataMsg["content"];
  const displayId = String((content.transient as { display_id?: unknown } | undefined)?.display_id ?? "");
  const turn = content.data[TURN_MIMETYPE];
  if (!isTurnBundle(turn) || !turn.stale) return;
  // The whole bundle, stale, under the turn's own display id; or, from a kernel started since the turn was
  // shown, only a mark naming it (under a display id of its own).
  const opening = turn.opening ?? (displayId.startsWith(DISPLAY_PREFIX) ? displayId.slice(DISPLAY_PREFIX.length) : "");
  if (!opening) return;
  const cells = panel.content.model?.cells;
  if (!cells) return;
  for (let c = 0; c < cells.length; c++) {
    const cell = cells.get(c);
    if (cell.type !== "code") continue;
    const outputs = (cell as ICodeCellModel).outputs;
    for (let o = 0; o < outputs.length; o++) {
      const output = outputs.get(o);
      const saved = output.data[TURN_MIMETYPE];
      if (!isTurnBundle(saved) || saved.stale || openingEventId(saved) !== opening) continue;
      // A kernel that showed the turn sends its whole bundle, stale; one started since sends only the mark.
      const data = turn.opening ? staleCopy(output.data as Record<string, unknown>, saved) : content.data;
      outputs.set(o, { output_type: "display_data", data: data as never, metadata: content.metadata ?? {} });
    }
  }
}

/** The saved output as the kernel would have marked it (render/displays.py `stale_bundle`). */
function staleCopy(data: Record<string, unknown>, saved: TurnBundle): Record<string, unknown> {
  const text = (value: unknown): string => (Array.isArray(value) ? value.join("") : String(value ?? ""));
  const marked: Record<string, unknown> = { ...data, [TURN_MIMETYPE]: { ...saved, stale: true } };
  if ("text/markdown" in data) marked["text/markdown"] = `> ⚠️ **Stale:** ${STALE_NOTE}\n\n${text(data["text/markdown"])}`;
  if ("text/html" in data) {
    marked["text/html"] = `<p class="agentcell-stale"><strong>⚠️ Stale:</strong> ${STALE_NOTE}</p>${text(data["text/html"])}`;
  }
  if ("text/plain" in data) marked["text/plain"] = `[stale: ${STALE_NOTE}]\n${text(data["text/plain"])}`;
  return marked;
}

function follow(panel: NotebookPanel): void {
  const hooked = new WeakSet<Kernel.IKernelConnection>();
  const hook = (): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || hooked.has(kernel)) return;
    hooked.add(kernel);
    kernel.iopubMessage.connect((_kernel, msg) => markStale(panel, msg));
  };
  panel.sessionContext.kernelChanged.connect(hook);
  void panel.sessionContext.ready.then(hook);
}

export const staleTurnsPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:stale-turns",
  description: "Marks agent turns stale when an earlier cell is re-run.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
  },
};
