"""Fallbacks that survive every viewer: rendered as CommonMark (what GitHub, nbviewer, VS Code and
nbconvert do with text/markdown), a turn's money is text, not math; the model's raw HTML is text; code is
kept as written; tool input and output are separate blocks; who approved or refused a call is said."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from agentcell.render.displays import STALE_NOTE, stale_bundle
from agentcell.render.markdown import escape_prose, fenced
from agentcell.render.renderer import TURN_MIMETYPE

from .test_fallbacks_of_logs import fold, html, markdown, turns

# The JupyterLab / nbconvert math finder: $…$ not preceded by a backslash (simplified, conservative).
MATH = re.compile(r"(?<!\\)\$[^$\n]+(?<!\\)\$")


def commonmark(text: str) -> str:
    return str(MarkdownIt("commonmark", {"html": True}).render(text))


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.tags.append(tag)


def tags_of(rendered: str) -> list[str]:
    parser = Tags()
    parser.feed(rendered)
    return parser.tags


def test_money_is_not_math_and_raw_html_is_text() -> None:
    text = 'It costs $5 to $6. <script>alert("x")</script> <img src=x onerror=alert(1)>'
    escaped = escape_prose(text)
    assert not MATH.search(escaped)  # nothing a MathJax viewer would typeset
    rendered = commonmark(escaped)
    assert "script" not in tags_of(rendered) and "img" not in tags_of(rendered)
    assert "It costs $5 to $6." in rendered and "&lt;script&gt;" in rendered


def test_code_keeps_its_text() -> None:
    text = "Use `a < b and $x` here.\n\n```python\nif a < b:\n    cost = '$5'\n```\n\n    indented $1 < 2\n\nDone $3."
    escaped = escape_prose(text)
    assert "`a < b and $x`" in escaped
    assert "```python\nif a < b:\n    cost = '$5'\n```" in escaped
    assert "    indented $1 < 2" in escaped
    assert escaped.endswith("Done \\$3.")


def test_a_fence_is_never_closed_by_the_code_inside() -> None:
    code = "print('''\n```\n''')"
    block = fenced(code, "python")
    rendered = commonmark(block)
    assert rendered.count("<pre>") == 1 and "```" in rendered


def test_tool_input_and_output_are_separate_blocks_and_refusals_are_said() -> None:
    shown = markdown("tools")
    assert re.search(r"input:\n\n```+\w+\n", shown) and re.search(r"output:\n\n```+text\n", shown)
    refused = [markdown("refusals", turn) for turn in range(len(turns("refusals")))]
    assert "_Refused by a guard_" in refused[0]
    assert "_Refused by the permission preset_" in refused[1]
    assert "_Denied by the user_" in refused[2]
    assert "Not asked: no front end could answer" in refused[3]
    assert "_Refused by the approver_" in refused[5]
    assert "Denied by the user" in html("refusals", 2) and "Refused by a guard" in fold(turns("refusals")[0]).to_text()


def test_the_html_fallback_is_skipped_by_mathjax() -> None:
    assert html("budget").startswith('<div class="agentcell-fallback tex2jax_ignore mathjax_ignore">')


def test_the_footer_money_is_escaped() -> None:
    shown = markdown("budget")
    assert "turn \\$0" in shown and not MATH.search(shown)


def test_a_stale_bundle_says_so_in_every_representation() -> None:
    bundle = {
        TURN_MIMETYPE: {"events": []},
        "text/markdown": "Hello.",
        "text/html": "<div>Hello.</div>",
        "text/plain": "Hello.",
    }
    stale = stale_bundle(bundle)
    assert stale[TURN_MIMETYPE]["stale"] is True and "stale" not in bundle[TURN_MIMETYPE]
    for mime in ("text/markdown", "text/html", "text/plain"):
        assert STALE_NOTE in stale[mime] and stale[mime].endswith("Hello." if mime != "text/html" else "</div>")
