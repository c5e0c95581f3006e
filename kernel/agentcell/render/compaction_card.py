"""The compaction card: what a ``session.context_compacted`` event did, for the Markdown and HTML
renderers, the plain-text fold and ``%compact``. The summary is shown whole: it is exactly what the model
sees in place of the conversation it covers."""

from __future__ import annotations

from html import escape

from .._format import format_cost
from ..events import SessionContextCompacted

__all__ = ["compaction_heading", "compaction_html", "compaction_markdown", "compaction_text"]


def compaction_heading(event: SessionContextCompacted) -> str:
    """One line: why, what was done, the window before and after, and what it cost."""
    why = "by hand" if event.trigger == "manual" else "the conversation neared the context window"
    done: list[str] = []
    if event.cleared_tool_results:
        count = len(event.cleared_tool_results)
        done.append(f"{count} old tool result{'s' if count != 1 else ''} cleared")
    if event.summary is not None:
        done.append("summarised by the model" + (", the latest turn kept verbatim" if event.kept_from else ""))
    share = f"{event.tokens_before / event.window:.0%} → {event.tokens_after / event.window:.0%}"
    cost = f" · {format_cost(event.usage)}" if event.summary is not None else ""
    return (
        f"Context compacted ({why}): {', '.join(done)} · {event.tokens_before:,} → {event.tokens_after:,} tokens "
        f"({share} of the {event.window:,}-token window){cost}"
    )


def compaction_markdown(event: SessionContextCompacted) -> str:
    from .markdown import escape_prose

    heading = f"> 🗜️ **{escape_prose(compaction_heading(event))}**"
    if event.summary is None:
        return heading
    summary = "\n".join(f"> {line}" for line in escape_prose(event.summary).splitlines() or [""])
    return f"{heading}\n>\n> <details><summary>Summary the model sees</summary>\n>\n{summary}\n>\n> </details>"


def compaction_html(event: SessionContextCompacted) -> str:
    heading = f"<p><strong>🗜️ {escape(compaction_heading(event))}</strong></p>"
    if event.summary is None:
        return f'<section class="agentcell-fallback-compaction">{heading}</section>'
    body = f"<details><summary>Summary the model sees</summary><pre>{escape(event.summary)}</pre></details>"
    return f'<section class="agentcell-fallback-compaction">{heading}{body}</section>'


def compaction_text(event: SessionContextCompacted) -> str:
    heading = f"[{compaction_heading(event)}]"
    return heading if event.summary is None else f"{heading}\nSummary the model sees:\n{event.summary}"
