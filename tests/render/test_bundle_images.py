"""A finished turn's bundle keeps each tool image once (issue 38): a plot of ~15 KB saved three times (the
events, the HTML and the Markdown fallbacks) made a 43 KB output. The HTML fallback holds it; the saved
events point there and the Markdown says where it is."""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime

from agentcell.engine.result import TurnResult
from agentcell.events import (
    AgentMessage,
    AgentToolResult,
    AgentToolUse,
    ImageBlock,
    ImageSource,
    SessionStatusIdle,
    TextBlock,
)
from agentcell.render.renderer import TURN_MIMETYPE, fallback_bundle, fold_of

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PLOT = base64.b64encode(os.urandom(11_000)).decode()  # a plot's size as base64: ~15 KB


def _turn(*images: ImageBlock) -> TurnResult:
    events = [
        AgentToolUse(id="t", created_at=NOW, session_id="s", call_id="c", name="python", input={"code": "plot()"}),
        AgentToolResult(
            id="r", created_at=NOW, session_id="s", tool_use_id="t", content=[TextBlock(text="<Figure>"), *images]
        ),
        AgentMessage(id="m", created_at=NOW, session_id="s", content=[TextBlock(text="Plotted.")]),
        SessionStatusIdle(id="i", created_at=NOW, session_id="s", stop_reason={"type": "end_turn"}),  # type: ignore[arg-type]
    ]
    return TurnResult(stop_reason="end_turn", events=list(events))  # type: ignore[arg-type]


def test_a_plot_is_saved_once_and_the_events_point_to_it() -> None:
    result = _turn(ImageBlock(source=ImageSource(media_type="image/png", data=PLOT)))
    bundle = fallback_bundle(fold_of(result), result, html=True)
    saved = json.dumps(bundle)
    assert saved.count(PLOT) == 1
    # One plot and the turn around it: well under two copies (three made 43 KB of a 15 KB plot).
    assert len(saved) < len(PLOT) + 4_000, len(saved)
    assert f'data:image/png;base64,{PLOT}" alt="tool output image" data-image="t/1"' in bundle["text/html"]
    result_event = next(e for e in bundle[TURN_MIMETYPE]["events"] if e["type"] == "agent.tool_result")
    assert result_event["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "",
        "in": "text/html",
    }
    assert result_event["content"][0] == {"type": "text", "text": "<Figure>"}
    assert "_(image: in this output's HTML)_" in bundle["text/markdown"]


def test_an_image_the_html_does_not_show_stays_in_its_event_and_markdown_keeps_images_without_html() -> None:
    svg = base64.b64encode(b"<svg/>").decode()
    result = _turn(ImageBlock(source=ImageSource(media_type="image/svg+xml", data=svg)))
    bundle = fallback_bundle(fold_of(result), result, html=True)
    result_event = next(e for e in bundle[TURN_MIMETYPE]["events"] if e["type"] == "agent.tool_result")
    assert result_event["content"][1]["source"]["data"] == svg  # not drawn in the HTML: the event keeps it
    png = _turn(ImageBlock(source=ImageSource(media_type="image/png", data=PLOT)))
    markdown_only = fallback_bundle(fold_of(png), png)  # the Markdown renderer's bundle has no HTML
    assert (
        "text/html" not in markdown_only
        and f"![output](data:image/png;base64,{PLOT})" in markdown_only["text/markdown"]
    )
    events = markdown_only[TURN_MIMETYPE]["events"]
    assert next(e for e in events if e["type"] == "agent.tool_result")["content"][1]["source"]["data"] == PLOT
