/**
 * A tool card: name and kind, what the call does (its command, code, diff or URL), live status, duration,
 * the output (text, images, what the code displayed, diffs) and errors. Running, failed and waiting cards
 * are open; a completed card folds to one line when the turn has many. While a call waits for the user,
 * the approval panel: the concrete action as its headline, then Allow once / Allow always / Deny, also as
 * the keys y / a / n while the panel has focus. A call that activated a skill is a skill card instead: the skill's
 * name and version, who chose it, its read-only folder, the files it brought, and its instructions folded
 * away.
 */

import { codeBlockHtml, highlight, renderMarkdown, sanitize, setRichHtml } from "../markdown";
import type { SkillActivation, ToolBlock, TurnState } from "../state";
import { notAsked, toolStatus } from "../status";
import type { ContentBlock, OutgoingMessage, ToolDisplay } from "../types";
import { type Action, actionOf } from "./action";
import { formatSeconds, h, secondsBetween, replaceChildren } from "./dom";
import { toolKind } from "./tool_kind";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;
/** Lines of output shown before "Show all N lines" (the whole text stays in the saved state). */
const CLIP_LINES = 40;
/** Characters shown before "Show all" for output with few but very long lines. */
const CLIP_CHARS = 20_000;
/** A turn with more tool calls than this folds its completed cards. */
export const FOLD_AFTER = 3;

export type Send = (message: OutgoingMessage) => void;

/** A new approval panel takes focus when the user is already at the turn (focus inside it). */
function userIsAt(el: HTMLElement): boolean {
  const turn = el.closest(".agentcell-turn");
  const active = document.activeElement;
  return turn !== null && active !== null && active !== document.body && turn.contains(active);
}

export class ToolCard {
  readonly el: HTMLDetailsElement;
  private readonly summary: HTMLElement;
  private readonly body: HTMLElement;
  private signature = "";
  /** Set once this view sent an answer, so a second click or key cannot send another. */
  private answered = false;
  private last: [ToolBlock, TurnState] | null = null;
  /** Whether the user opened or closed the card themselves (then the card stays as they left it). */
  private userToggled = false;
  private settingOpen = false;
  /** This card told the page an approval waits off-screen (its title may say so until answered). */
  private announced = false;

  constructor(private readonly send: Send) {
    this.summary = h("summary", { class: "ac-tool-head" });
    this.body = h("div", { class: "ac-tool-body" });
    this.el = h("details", { class: "ac-tool", role: "group" }, this.summary, this.body);
    this.el.addEventListener("toggle", () => {
      if (!this.settingOpen) this.userToggled = true;
    });
  }

  update(tool: ToolBlock, state: TurnState): void {
    this.last = [tool, state];
    const status = toolStatus(state, tool);
    const live = state.status === "running" && state.approvalsOffered;
    const many = toolCount(state) > FOLD_AFTER;
    // The approval request is part of it: a call awaiting approval gets its panel when the request arrives.
    const signature = JSON.stringify([status, live, many, tool.approval, tool.output.length, tool.endedAt, tool.confirmation, this.answered, tool.skill]);
    if (signature === this.signature) return;
    this.signature = signature;
    if (tool.skill && !tool.isError) {
      this.skillCard(tool, tool.skill, status);
      return;
    }
    this.el.classList.remove("ac-skill");
    const action = actionOf(tool.name, tool.input);
    this.el.dataset.status = status;
    this.el.setAttribute("aria-label", `${tool.name} tool call, ${status}`);
    const lines = outputLines(tool);
    replaceChildren(this.summary, ...this.header(tool, status, action, lines));
    const panel = this.approval(tool, status, state, live, action);
    // A call the user denied never ran: the note says so and carries their message, which the result only repeats.
    const saidByNote = status === "denied" && tool.confirmation?.result === "deny";
    replaceChildren(this.body, panel?.classList.contains("ac-approval") ? null : this.input(tool), panel, saidByNote ? null : this.output(tool));
    this.setOpen(status !== "completed" || !many);
    if (panel?.classList.contains("ac-approval")) this.focusPanel(panel);
    else if (this.announced) clearTitleFlag();
  }

