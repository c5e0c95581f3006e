"""The static fallback of a turn: sanitised HTML built from the same fold as the Markdown fallback."""

from __future__ import annotations

from datetime import UTC, datetime

from agentcell.events import (
    AgentMessage,
    AgentToolResult,
    AgentToolUse,
    ImageBlock,
    ImageSource,
    SessionStatusIdle,
    TextBlock,
)
from agentcell.render.fallback_html import fallback_html
from agentcell.render.fold import TurnFold

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def view_of(*events: object) -> TurnFold:
    view = TurnFold()
    for event in events:
        view.apply(event)  # type: ignore[arg-type]
    return view


def message(text: str) -> AgentMessage:
    return AgentMessage(id="m", created_at=NOW, session_id="s", content=[TextBlock(text=text)])


def test_model_html_comes_out_as_text() -> None:
    html = fallback_html(
        view_of(message('Hi <script>alert(1)</script> <img src=x onerror="alert(2)"> **bold**')), footer="f"
    )
    assert "<script" not in html and "onerror=" not in html.replace("onerror=&quot;", "")
    assert "&lt;script&gt;" in html and "<strong>bold</strong>" in html


def test_links_and_images_are_restricted() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    html = fallback_html(
        view_of(
            message(
                f"[x](javascript:alert(1)) [ok](https://example.org) ![a]({png}) "
                "![b](https://evil.example/t.png) ![c](files/p.png) ![out](/logout) ![d](//evil.example/x)"
            )
        ),
        footer="f",
    )
    assert 'href="javascript:' not in html
    assert 'href="https://example.org"' in html
    assert f'src="{png}"' in html
    # Nothing the browser would fetch with the user's cookies, nor from a third party (issue 21, 5).
    assert html.count("<img") == 1
    assert "[image: out]" in html and "[image: c]" in html


def test_tool_cards_thinking_errors_and_footer() -> None:
    png = ImageBlock(source=ImageSource(media_type="image/png", data="iVBORw0KGgo="))
    svg = ImageBlock(source=ImageSource(media_type="image/svg+xml", data="PHN2Zz4="))
    view = view_of(
        AgentToolUse(
            id="t", created_at=NOW, session_id="s", call_id="c", name="python", input={"code": "print('<b>')"}
        ),
        AgentToolResult(
            id="r", created_at=NOW, session_id="s", tool_use_id="t", content=[TextBlock(text="<b>"), png, svg]
        ),
        message("done"),
        SessionStatusIdle(id="i", created_at=NOW, session_id="s", stop_reason={"type": "end_turn"}),  # type: ignore[arg-type]
    )
    html = fallback_html(view, footer="in 1 · out 2 <x>")
    assert html.startswith('<div class="agentcell-fallback tex2jax_ignore mathjax_ignore">') and html.endswith("</div>")
    assert "<strong>python</strong> — completed" in html
    assert "print(&#x27;&lt;b&gt;&#x27;)" in html and "<pre>&lt;b&gt;</pre>" in html
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in html
    assert "image/svg+xml not shown" in html
    assert "<small>in 1 · out 2 &lt;x&gt;</small>" in html


def test_math_keeps_its_tex_source_and_prices_stay_text() -> None:
    """Markdown's backslash escapes would turn ``a\\,b`` into ``a,b`` (issue 38): a math span is kept as
    written, delimiters included, in an ``ac-math`` element, with the same delimiters as the views."""
    text = "Thin space $a\\,b$ and \\(x\\;y\\), costs $5 and $10.\n\n$$\n\\int_0^1 f\\,dx\n$$\n\nafter \\*"
    html = fallback_html(view_of(message(text)), footer="f")
    assert '<span class="ac-math ac-math-inline">$a\\,b$</span>' in html
    assert '<span class="ac-math ac-math-inline">\\(x\\;y\\)</span>' in html
    assert '<div class="ac-math ac-math-display">$$\n\\int_0^1 f\\,dx\n$$</div>' in html
    assert "costs $5 and $10." in html  # money, not math
    assert "<p>after *</p>" in html  # escapes outside math still work
