"""Math in the HTML fallback's Markdown, kept as the model wrote it.

markdown-it reads ``\\,`` in ``$a\\,b$`` as a backslash escape and drops the backslash, so the TeX source a
reader sees (or a MathJax viewer typesets) would be wrong. These rules take math spans out before the
escapes run, with the same delimiters as the views' tokenizers (``widgets/js/src/math.ts``): ``$…$`` (not a
price: no space inside either dollar, no digit after the closing one) and ``\\(…\\)`` inline, ``$$…$$`` and
``\\[…\\]`` inline or as a block. A span comes out as its source, delimiters included, in an ``ac-math``
element; the fallback's ``$`` stays money for MathJax (``fallback_html.NO_MATH``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererProtocol
    from markdown_it.rules_block import StateBlock
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

__all__ = ["math_plugin"]

_BLOCK = re.compile(r"(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n+|$)")
_INLINE = (
    re.compile(r"\$\$((?:\\.|[^\\$])+?)\$\$"),
    re.compile(r"\$(?!\s)((?:\\.|[^\\\n$])+?)(?<!\s)\$(?!\d)"),
    re.compile(r"\\\(([\s\S]+?)\\\)"),
)


def _inline(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] not in "$\\":
        return False
    for pattern in _INLINE:
        if (match := pattern.match(state.src, state.pos, state.posMax)) is not None:
            if not silent:
                state.push("math_inline", "span", 0).content = match.group(0)
            state.pos = match.end()
            return True
    return False


def _block(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    begin = state.bMarks[start] + state.tShift[start]
    if state.sCount[start] - state.blkIndent >= 4 or not state.src.startswith(("$$", "\\["), begin):
        return False
    match = _BLOCK.match(state.src, begin)
    if match is None:
        return False
    if silent:
        return True
    last = start
    while last < end and state.bMarks[last] < match.end(0):
        last += 1
    token = state.push("math_block", "div", 0)
    token.content, token.map, token.block = match.group(0).rstrip(), [start, last], True
    state.line = last
    return True


def _render(tag: str, kind: str) -> Callable[..., str]:
    def render(_r: RendererProtocol, tokens: Sequence[Token], idx: int, _o: OptionsDict, _e: EnvType) -> str:
        return f'<{tag} class="ac-math ac-math-{kind}">{escape(tokens[idx].content)}</{tag}>' + (
            "\n" if tag == "div" else ""
        )

    return render


def math_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.before("escape", "math_inline", _inline)
    md.block.ruler.before("fence", "math_block", _block, {"alt": ["paragraph"]})
    md.add_render_rule("math_inline", _render("span", "inline"))
    md.add_render_rule("math_block", _render("div", "display"))