  private skillCard(tool: ToolBlock, skill: SkillActivation, status: string): void {
    this.el.classList.add("ac-skill");
    this.el.dataset.status = status;
    this.el.setAttribute("aria-label", `skill ${skill.name} version ${skill.version}, ${status}`);
    const who = skill.requestedBy === "user" ? "activated by you" : "chosen by the model";
    const files = skill.files.length
      ? h("ul", { class: "ac-skill-files" }, ...skill.files.map((file) => h("li", {}, h("code", {}, file))))
      : h("p", { class: "ac-note" }, "No files besides SKILL.md.");
    const instructions = h("details", { class: "ac-skill-instructions" }, h("summary", {}, "Instructions"));
    for (const block of tool.output) instructions.append(this.block(tool, block));
    // The card is a <details>: the skill's name goes in its summary, the rest in its body.
    replaceChildren(
      this.summary,
      h("span", { class: "ac-tool-kind" }, "skill"),
      h("span", { class: "ac-tool-name ac-skill-name" }, skill.name),
      h("span", { class: "ac-skill-version" }, `v${skill.version}`),
      h("span", { class: `ac-status ac-status-${status.replace(/\s+/g, "-")}`, role: "status" }, status),
    );
    replaceChildren(
      this.body,
      h("p", { class: "ac-skill-meta" }, `${who} · mounted read-only at `, h("code", {}, `${skill.path}/`)),
      files,
      instructions,
    );
    this.setOpen(true);
  }

  private setOpen(open: boolean): void {
    if (this.userToggled || this.el.open === open) return;
    this.settingOpen = true;
    this.el.open = open;
    // The toggle event is queued: clear the flag after it ran.
    window.setTimeout(() => (this.settingOpen = false), 0);
  }

  private focusPanel(panel: HTMLElement): void {
    if (!this.el.isConnected) return;
    if (userIsAt(this.el)) {
      panel.focus({ preventScroll: false });
      return;
    }
    this.announced = true;
    announceWhenOffScreen(panel, this.last?.[0].name ?? "a tool", panel.getAttribute("aria-label") ?? "");
  }

  private header(tool: ToolBlock, status: string, action: Action, lines: number): (HTMLElement | null)[] {
    // A denied call never ran: it has no duration to show.
    const seconds = status === "denied" ? null : secondsBetween(tool.confirmation?.at ?? tool.startedAt, tool.endedAt);
    return [
      h("span", { class: "ac-tool-name" }, tool.name),
      h("span", { class: "ac-tool-kind" }, toolKind(tool.name, tool.custom, tool.server)),
      h("span", { class: "ac-tool-line", title: action.line }, action.line),
      h("span", { class: `ac-status ac-status-${status.replace(/\s+/g, "-")}`, role: "status" }, status),
      lines > 1 ? h("span", { class: "ac-tool-lines" }, `${lines.toLocaleString("en-US")} lines`) : null,
      seconds === null ? null : h("span", { class: "ac-tool-time" }, formatSeconds(seconds)),
    ];
  }

  private input(tool: ToolBlock): HTMLElement {
    const code = tool.name === "python" && typeof tool.input.code === "string" ? tool.input.code : null;
    const body = h("div", { class: "ac-tool-input" });
    body.innerHTML = code !== null ? codeBlockHtml(code, "python", { insert: true }) : codeBlockHtml(JSON.stringify(tool.input, null, 2), "json");
    return body;
  }

  private approval(tool: ToolBlock, status: string, state: TurnState, live: boolean, action: Action): HTMLElement | null {
    // The panel needs the kernel's request: before it arrives there is nothing a click could answer.
    if (status === "awaiting approval" && tool.approval && live && !this.answered) return this.approvalPanel(tool, action);
    if (tool.permission === "ask" && !tool.answered && !state.approvalsOffered) {
      return h("p", { class: "ac-note" }, "Needs approval; this front end cannot answer while the cell runs, so the preset decides.");
    }
    if (status === "awaiting approval") {
      return h("p", { class: "ac-note" }, this.answered ? "Answer sent…" : "Waiting for approval.");
    }
    if (notAsked(tool)) {
      const preset = state.context?.preset ?? "the session's";
      return h(
        "p",
        { class: "ac-note ac-note-preset" },
        `Not asked: no front end could answer while the cell ran, so the ${preset} preset decided without asking.`,
      );
    }
    if (tool.confirmation) {
      const { result, remember, message, byRule } = tool.confirmation;
      const said = byRule
        ? `${result === "allow" ? "Allowed" : "Denied"} by an always rule, without asking (%permissions lists it; revoke it there)`
        : result === "allow"
          ? remember === "always"
            ? "Allowed always (a rule of this session: %permissions lists it)"
            : "Allowed once"
          : `Denied${remember === "always" ? " always" : ""}${message ? `: ${message}` : ""}`;
      return h("p", { class: `ac-note ac-note-${result}` }, said);
    }
    return null;
  }

