/**
 * `y` / `a` / `n` answer a pending approval from command mode while its cell is selected (issue 38): after
 * Shift+Enter starts a turn that then waits, the user need not reach into the output to answer. Only a
 * selected cell that holds an approval panel takes the keys; anywhere else they stay JupyterLab's (`y` makes a
 * cell code, `a` inserts one above). The listener is on the window in the capture phase, ahead of the
 * application's own keydown handling, and presses the panel's button for the key, so an answer goes the one
 * way a click goes (view/tool.ts). The page says it takes the keys (`data-agentcell-cell-keys` on the body),
 * and the panel then says so.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker } from "@jupyterlab/notebook";

export const CELL_KEYS_FLAG = "agentcellCellKeys";
const KEYS = new Set(["y", "a", "n"]);

function typing(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

export function answerFromCell(tracker: INotebookTracker, event: KeyboardEvent): void {
  if (event.ctrlKey || event.metaKey || event.altKey || event.shiftKey || !KEYS.has(event.key.toLowerCase())) return;
  const panel = tracker.currentWidget;
  const target = event.target;
  if (!panel || !(target instanceof Node) || !panel.node.contains(target) || typing(target)) return;
  if ((target instanceof Element && target.closest(".ac-approval")) || panel.content.mode !== "command") return; // the panel's own keys
  const approval = panel.content.activeCell?.node.querySelector(".ac-approval");
  const button = approval?.querySelector<HTMLButtonElement>(`button[aria-keyshortcuts="${event.key.toLowerCase()}"]`);
  if (!button || button.disabled) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  button.click();
}

export const approvalKeysPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:approval-keys",
  description: "y / a / n answer the selected cell's pending tool approval from command mode.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    document.body.dataset[CELL_KEYS_FLAG] = "true";
    window.addEventListener("keydown", (event) => answerFromCell(tracker, event), true);
  },
};
