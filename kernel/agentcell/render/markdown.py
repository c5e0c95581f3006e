"""A folded turn as Markdown (the live Markdown renderer, the saved notebook's fallback) and plain text.

The Markdown must read the same in every viewer (JupyterLab and Notebook 7 without the extension, GitHub,
nbviewer, VS Code, nbconvert): outside code, ``$`` is escaped so no MathJax typesets money as math, and
``<`` so the model's raw HTML shows as text (as the HTML fallback already does); code keeps its text, in
fences longer than any backtick run inside it.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import TYPE_CHECKING

from .._format import format_cache_saving, format_cost, format_usd
from ..events import ImageBlock, TextBlock
from .compaction_card import compaction_markdown, compaction_text
from .proposal_card import proposal_markdown, proposal_text
from .statuses import ORIGIN_WORDS, RUNNING
from .workflow_rows import item_threads, row_cells, run_summary, totals_text

if TYPE_CHECKING:
    from ..engine.workflows import WorkflowRun
    from ..events import SessionSkillActivated
    from ..usage import Usage
    from .fold import OutcomeState, ToolState, TurnFold, Verdict

__all__ = [
    "MAX_TOOL_TEXT",
    "NO_MATH",
    "approval_note",
    "clip",
    "escape_prose",
    "fenced",
    "footer",
    "not_math",
    "notebook_context_text",
    "outcome_heading",
    "skill_line",
    "thread_state",
    "turn_markdown",
    "turn_text",
    "usage_line",
    "verdict_line",
]

NO_MATH = "tex2jax_ignore mathjax_ignore"
"""MathJax 2 and 3 skip elements of these classes: a ``$`` agentcell shows is money, not math."""


def not_math(markdown: str) -> str:
    """Markdown for a viewer's output area, kept from MathJax: ``\\$`` stops GitHub's math but not JupyterLab
    or Notebook 7, which typeset the rendered text, so a ``$0.035 ($0.0148 left)`` would still become math
    there (issue 38); an element of MathJax's ignore classes around it stops both."""
    return f'<div class="{NO_MATH}">\n\n{markdown}\n\n</div>'


MAX_TOOL_TEXT = 2_000
"""Characters of a tool's input or output shown in a transcript; the event log keeps all of it."""


def clip(text: str) -> str:
    return text if len(text) <= MAX_TOOL_TEXT else text[:MAX_TOOL_TEXT] + f"\n… ({len(text):,} characters)"


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_PROSE_SPECIALS = str.maketrans({"$": "\\$", "<": "&lt;"})
_IMAGE = re.compile(r"!\[(?![^\]]*\]\(\s*data:image/)")
"""An image the model wrote that is not a ``data:`` image: a viewer would fetch it with the user's cookies
(``![x](/logout)``), so its ``![`` is escaped and it shows as text (issue 21, 5)."""


def _prose(text: str) -> str:
    return _IMAGE.sub(r"!\\[", text.translate(_PROSE_SPECIALS))


def escape_prose(text: str) -> str:
    """``text`` (the model's Markdown) with ``$``, ``<`` and images other than ``data:`` ones escaped outside
    fenced, indented and inline code, so viewers neither typeset math, run raw HTML nor fetch a URL, and the
    Markdown otherwise renders as written."""
    out: list[str] = []
    fence: str | None = None
    previous_blank = True
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opening:
            fence = opening.group(1)
            out.append(line)
        elif previous_blank and line.startswith(("    ", "\t")):
            out.append(line)  # an indented code block
            continue
        else:
            out.append(_escape_spans(line))
        previous_blank = not line.strip()
    return "\n".join(out)


def _escape_spans(line: str) -> str:
    parts, last = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts.append(_prose(line[last : span.start()]))
        parts.append(span.group(0))
        last = span.end()
    parts.append(_prose(line[last:]))
    return "".join(parts)


