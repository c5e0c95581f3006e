/**
 * An approval waiting where the user cannot see it becomes a JupyterLab notification (Lab 4 and Notebook 7
 * have the same Notification API). The view asks with a bubbling `agentcell:approval-pending` event
 * ({ tool, action }) from the approval panel when the panel is off-screen (view/tool.ts); preventDefault
 * tells it the page took over, so it leaves the tab title alone.
 *
 * One notification per tool card: a card repaints its panel (a new element) while the call still waits, and
 * asks again, but that updates the one notification. It is dismissed when the card no longer holds an
 * approval panel: the call was answered (here or by a key), the turn stopped, or the cell's output went.
 * Its "Show" action brings the notebook's tab forward, scrolls the panel into the middle and focuses it,
 * where `y` / `a` / `n` answer it; the notification stays until then.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { Notification } from "@jupyterlab/apputils";
import type { Cell } from "@jupyterlab/cells";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import { cellOf } from "./cell_of";

export const APPROVAL_PENDING_EVENT = "agentcell:approval-pending";
const APPROVAL = ".ac-approval";
const CARD = ".ac-tool";

interface Waiting {
  notification: string;
  cell: Cell;
}

/** The notification's text (JupyterLab truncates past 140 characters). */
export function noticeText(notebook: string, tool: string, action: string): string {
  const what = action.replace(/^Approve [^:]*:\s*/, "").trim();
  const head = `${tool} waits for your approval in ${notebook}`;
  return what ? `${head}: ${what.length > 80 ? `${what.slice(0, 79)}…` : what}` : head;
}

class ApprovalNotices {
  private readonly waiting = new Map<Element, Waiting>();
  private readonly observer = new MutationObserver(() => this.sweep());

  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly panel: NotebookPanel,
  ) {
    panel.node.addEventListener(APPROVAL_PENDING_EVENT, (event) => this.announce(event));
    panel.disposed.connect(() => this.dismissAll());
  }

  private announce(event: Event): void {
    const approval = event.target instanceof Element ? event.target.closest(APPROVAL) : null;
    const cell = cellOf(this.panel.content, approval);
    if (!approval || !cell) return;
    event.preventDefault();
    const detail = (event as CustomEvent<{ tool?: unknown; action?: unknown }>).detail ?? {};
    const card = approval.closest(CARD) ?? approval;
    const message = noticeText(this.panel.title.label, String(detail.tool ?? "a tool"), String(detail.action ?? ""));
    const known = this.waiting.get(card);
    if (known && Notification.manager.has(known.notification)) {
      known.cell = cell;
      Notification.update({ id: known.notification, message, type: "warning", autoClose: false, actions: this.actions(card) });
      return;
    }
    const notification = Notification.warning(message, { autoClose: false, actions: this.actions(card) });
    this.waiting.set(card, { notification, cell });
    if (this.waiting.size === 1) this.observer.observe(this.panel.node, { childList: true, subtree: true });
  }

  private actions(card: Element): Notification.IAction[] {
    const show = (event: MouseEvent): void => {
      event.preventDefault(); // the notification stays until the approval is answered
      void this.show(card);
    };
    return [{ label: "Show", caption: "Scroll to the approval and focus it", displayType: "accent", callback: show }];
  }

  private async show(card: Element): Promise<void> {
    const waiting = this.waiting.get(card);
    if (!waiting) return;
    // The notebook may be a tab behind another one: bring it forward first.
    this.app.shell.activateById(this.panel.id);
    const notebook = this.panel.content;
    notebook.activeCellIndex = notebook.widgets.indexOf(waiting.cell);
    await notebook.scrollToCell(waiting.cell, "center");
    const approval = card.querySelector<HTMLElement>(APPROVAL);
    approval?.scrollIntoView({ block: "center" });
    approval?.focus({ preventScroll: true });
  }

  /** Dismisses the notifications whose approval is no longer waiting in the page. */
  private sweep(): void {
    for (const [card, { notification, cell }] of this.waiting) {
      // A cell out of the page (a windowed notebook detaches far cells) still holds its approval.
      const cellAway = !cell.isDisposed && !cell.node.isConnected;
      const stillWaiting = card.isConnected ? card.querySelector(APPROVAL) !== null : cellAway;
      if (stillWaiting && Notification.manager.has(notification)) continue;
      Notification.dismiss(notification);
      this.waiting.delete(card);
    }
    if (this.waiting.size === 0) this.observer.disconnect();
  }

  private dismissAll(): void {
    for (const { notification } of this.waiting.values()) Notification.dismiss(notification);
    this.waiting.clear();
    this.observer.disconnect();
  }
}

export const approvalNoticePlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:approval-notice",
  description: "A notification for an agent's tool call that waits for approval off-screen.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach((panel) => new ApprovalNotices(app, panel));
    tracker.widgetAdded.connect((_tracker, panel) => new ApprovalNotices(app, panel));
  },
};
