/** The header: model, agent name and version, permission preset (red, with a warning, when it is
 * danger-full-access), the turn's status, Stop, and a steer box (guidance the model gets at its next
 * request, without stopping the turn; Enter sends it). A failed turn says "failed" and offers Retry where
 * the page can run the cell again (the lab extension: lab/retry_cell.ts); its error is the body's. */

import type { TurnState } from "../state";
import { ORIGIN_WORDS, originOf } from "../status";
import { h, replaceChildren } from "./dom";
import type { Send } from "./tool";

/** Set on the page's body by a host that runs a turn's cell again when asked (lab/retry_cell.ts). */
export const RETRY_FLAG = "agentcellRetry";
/** The bubbling event Retry sends from the turn's view; the host runs the cell that holds it. */
export const RETRY_EVENT = "agentcell:retry";

function retryButton(): HTMLElement {
  const button = h("button", { type: "button", class: "ac-button ac-retry", title: "Run this cell again, as Shift+Enter would" }, "Retry");
  button.addEventListener("click", () => button.dispatchEvent(new CustomEvent(RETRY_EVENT, { bubbles: true, cancelable: true })));
  return button;
}

export class Header {
  readonly el: HTMLElement;
  private signature = "";
  private stopping = false;
  private steer: HTMLElement | null = null;

  constructor(private readonly send: Send) {
    this.el = h("header", { class: "ac-header" });
  }

  update(state: TurnState): void {
    const ctx = state.context;
    const live = state.status === "running" && state.live;
    // The normal end is quiet ("done"); only an unusual one says why (interrupted, max_turns, budget_reached…).
    const why = state.stopReason ?? "end_turn";
    const failed = state.status !== "running" && why === "error";
    const status = state.status === "running" ? (state.interruptRequested ? "stopping" : "running") : why === "end_turn" ? "done" : failed ? "failed" : `done: ${why}`;
    // The error block in the body says what failed: the header does not say it again (one error view).
    const said = failed && [...state.blocks.values()].some((block) => block.kind === "error" && block.retry !== "retrying");
    const detail = state.stopDetail && !said ? `: ${state.stopDetail}` : "";
    const origin = originOf(state.sources);
    const signature = JSON.stringify([state.model, ctx?.agent_name, ctx?.agent_version, ctx?.preset, status, detail, live, this.stopping, origin]);
    if (signature === this.signature) return;
    this.signature = signature;
    const stop = live ? h("button", { type: "button", class: "ac-button ac-stop", "aria-label": "Stop this turn" }, this.stopping ? "Stopping…" : "Stop") : null;
    if (stop) {
      stop.disabled = this.stopping;
      stop.addEventListener("click", () => {
        if (this.stopping) return;
        this.stopping = true;
        this.send({ type: "stop" });
        this.update(state);
      });
    }
    // One steer box for the whole turn, so a repaint keeps what the user is typing (and the focus).
    const steer = live ? (this.steer ??= this.steerBox()) : null;
    const danger = ctx?.preset === "danger-full-access";
    replaceChildren(this.el, 
      h("span", { class: "ac-model", title: "model" }, state.model || ctx?.model || "model"),
      ctx ? h("span", { class: "ac-agent", title: "agent" }, `${ctx.agent_name} v${ctx.agent_version}`) : null,
      ctx ? h("span", { class: `ac-preset${danger ? " ac-preset-danger" : ""}`, title: "permission preset" }, ctx.preset) : null,
      h(
        "span",
        { class: `ac-turn-status ac-turn-${state.status}`, role: "status", "aria-live": "polite" },
        status,
        detail,
      ),
      origin ? h("span", { class: `ac-origin ac-origin-${origin.replace(/ /g, "-")}`, title: ORIGIN_WORDS[origin] ?? origin }, origin) : null,
      stop,
      failed && document.body.dataset[RETRY_FLAG] ? retryButton() : null,
      steer,
      danger
        ? h("p", { class: "ac-danger-warning", role: "note" }, "⚠ danger-full-access: the agent's tools run anything, anywhere, without asking.")
        : null,
    );
  }

  private steerBox(): HTMLElement {
    const input = h("input", {
      type: "text",
      class: "ac-steer-input",
      placeholder: "Steer: guidance for the next step…",
      "aria-label": "Steer this turn",
    }) as HTMLInputElement;
    const button = h("button", { type: "submit", class: "ac-button ac-steer" }, "Steer");
    // JupyterLab's notebook shortcuts would take Enter (and every letter) typed here for themselves.
    const form = h("form", { class: "ac-steer-form", "data-lm-suppress-shortcuts": "true" }, input, button);
    const submit = () => {
      const text = input.value.trim();
      if (!text) return;
      this.send({ type: "steer", text });
      input.value = "";
      input.placeholder = `Sent: ${text.length > 40 ? `${text.slice(0, 40)}…` : text} (the transcript says when it is delivered)`;
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      submit();
    });
    input.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      event.preventDefault();
      event.stopPropagation();
      submit();
    });
    return form;
  }
}
