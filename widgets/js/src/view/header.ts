/** The header: model, agent name and version, permission preset (red, with a warning, when it is
 * danger-full-access), the turn's status, Stop, and a steer box (guidance the model gets at its next
 * request, without stopping the turn; Enter sends it). */

import type { TurnState } from "../state";
import { ORIGIN_WORDS, originOf } from "../status";
import { h, replaceChildren } from "./dom";
import type { Send } from "./tool";

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
    const status = state.status === "running" ? (state.interruptRequested ? "stopping" : "running") : why === "end_turn" ? "done" : `done: ${why}`;
    const origin = originOf(state.sources);
    const signature = JSON.stringify([state.model, ctx?.agent_name, ctx?.agent_version, ctx?.preset, status, state.stopDetail, live, this.stopping, origin]);
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
        state.stopDetail ? `: ${state.stopDetail}` : "",
      ),
      origin ? h("span", { class: `ac-origin ac-origin-${origin.replace(/ /g, "-")}`, title: ORIGIN_WORDS[origin] ?? origin }, origin) : null,
      stop,
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