def fenced(text: str, lang: str) -> str:
    """A fenced code block that ``text`` cannot close early, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def approval_note(tool: ToolState, preset: str | None = None) -> str | None:
    """Who decided a call that needed deciding, in the widget's words (view/tool.ts)."""
    if tool.denied_by in ("no-view", "no-approver"):
        who = preset or "session's"
        return f"Not asked: no front end could answer while the cell ran, so the {who} preset decided without asking."
    if tool.confirmation == "allow":
        return "Allowed by the user"
    if tool.denied_by == "user" or tool.confirmation == "deny":
        return "Denied by the user"
    if tool.denied_by == "guard":
        return "Refused by a guard"
    if tool.denied_by == "preset":
        return "Refused by the permission preset"
    if tool.denied_by == "approver":
        return "Refused by the approver"
    return None


def usage_line(fold: TurnFold) -> str:
    u = fold.turn_usage
    parts = [
        f"in {u.input_tokens:,}",
        f"out {u.output_tokens:,}",
        f"cache read {u.cache_read_input_tokens:,}",
        f"cache write {u.cache_creation_input_tokens:,}",
        f"turn {_cost_with_saving(u)}",
    ]
    if fold.session_usage is not None:
        parts.append(f"session {_cost_with_saving(fold.session_usage)}")
    if fold.budget is not None:
        spent = fold.session_usage.list_cost if fold.session_usage else Decimal(0)
        left = format_usd(fold.budget.remaining(spent))
        parts.append(f"budget {format_usd(fold.budget.max_list_cost)} ({left} left)")
    return " · ".join(parts)


def _cost_with_saving(usage: Usage) -> str:
    saving = format_cache_saving(usage)
    return format_cost(usage) + (f" ({saving})" if saving else "")


def footer(fold: TurnFold) -> str:
    """The last line of a finished turn: what context it carried and how much of the window, its usage, why it
    stopped when that was unusual, and whether it was replayed."""
    context = "".join(f"{line} · " for line in (fold.context_line, fold.window_line) if line)
    where = f" · {ORIGIN_WORDS[fold.origin]}" if fold.origin else ""
    # The normal end is quiet: only an unusual one says why it stopped.
    unusual = fold.stop_reason and fold.stop_reason != "end_turn"
    return context + usage_line(fold) + (f" · stop: {fold.stop_reason}" if unusual else "") + where


def thread_state(status: str) -> str:
    """A thread's status for people: running, finished, or finished with why when not the end of its turn."""
    if status == RUNNING:
        return "running"
    return "finished" if status == "end_turn" else f"finished: {status.replace('_', ' ')}"


def verdict_line(verdict: Verdict) -> str:
    """One revision cycle, numbered from 1 as the outcome's heading counts cycles, with the grader's words."""
    said = f" — Grader: {verdict.explanation}" if verdict.explanation else ""
    return f"cycle {verdict.iteration + 1}: {(verdict.result or 'evaluating…').replace('_', ' ')}{said}"


def outcome_heading(outcome: OutcomeState) -> str:
    return f"Outcome — {outcome.status} · cycle {outcome.iteration + 1} of up to {outcome.max_iterations}"


_OUTPUT_IMAGE = re.compile(r"!\[output\]\(data:image/[a-z]+;base64,[A-Za-z0-9+/=\s]*\)")
"""A tool's image as :func:`_tool_markdown` writes it."""


def turn_markdown(fold: TurnFold, *, final: bool = False, images: bool = True) -> str:
    """The turn as Markdown; without ``images`` each tool's image is a note, for a bundle whose HTML holds
    its one copy (every viewer that shows Markdown shows that HTML instead)."""
    text = _turn_markdown(fold, final=final)
    return text if images else _OUTPUT_IMAGE.sub("_(image: in this output's HTML)_", text)


