/**
 * A tool card: name and kind, the input (code for the python tool, pretty JSON otherwise), live status,
 * duration, the output (text, images, diffs) and errors; while a call waits for the user, the approval
 * panel with Allow once / Allow always / Deny. A call that activated a skill is a skill card instead: the
 * skill's name and version, who chose it, its read-only folder, the files it brought, and its instructions
 * folded away.
 */

import { codeBlockHtml, highlight } from "../markdown";
import type { SkillActivation, ToolBlock, TurnState } from "../state";
import { notAsked, toolStatus } from "../status";
import type { ContentBlock, OutgoingMessage } from "../types";
import { formatSeconds, h, secondsBetween, replaceChildren } from "./dom";
import { toolKind } from "./tool_kind";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;
/** Characters of output shown before "show all" (the whole text stays in the saved state). */
const CLIP = 20_000;

export type Send = (message: OutgoingMessage) => void;

export class ToolCard {
  readonly el: HTMLElement;
  private signature = "";
  /** Set once this view sent an answer, so a second click cannot send another. */
  private answered = false;
  private last: [ToolBlock, TurnState] | null = null;

  constructor(private readonly send: Send) {
    this.el = h("section", { class: "ac-tool", role: "group" });
  }

  update(tool: ToolBlock, state: TurnState): void {
    this.last = [tool, state];
    const status = toolStatus(state, tool);
    const live = state.status === "running" && state.approvalsOffered;
    // The approval request is part of it: a call awaiting approval gets its panel when the request arrives.
    const signature = JSON.stringify([status, live, tool.approval, tool.output.length, tool.endedAt, tool.confirmation, this.answered, tool.skill]);
    if (signature === this.signature) return;
    this.signature = signature;
    if (tool.skill && !tool.isError) {
      this.skillCard(tool, tool.skill, status);
      return;
    }
    this.el.classList.remove("ac-skill");
    this.el.dataset.status = status;
    this.el.setAttribute("aria-label", `${tool.name} tool call, ${status}`);
    replaceChildren(this.el, 
      this.header(tool, status),
      this.input(tool),
      this.approval(tool, status, state, live),
      this.output(tool),
    );
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
    replaceChildren(
      this.el,
      h(
        "header",
        { class: "ac-tool-head" },
        h("span", { class: "ac-tool-kind" }, "skill"),
        h("span", { class: "ac-tool-name ac-skill-name" }, skill.name),
        h("span", { class: "ac-skill-version" }, `v${skill.version}`),
        h("span", { class: `ac-status ac-status-${status.replace(/\s+/g, "-")}`, role: "status" }, status),
      ),
      h("p", { class: "ac-skill-meta" }, `${who} · mounted read-only at `, h("code", {}, `${skill.path}/`)),
      files,
      instructions,
    );
  }

  private header(tool: ToolBlock, status: string): HTMLElement {
    const seconds = secondsBetween(tool.confirmation?.at ?? tool.startedAt, tool.endedAt);
    return h(
      "header",
      { class: "ac-tool-head" },
      h("span", { class: "ac-tool-name" }, tool.name),
      h("span", { class: "ac-tool-kind" }, toolKind(tool.name, tool.custom, tool.server)),
      h("span", { class: `ac-status ac-status-${status.replace(/\s+/g, "-")}`, role: "status" }, status),
      seconds === null ? null : h("span", { class: "ac-tool-time" }, formatSeconds(seconds)),
    );
  }

  private input(tool: ToolBlock): HTMLElement {
    const code = tool.name === "python" && typeof tool.input.code === "string" ? tool.input.code : null;
    const body = h("div", { class: "ac-tool-input" });
    body.innerHTML = code !== null ? codeBlockHtml(code, "python") : codeBlockHtml(JSON.stringify(tool.input, null, 2), "json");
    return body;
  }

  private approval(tool: ToolBlock, status: string, state: TurnState, live: boolean): HTMLElement | null {
    // The panel needs the kernel's request: before it arrives there is nothing a click could answer.
    if (status === "awaiting approval" && tool.approval && live && !this.answered) return this.approvalPanel(tool);
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
      const { result, remember, message } = tool.confirmation;
      const said = result === "allow" ? `Allowed (${remember})` : `Denied${message ? `: ${message}` : ""}`;
      return h("p", { class: `ac-note ac-note-${result}` }, said);
    }
    return null;
  }

  private approvalPanel(tool: ToolBlock): HTMLElement {
    const reason = tool.approval?.reason ?? "";
    const message = h("input", {
      type: "text",
      class: "ac-deny-message",
      placeholder: "Optional: tell the agent why",
      "aria-label": "Message to the agent when denying",
    });
    const answer = (result: "allow" | "deny", remember: "once" | "always") => () => {
      if (this.answered) return;
      this.answered = true;
      const text = message.value.trim();
      this.send({ type: "approval", tool_use_id: tool.id, result, remember, ...(result === "deny" && text ? { message: text } : {}) });
      if (this.last) this.update(...this.last);
    };
    const button = (label: string, cls: string, onClick: () => void) => {
      const b = h("button", { type: "button", class: `ac-button ${cls}` }, label);
      b.addEventListener("click", onClick);
      return b;
    };
    return h(
      "div",
      { class: "ac-approval", role: "alertdialog", "aria-label": `Approve ${tool.name}?` },
      h("p", {}, h("strong", {}, tool.name), ` wants to run: ${reason}`),
      h(
        "div",
        { class: "ac-approval-actions" },
        button("Allow once", "ac-allow", answer("allow", "once")),
        button("Allow always", "ac-allow-always", answer("allow", "always")),
        button("Deny", "ac-deny", answer("deny", "once")),
        message,
      ),
    );
  }

  private output(tool: ToolBlock): HTMLElement | null {
    if (!tool.output.length) return null;
    const out = h("div", { class: `ac-tool-output${tool.isError ? " ac-error" : ""}` });
    for (const block of tool.output) out.append(this.block(tool, block));
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

function diffView(text: string): HTMLElement {
  const pre = h("pre", { class: "ac-diff" });
  const code = h("code", { class: "hljs language-diff" });
  code.innerHTML = highlight(text, "diff");
  pre.append(code);
  return pre;
}

function clipped(text: string): HTMLElement {
  const pre = h("pre", { class: "ac-text" });
  if (text.length <= CLIP) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, CLIP);
  const more = h("button", { type: "button", class: "ac-button ac-more" }, `Show all ${text.length.toLocaleString("en-US")} characters`);
  more.addEventListener("click", () => {
    pre.textContent = text;
    more.remove();
  });
  return h("div", {}, pre, more);
}