  private approvalPanel(tool: ToolBlock, action: Action): HTMLElement {
    const reason = tool.approval?.reason ?? "";
    const message = h("input", {
      type: "text",
      class: "ac-deny-message",
      placeholder: "Optional: tell the agent why",
      "aria-label": "Message to the agent when denying",
      "data-lm-suppress-shortcuts": "true",
    });
    const answer = (result: "allow" | "deny", remember: "once" | "always") => () => {
      if (this.answered) return;
      this.answered = true;
      const text = message.value.trim();
      this.send({ type: "approval", tool_use_id: tool.id, result, remember, ...(result === "deny" && text ? { message: text } : {}) });
      if (this.last) this.update(...this.last);
    };
    const button = (label: string, key: string, cls: string, onClick: () => void) => {
      const b = h("button", { type: "button", class: `ac-button ${cls}`, "aria-keyshortcuts": key }, label, h("kbd", {}, key));
      b.addEventListener("click", onClick);
      return b;
    };
    const panel = h(
      "div",
      {
        class: "ac-approval",
        role: "alertdialog",
        tabindex: "-1",
        "aria-label": `Approve ${tool.name}: ${action.line}`,
        // JupyterLab's notebook shortcuts (y turns a cell into code, a inserts a cell) must not fire here.
        "data-lm-suppress-shortcuts": "true",
      },
      h("p", { class: "ac-approval-title" }, h("strong", {}, tool.name), " wants to run:"),
      actionView(action),
      action.why ? h("p", { class: "ac-approval-why" }, `The agent says: ${action.why}`) : null,
      reason ? h("p", { class: "ac-approval-reason" }, `Asked because ${reason}`) : null,
      h(
        "div",
        { class: "ac-approval-actions" },
        button("Allow once", "y", "ac-allow", answer("allow", "once")),
        button("Allow always", "a", "ac-allow-always", answer("allow", "always")),
        button("Deny", "n", "ac-deny", answer("deny", "once")),
        message,
      ),
      // JupyterLab / Notebook 7 with the extension pass these keys on from the selected cell (lab/approval_keys.ts).
      document.body.dataset.agentcellCellKeys ? h("p", { class: "ac-approval-keys ac-note" }, "y, a or n answer here, or from this cell selected in command mode.") : null,
    );
    const keys: Record<string, () => void> = { y: answer("allow", "once"), a: answer("allow", "always"), n: answer("deny", "once") };
    panel.addEventListener("keydown", (event) => {
      if (event.target === message || event.ctrlKey || event.metaKey || event.altKey) return;
      const act = keys[event.key.toLowerCase()];
      if (!act) return;
      event.preventDefault();
      event.stopPropagation();
      act();
    });
    return panel;
  }

  private output(tool: ToolBlock): HTMLElement | null {
    if (!tool.output.length) return null;
    const out = h("div", { class: `ac-tool-output${tool.isError ? " ac-error" : ""}` });
    const answeredBy = this.last && tool.name === "wait_thread" && !tool.isError ? threadWithAnswer(this.last[1], tool.output) : null;
    if (answeredBy) {
      // The thread's answer is in its own transcript: saying it again here would show it twice.
      out.append(h("p", { class: "ac-note ac-thread-answer" }, `${answeredBy}'s answer, shown in its thread.`));
      return out;
    }
    tool.output.forEach((block, index) => {
      const display = tool.displays.find((d) => d.block === index);
      out.append(display ? displayView(display) : this.block(tool, block));
    });
    return out;
  }

  private block(tool: ToolBlock, block: ContentBlock): HTMLElement {
    if (block.type === "image") {
      const { media_type: type, data } = block.source;
      if (!IMAGE_TYPES.has(type) || !BASE64.test(data)) return h("p", { class: "ac-note" }, `(image of type ${type} not shown)`);
      return h("img", { class: "ac-image", src: `data:${type};base64,${data}`, alt: `${tool.name} output image` });
    }
    const text = tool.fullText && tool.output.length === 1 ? tool.fullText : block.text;
    if (tool.name === "edit_file" && !tool.isError && /^--- /.test(text)) return diffView(text);
    return clipped(text);
  }
}

