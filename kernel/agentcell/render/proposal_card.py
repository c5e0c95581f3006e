"""A proposed cell as the fallbacks show it: its code (or, for an edit, the diff), and what to do with it.

A front end without the lab extension (VS Code, Colab, GitHub, nbconvert) cannot show buttons that reach the
kernel, so the card says how to answer from a cell (``%accept N``, ``%reject N``) or to copy the code. The
widget's card (``widgets/js/src/view/proposal.ts``) shows the same parts.
"""

from __future__ import annotations

import difflib
from html import escape

from ..engine.cell_notes import describe_proposal
from ..records.cell_events import AgentCellProposed

__all__ = ["proposal_diff", "proposal_html", "proposal_instruction", "proposal_markdown", "proposal_text"]


def proposal_diff(proposal: AgentCellProposed) -> str:
    """The edit as a unified diff of the cell's source as the agent saw it and the proposed one."""
    old = (proposal.old_source or "").splitlines()
    new = proposal.source.splitlines()
    lines = difflib.unified_diff(old, new, "cell as it was", "proposed", lineterm="", n=3)
    return "\n".join(list(lines)[2:])  # the two file headers say nothing a reader needs


def proposal_instruction(proposal: AgentCellProposed) -> str:
    n = proposal.number
    if proposal.action == "delete":
        return f"To delete it, run `%accept {n}` (it says which cell), then delete the cell; `%reject {n}` keeps it."
    where = "the edited code as a new cell" if proposal.action == "edit" else "the cell"
    return f"Run `%accept {n}` in a cell to insert {where} below it (or copy the code); `%reject {n}` to decline."


def _title(proposal: AgentCellProposed) -> str:
    title = f"Proposed {proposal.number}: {describe_proposal(proposal)}"
    return f"{title} · {proposal.note}" if proposal.note else title


def _code(proposal: AgentCellProposed) -> tuple[str, str]:
    """The card's code and its language."""
    if proposal.action == "edit":
        return proposal_diff(proposal), "diff"
    if proposal.action == "delete":
        return proposal.old_source or "", "python"
    return proposal.source, "markdown" if proposal.cell_type == "markdown" else "python"


def proposal_markdown(proposal: AgentCellProposed) -> str:
    from .markdown import escape_prose, fenced

    code, lang = _code(proposal)
    return "\n\n".join(
        [f"📝 **{escape_prose(_title(proposal))}**", fenced(code, lang), f"_{proposal_instruction(proposal)}_"]
    )


def proposal_html(proposal: AgentCellProposed) -> str:
    code, lang = _code(proposal)
    instruction = escape(proposal_instruction(proposal))
    return (
        f'<div class="agentcell-proposal"><p>📝 <strong>{escape(_title(proposal))}</strong></p>'
        f'<pre><code class="language-{lang}">{escape(code)}</code></pre><p><em>{instruction}</em></p></div>'
    )


def proposal_text(proposal: AgentCellProposed) -> str:
    code, _ = _code(proposal)
    return f"[{_title(proposal)}]\n{code}\n({proposal_instruction(proposal).replace('`', '')})"
