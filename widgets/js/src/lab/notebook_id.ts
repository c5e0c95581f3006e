/**
 * A notebook's identity (kernel/notebook_id.py): the id in its metadata (`metadata.agentcell.notebook_id`),
 * which the kernel maps to the notebook's session, so a rename keeps the conversation, a new notebook at a
 * reused name starts afresh, and a copy forks it.
 *
 * The id is written at the notebook's first run, never at open: an untouched notebook stays unmodified.
 * Before a notebook's cells run, the kernel is asked which id the notebook carries (a silent request, sent
 * ahead of the cell's, whose user expression the kernel answers; a new or restarted kernel looks the session
 * up then): the same one, or a new one for a copy (Duplicate, Save As, a copied file) whose session forked.
 * What the kernel says about it (a fork, a session missing from the store) is shown as a notification. A
 * rename is said too, so the kernel's index knows where the notebook is when a copy of it appears.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { Notification } from "@jupyterlab/apputils";
import { INotebookTracker, NotebookActions, type NotebookPanel } from "@jupyterlab/notebook";
import type { KernelMessage } from "@jupyterlab/services";
import { UUID } from "@lumino/coreutils";

export const METADATA_KEY = "agentcell";

interface Identity {
  notebook_id: string | null;
  notices: string[];
}

/** The kernel's answer to `identify_notebook`, or null when it gave none (an error, another kernel). */
export function identityOf(reply: KernelMessage.IExecuteReplyMsg): Identity | null {
  const content = reply.content as { user_expressions?: Record<string, unknown> };
  const answer = content.user_expressions?.identity as { status?: string; data?: Record<string, unknown> } | undefined;
  const found = answer?.status === "ok" ? answer.data?.["application/json"] : undefined;
  if (!found || typeof found !== "object") return null;
  const { notebook_id, notices } = found as Partial<Identity>;
  return {
    notebook_id: typeof notebook_id === "string" && notebook_id ? notebook_id : null,
    notices: Array.isArray(notices) ? notices.filter((n): n is string => typeof n === "string") : [],
  };
}

class NotebookIdentity {
  private agentcell = false;

  constructor(private readonly panel: NotebookPanel) {
    const context = panel.sessionContext;
    const check = (): void => {
      const kernel = context.session?.kernel;
      // Its kernelspec's name says at once (a run may be scheduled before the kernel's info arrives); the
      // info says for a kernelspec of another name.
      this.agentcell = kernel?.name === "agentcell";
      void kernel?.info.then((info) => {
        if (context.session?.kernel === kernel) this.agentcell ||= info.implementation === "agentcell";
      });
    };
    context.kernelChanged.connect(check);
    void context.ready.then(check);
    panel.context.pathChanged.connect(() => this.identify());
  }

  /** Called as a cell of this notebook is scheduled, before its execute request is sent. */
  beforeRun(): void {
    // Asked before every run, not only a kernel's first: a kernel restarted through the server's API does not
    // say so to this page, and the answer costs the kernel a look at what it knows already.
    const model = this.panel.content.model;
    if (!model) return;
    const section = (model.getMetadata(METADATA_KEY) ?? {}) as Record<string, unknown>;
    let id = section.notebook_id;
    if (this.agentcell && (typeof id !== "string" || !id)) {
      id = UUID.uuid4();
      model.setMetadata(METADATA_KEY, { ...section, notebook_id: id });
    }
    this.identify();
  }

  /** Tell the kernel the notebook's id and path (also when it is renamed), and keep the id it answers. */
  identify(): void {
    const model = this.panel.content.model;
    const kernel = this.panel.sessionContext.session?.kernel;
    const id = (model?.getMetadata(METADATA_KEY) as Record<string, unknown> | undefined)?.notebook_id;
    if (!this.agentcell || !kernel || typeof id !== "string" || !id) return;
    const expression = `__agentcell__.identify_notebook(${JSON.stringify(id)}, ${JSON.stringify(this.panel.context.path)})`;
    const future = kernel.requestExecute({
      code: "",
      silent: true,
      store_history: false,
      user_expressions: { identity: expression },
    });
    void future.done.then((reply) => this.answered(identityOf(reply))).catch(() => undefined);
  }

  private answered(identity: Identity | null): void {
    const model = this.panel.content.model;
    if (!identity || !model) return;
    const section = (model.getMetadata(METADATA_KEY) ?? {}) as Record<string, unknown>;
    if (identity.notebook_id && section.notebook_id !== identity.notebook_id) {
      model.setMetadata(METADATA_KEY, { ...section, notebook_id: identity.notebook_id });
    }
    for (const notice of identity.notices) Notification.info(notice, { autoClose: false });
  }
}

export const notebookIdPlugin: JupyterFrontEndPlugin<void> = {
  id: "agentcell-widgets:notebook-id",
  description: "Keeps an agentcell notebook's id in its metadata: its conversation follows it, and a copy forks.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const identities = new WeakMap<NotebookPanel, NotebookIdentity>();
    const follow = (panel: NotebookPanel): void => {
      identities.set(panel, new NotebookIdentity(panel));
    };
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_tracker, panel) => follow(panel));
    NotebookActions.executionScheduled.connect((_actions, { notebook }) => {
      const panel = tracker.find((candidate) => candidate.content === notebook);
      if (panel) identities.get(panel)?.beforeRun();
    });
  },
};