def _turn_markdown(fold: TurnFold, *, final: bool) -> str:
    out = _blocks_markdown(fold)
    out.extend(_workflow_markdown(fold, run) for run in fold.workflow_runs)
    out.extend(_outcome_markdown(outcome) for outcome in fold.outcomes.values())
    out.extend(f"> ⚠️ {escape_prose(error)}" for error in fold.errors)
    if final and (sent := notebook_context_text(fold)) is not None:
        summary, text = sent
        head = f"<details><summary>notebook: {escape_prose(summary)}</summary>"
        out.append(f"{head}\n\n{fenced(text, 'text')}\n\n</details>")
    if final:
        out.append(f"<sub>{escape_prose(footer(fold))}</sub>")
    return "\n\n".join(out) if out else "_…_"


def notebook_context_text(fold: TurnFold) -> tuple[str, str] | None:
    """What the turn took from the notebook: its summary ("2 cells, 5 variables") and the text the model
    read, clipped as a tool's output is (a saved notebook carries it twice, in its HTML and Markdown; the
    turn's view shows it whole from the event), or None when it took nothing."""
    context = fold.notebook_context
    if context is None:
        return None
    from ..engine.notebook_context import context_text

    return context.describe(), clip(context_text(context))


def _blocks_markdown(fold: TurnFold) -> list[str]:
    out: list[str] = []
    for kind, key in fold.blocks:
        if kind == "message":
            text = fold.texts.get(key, "")
            if text:
                out.append(escape_prose(text) + (" _(interrupted)_" if key in fold.interrupted else ""))
        elif kind == "thinking":
            thought = fold.thinking.get(key)
            out.append("> 💭 _thinking…_" if thought is None else _quote(f"💭 {escape_prose(clip(thought))}"))
        elif kind == "note":
            out.append(_quote(f"↪ _{escape_prose(fold.notes[key])}_"))
        elif kind == "compaction":
            out.append(compaction_markdown(fold.compactions[key]))
        elif kind == "proposal":
            out.append(proposal_markdown(fold.proposals[key]))
        else:
            out.append(_tool_markdown(fold.tools[key]))
            thread = fold.thread_of_tool.get(key)
            if thread is not None:
                out.append(_thread_markdown(fold, thread))
    shown_elsewhere = {*fold.thread_of_tool.values(), *fold.workflow_threads}
    out.extend(_thread_markdown(fold, t) for t in fold.threads if t not in shown_elsewhere)
    return out


def _thread_markdown(fold: TurnFold, thread: str, step: str = "") -> str:
    """A collapsible section: GitHub, nbviewer and JupyterLab render <details> in Markdown."""
    title = escape_prose(fold.thread_titles.get(thread, thread))
    inner = fold.threads[thread]
    body = "\n\n".join(_blocks_markdown(inner) + [f"> ⚠️ {escape_prose(e)}" for e in inner.errors]) or "_…_"
    head = f"{escape_prose(step)} · thread {title}" if step else f"thread {title} — {thread_state(inner.status)}"
    return f"<details><summary>🧵 {head}</summary>\n\n{body}\n\n</details>"


_WORKFLOW_COLUMNS = ("status", "step", "agent", "items", "time", "tokens", "cost")


def _workflow_markdown(fold: TurnFold, run: WorkflowRun) -> str:
    """The progress view: a head line, a table of the steps by depth, then each step item's thread."""
    summary = run_summary(fold, run)
    lines = [f"⚙️ **Workflow {escape_prose(run.name)} — {summary.label}** · {escape_prose(totals_text(summary))}"]
    if run.error:
        lines.append(f"> ⚠️ {escape_prose((f'{run.failed_step}: ' if run.failed_step else '') + run.error)}")
    table = ["| depth | " + " | ".join(_WORKFLOW_COLUMNS) + " |", "|---" * (len(_WORKFLOW_COLUMNS) + 1) + "|"]
    for level in summary.levels:
        for row in level:
            cells = row_cells(row)
            shown = [escape_prose(cells[c]).replace("|", "\\|") for c in _WORKFLOW_COLUMNS]
            shown[1] = f"**{shown[1]}**"
            table.append(f"| {row.step.info.depth} | " + " | ".join(shown) + " |")
    lines.append("\n".join(table))
    for thread, said in item_threads(fold, run):
        lines.append(_thread_markdown(fold, thread, said) if thread else f"> ⚠️ {escape_prose(said)}")
    return "\n\n".join(lines)


