"""The static HTML of a finished turn, for viewers without the widget (nbconvert, nbviewer, GitHub).

Built from the same :class:`~agentcell.render.fold.TurnFold` as the Markdown fallback. Safe by
construction: the model's Markdown is rendered by markdown-it with raw HTML off (a ``<script>`` in the
text comes out as text), links are validated by markdown-it (no ``javascript:``), images are kept only
from ``data:`` raster URLs (never a URL the browser would fetch with the user's credentials), and everything
else is escaped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from html import escape
from typing import TYPE_CHECKING, Any

from ..events import ImageBlock, TextBlock
from .compaction_card import compaction_html
from .fallback_math import math_plugin
from .markdown import (  # the Markdown fallback's clipping and wording
    NO_MATH,
    approval_note,
    clip,
    notebook_context_text,
    outcome_heading,
    skill_line,
    thread_state,
    verdict_line,
)
from .proposal_card import proposal_html
from .workflow_rows import item_threads, row_cells, run_summary, totals_text

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

    from ..engine.workflows import WorkflowRun
    from ..events import SessionSkillActivated
    from .fold import OutcomeState, ToolState, TurnFold

__all__ = ["FALLBACK_CLASS", "fallback_html"]

FALLBACK_CLASS = "agentcell-fallback"
"""The widget's CSS hides an element of this class where the live view rendered in the same output area."""

_DATA_IMAGE = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$", re.IGNORECASE)
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