const TITLE_FLAG = "⏸ approval needed · ";

function clearTitleFlag(): void {
  if (document.title.startsWith(TITLE_FLAG)) document.title = document.title.slice(TITLE_FLAG.length);
}

/**
 * An approval waiting where the user cannot see it: the view asks the page to tell them with a bubbling
 * `agentcell:approval-pending` event ({ tool, action }); agentcell's JupyterLab extension shows it as a
 * notification with a "Show" action. Without a handler, the tab's title says an approval waits until
 * the panel scrolls into view or is answered.
 */
function announceWhenOffScreen(panel: HTMLElement, tool: string, action: string): void {
  if (typeof IntersectionObserver === "undefined") return;
  const title = document.title;
  const observer = new IntersectionObserver((entries) => {
    const seen = entries.some((e) => e.isIntersecting);
    if (seen || !panel.isConnected) {
      observer.disconnect();
      clearTitleFlag();
      return;
    }
    const ask = new CustomEvent("agentcell:approval-pending", {
      bubbles: true,
      cancelable: true,
      composed: true,
      detail: { tool, action, show: () => panel.scrollIntoView({ block: "center" }) },
    });
    if (panel.dispatchEvent(ask) && !document.title.startsWith(TITLE_FLAG)) document.title = TITLE_FLAG + title;
  });
  observer.observe(panel);
}

/** The thread whose last message is this output's text, when there is one (a wait_thread's answer). */
function threadWithAnswer(state: TurnState, output: ContentBlock[]): string | null {
  const text = output.map((b) => (b.type === "text" ? b.text : "")).join("").trim();
  if (!text) return null;
  for (const thread of state.threads.values()) {
    for (let i = thread.order.length - 1; i >= 0; i -= 1) {
      const block = state.blocks.get(thread.order[i] ?? "");
      if (block?.kind !== "message") continue;
      if (block.text.trim() === text) return thread.title;
      break;
    }
  }
  return null;
}

function toolCount(state: TurnState): number {
  let n = 0;
  for (const block of state.blocks.values()) if (block.kind === "tool") n += 1;
  return n;
}

/** Lines of the card's text output (what its summary says it holds). */
export function outputLines(tool: ToolBlock): number {
  if (!tool.answered) return 0;
  const text = tool.fullText ?? tool.output.map((b) => (b.type === "text" ? b.text : "")).join("\n");
  const trimmed = text.replace(/\n$/, "");
  return trimmed ? trimmed.split("\n").length : 0;
}

function actionView(action: Action): HTMLElement {
  switch (action.kind) {
    case "diff":
      return diffView(action.text);
    case "code": {
      const el = h("div", { class: "ac-approval-action" });
      el.innerHTML = codeBlockHtml(action.text, "python");
      return el;
    }
    case "shell":
      return h("pre", { class: "ac-approval-action ac-command" }, action.text);
    case "json":
      return h("pre", { class: "ac-approval-action ac-text" }, action.text);
    default:
      return h("pre", { class: "ac-approval-action ac-command" }, action.text);
  }
}

/** What the code displayed: its HTML (a DataFrame's table) or Markdown, sanitised like the model's text. */
function displayView(display: ToolDisplay): HTMLElement {
  const el = h("div", { class: "ac-display ac-markdown", "data-mime": display.media_type });
  setRichHtml(el, display.media_type === "text/html" ? sanitize(display.data) : renderMarkdown(display.data));
  return el;
}

function diffView(text: string): HTMLElement {
  const pre = h("pre", { class: "ac-diff" });
  const code = h("code", { class: "hljs language-diff" });
  code.innerHTML = highlight(text, "diff");
  pre.append(code);
  return pre;
}

function clipped(text: string): HTMLElement {
  const pre = h("pre", { class: "ac-text" });
  const lines = text.split("\n");
  const byLines = lines.length > CLIP_LINES + 5;
  if (!byLines && text.length <= CLIP_CHARS) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = byLines ? lines.slice(0, CLIP_LINES).join("\n") : text.slice(0, CLIP_CHARS);
  const label = byLines
    ? `Show all ${lines.length.toLocaleString("en-US")} lines`
    : `Show all ${text.length.toLocaleString("en-US")} characters`;
  const more = h("button", { type: "button", class: "ac-button ac-more" }, label);
  more.addEventListener("click", () => {
    pre.textContent = text;
    more.remove();
  });
  return h("div", {}, pre, more);
}