def skill_line(skill: SessionSkillActivated) -> str:
    """Who loaded the skill and where its folder is (the skill card's second line, as the widget has it)."""
    who = "activated by you" if skill.requested_by == "user" else "chosen by the model"
    return f"{who} · mounted read-only at {skill.path}/"


def _skill_markdown(tool: ToolState, skill: SessionSkillActivated) -> str:
    files = "\n".join(f"- `{file}`" for file in skill.files) or "No files besides SKILL.md."
    shown = "\n".join(b.text for b in tool.output if isinstance(b, TextBlock))
    instructions = f"<details><summary>Instructions</summary>\n\n```text\n{clip(shown)}\n```\n\n</details>"
    return "\n\n".join(
        [
            f"📘 **skill {escape_prose(skill.name)}** v{skill.version} — {tool.status}",
            escape_prose(skill_line(skill)),
            files,
            instructions,
        ]
    )


def _tool_markdown(tool: ToolState) -> str:
    """A tool card: name and status, who decided, then its input and its output, each in its own fence."""
    if tool.skill is not None and not tool.is_error:
        return _skill_markdown(tool, tool.skill)
    code = tool.input.get("code") if tool.name == "python" else None
    shown = str(code) if isinstance(code, str) else json.dumps(tool.input, indent=2, ensure_ascii=False)
    lang = "python" if isinstance(code, str) else "json"
    lines = [f"🔧 **{escape_prose(tool.name)}** — {tool.status}"]
    if note := approval_note(tool):
        lines.append(f"_{escape_prose(note)}_")
    lines += ["", "input:", "", fenced(clip(shown), lang)]
    outputs: list[str] = []
    for block in tool.output:
        if isinstance(block, TextBlock) and block.text:
            outputs.append(fenced(clip(block.text), "text"))
        elif isinstance(block, ImageBlock):
            outputs.append(f"![output](data:{block.source.media_type};base64,{block.source.data})")
    if outputs:
        lines += ["", "output:", "", "\n\n".join(outputs)]
    return "\n".join(lines)


def _outcome_markdown(outcome: OutcomeState) -> str:
    lines = [f"🎯 **{outcome_heading(outcome)}**", _quote(escape_prose(outcome.description))]
    if outcome.rubric:
        lines.append(f"<details><summary>Rubric</summary>\n\n{fenced(clip(outcome.rubric), 'text')}\n\n</details>")
    for verdict in sorted(outcome.verdicts, key=lambda v: v.iteration):
        lines.append(f"- {escape_prose(verdict_line(verdict))}")
    return "\n\n".join(lines)


def turn_text(fold: TurnFold) -> str:
    out = [compaction_text(event) for event in fold.compactions.values()]
    out += [fold.text] if fold.text else []
    for tool in fold.tools.values():
        note = approval_note(tool)
        out.append(f"[{tool.name}: {tool.status}{f' · {note}' if note else ''}]")
    out += [proposal_text(proposal) for proposal in fold.proposals.values()]
    out += [f"[outcome: {outcome.status}]" for outcome in fold.outcomes.values()]
    for run in fold.workflow_runs:
        summary = run_summary(fold, run)
        out.append(f"workflow {run.name}: {summary.label} · {totals_text(summary)}")
        for level in summary.levels:
            for row in level:
                cells = row_cells(row)
                shown = "  ".join(cells[c] for c in _WORKFLOW_COLUMNS if cells[c])
                out.append(f"  depth {row.step.info.depth}  {shown}")
    out += [f"error: {error}" for error in fold.errors]
    out.append(usage_line(fold))
    return "\n".join(out)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])