def _safe_image_src(src: str) -> bool:
    """Only ``data:`` raster images: a relative URL would be fetched from the notebook's own origin with the
    user's cookies (``![x](/logout)`` logs them out), a remote one would tell a third party who reads."""
    return bool(_DATA_IMAGE.match(src))


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML

    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).use(math_plugin)
    assert isinstance(md.renderer, RendererHTML)
    default_image = md.renderer.rules["image"]

    def image(_renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        src = str(tokens[idx].attrGet("src") or "")
        if not _safe_image_src(src):
            return escape(f"[image: {tokens[idx].content or src}]")
        return str(default_image(tokens, idx, options, env))

    md.add_render_rule("image", image)
    return md


def render_markdown(text: str) -> str:
    return str(_markdown().render(text))


def fallback_html(view: TurnFold, *, footer: str) -> str:
    """The turn as one ``<div class="agentcell-fallback">``: messages, thinking, tool cards (with the
    sub-agent threads they spawned, collapsible), outcomes, errors, cost."""
    out = [f'<div class="{FALLBACK_CLASS} {NO_MATH}">', *_blocks_html(view)]
    out.extend(_workflow_html(view, run) for run in view.workflow_runs)
    out.extend(_outcome_html(outcome) for outcome in view.outcomes.values())
    out.extend(f"<p>⚠️ {escape(error)}</p>" for error in view.errors)
    if (sent := notebook_context_text(view)) is not None:
        summary, text = sent
        out.append(f"<details><summary>notebook: {escape(summary)}</summary><pre>{escape(text)}</pre></details>")
    out.append(f"<p><small>{escape(footer)}</small></p>")
    out.append("</div>")
    return "\n".join(out)


def _thread_html(view: TurnFold, thread: str, step: str = "") -> str:
    title = escape(view.thread_titles.get(thread, thread))
    inner = view.threads[thread]
    head = f"{escape(step)} · thread {title}" if step else f"thread {title} — {escape(thread_state(inner.status))}"
    body = "\n".join([*_blocks_html(inner), *(f"<p>⚠️ {escape(error)}</p>" for error in inner.errors)])
    return f"<details><summary>🧵 {head}</summary>{body}</details>"


_WORKFLOW_COLUMNS = ("status", "step", "agent", "items", "time", "tokens", "cost")


def _workflow_html(view: TurnFold, run: WorkflowRun) -> str:
    """The progress view as a table of the steps by depth; each step opens to its items' threads."""
    summary = run_summary(view, run)
    title = f"Workflow {escape(run.name)} — {escape(summary.label)}"
    parts = [f"<p>⚙️ <strong>{title}</strong> · {escape(totals_text(summary))}</p>"]
    if run.error:
        parts.append(f"<p>⚠️ {escape((f'{run.failed_step}: ' if run.failed_step else '') + run.error)}</p>")
    head = "".join(f"<th>{c}</th>" for c in ("depth", *_WORKFLOW_COLUMNS))
    rows = []
    for level in summary.levels:
        for row in level:
            cells = row_cells(row)
            shown = {c: escape(cells[c]) for c in _WORKFLOW_COLUMNS}
            shown["step"] = f"<strong>{shown['step']}</strong>"
            tds = "".join(f"<td>{shown[c]}</td>" for c in _WORKFLOW_COLUMNS)
            rows.append(f'<tr data-step="{escape(row.step.id)}"><td>{row.step.info.depth}</td>{tds}</tr>')
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    for thread, said in item_threads(view, run):
        parts.append(_thread_html(view, thread, said) if thread else f"<p>⚠️ {escape(said)}</p>")
    return '<section class="agentcell-fallback-workflow">' + "".join(parts) + "</section>"


def _blocks_html(view: TurnFold) -> list[str]:
    out: list[str] = []
    for kind, key in view.blocks:
        if kind == "message":
            text = view.texts.get(key, "")
            if text:
                out.append(render_markdown(text))
                if key in view.interrupted:
                    out.append("<p><em>(interrupted)</em></p>")
        elif kind == "note":
            out.append(f"<p><em>↪ {escape(view.notes[key])}</em></p>")
        elif kind == "compaction":
            out.append(compaction_html(view.compactions[key]))
        elif kind == "proposal":
            out.append(proposal_html(view.proposals[key]))
        elif kind == "thinking":
            thought = view.thinking.get(key)
            body = render_markdown(clip(thought)) if thought else "<p><em>thinking…</em></p>"
            out.append(f"<details><summary>💭 Thinking</summary>{body}</details>")
        else:
            out.append(_tool_html(view.tools[key]))
            if (thread := view.thread_of_tool.get(key)) is not None:
                out.append(_thread_html(view, thread))
    shown_elsewhere = {*view.thread_of_tool.values(), *view.workflow_threads}
    out.extend(_thread_html(view, t) for t in view.threads if t not in shown_elsewhere)
    return out


def _skill_html(card: ToolState, skill: SessionSkillActivated) -> str:
    files = "".join(f"<li><code>{escape(file)}</code></li>" for file in skill.files)
    parts = [
        f"<p>📘 <strong>skill {escape(skill.name)}</strong> v{skill.version} — {escape(card.status)}</p>",
        f"<p>{escape(skill_line(skill))}</p>",
        f"<ul>{files}</ul>" if files else "<p>No files besides SKILL.md.</p>",
        "<details><summary>Instructions</summary>" + "".join(_outputs_html(card)) + "</details>",
    ]
    return '<div class="agentcell-fallback-tool agentcell-fallback-skill">' + "".join(parts) + "</div>"


def _tool_html(card: ToolState) -> str:
    if card.skill is not None and not card.is_error:
        return _skill_html(card, card.skill)
    code = card.input.get("code") if card.name == "python" else None
    shown = code if isinstance(code, str) else json.dumps(card.input, indent=2, ensure_ascii=False)
    parts = [f"<p>🔧 <strong>{escape(card.name)}</strong> — {escape(card.status)}</p>"]
    if note := approval_note(card):
        parts.append(f"<p><em>{escape(note)}</em></p>")
    parts += ["<p>input:</p>", f"<pre><code>{escape(clip(shown))}</code></pre>"]
    outputs = _outputs_html(card)
    if outputs:
        parts += ["<p>output:</p>", *outputs]
    return '<div class="agentcell-fallback-tool">' + "".join(parts) + "</div>"


def _outcome_html(outcome: OutcomeState) -> str:
    parts = [
        f"<p>🎯 <strong>{escape(outcome_heading(outcome))}</strong></p>",
        f"<blockquote>{escape(outcome.description)}</blockquote>",
    ]
    if outcome.rubric:
        parts.append(f"<details><summary>Rubric</summary><pre>{escape(clip(outcome.rubric))}</pre></details>")
    verdicts = sorted(outcome.verdicts, key=lambda v: v.iteration)
    if verdicts:
        items = "".join(f"<li>{escape(verdict_line(v))}</li>" for v in verdicts)
        parts.append(f"<ul>{items}</ul>")
    return '<section class="agentcell-fallback-outcome">' + "".join(parts) + "</section>"


def _outputs_html(card: ToolState) -> list[str]:
    shown = (_output_html(block, image_key(card.tool_use_id, index)) for index, block in enumerate(card.output))
    return [html for html in shown if html]


def image_key(tool_use_id: str, index: int) -> str:
    """How the saved turn's events find a tool result's image in this HTML, which holds the bundle's one
    copy of it (``renderer.fallback_bundle``; ``widgets/js/src/lab/bundle.ts`` reads it back)."""
    return f"{tool_use_id}/{index}"


def _output_html(block: Any, key: str) -> str:
    if isinstance(block, TextBlock):
        return f"<pre>{escape(clip(block.text))}</pre>" if block.text else ""
    if isinstance(block, ImageBlock):
        media, data = block.source.media_type, block.source.data
        if media in _IMAGE_TYPES and _BASE64.match(data):
            return f'<img src="data:{media};base64,{data}" alt="tool output image" data-image="{escape(key)}">'
        return f"<p>(image of type {escape(media)} not shown)</p>"
    return ""
