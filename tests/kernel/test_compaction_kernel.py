"""Compaction in the real kernel, on a Claude model served by the loopback Anthropic server: a first turn
near the window, then a turn that is compacted first (the cell shows the card, the request that answers it
is small), ``%compact`` by hand, the gauge in ``%usage`` and the footer; then the notebook replays from its
recording with nothing live, identically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..providers.conftest import API_KEY, SSEServer
from ..providers.prefix_cache import PrefixCache, Turn, answer
from ..replay._transcript import TURN_MIMETYPE
from .conftest import execute, running_kernel

pytestmark = pytest.mark.slow

LONG = "The quick brown fox jumps over the lazy dog. " * 195  # ~8,800 characters: the first turn fits its window
SUMMARY = "SUMMARY: the user pasted a long text about a fox jumping over a dog."
MODEL = "%model anthropic:claude-sonnet-4-5 context_window=4000 max_tokens=256"
CELLS = [f"Keep this text: {LONG}", "What was it about?", "%compact keep the animals", "And the dog?"]


def _events(run: Any) -> list[dict[str, Any]]:
    return [e for d in run.displays if TURN_MIMETYPE in d for e in d[TURN_MIMETYPE]["events"]]


def _seen(run: Any) -> list[Any]:
    """What a cell showed, without what each run mints (ids, times)."""
    shown: list[Any] = []
    for event in _events(run):
        if event["type"] == "agent.message":
            shown.append(["message", [b.get("text") for b in event["content"]]])
        elif event["type"] == "session.context_compacted":
            shown.append(["compacted", event["summary"], event["tokens_before"], event["tokens_after"]])
    return shown or [d.get("text/plain") for d in run.displays]


def _notebook(kc: Any) -> list[Any]:
    assert execute(kc, MODEL).status == "ok"
    return [execute(kc, cell, timeout=60) for cell in CELLS]


def test_a_turn_near_the_window_is_compacted_first_shown_and_replayed_identically(
    kernel_env: dict[str, str], server: SSEServer, tmp_path: Path
) -> None:
    prefix = PrefixCache()
    server.queue(
        answer(prefix, Turn(text="Noted.")),
        answer(prefix, Turn(text=SUMMARY)),
        answer(prefix, Turn(text="A fox.")),
        answer(prefix, Turn(text="SUMMARY: a fox and a dog.")),
        answer(prefix, Turn(text="It was lazy.")),
    )
    kernel_env.update(ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url, AGENTCELL_REPLAY="record")
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        first, second, manual, after = recorded = _notebook(kc)
        usage = execute(kc, "%usage").displays[0]["text/plain"]

    assert all(run.status == "ok" for run in recorded), [run.reply for run in recorded]
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 5
    assert not [e for e in _events(first) if e["type"] == "session.context_compacted"]  # nothing before it
    first_size = len(json.dumps(bodies[0]))
    # The second turn: a summary request (the conversation before it, and the ask), then a small request.
    assert LONG in json.dumps(bodies[1]) and "You write the summary" in json.dumps(bodies[1]["system"])
    assert LONG not in json.dumps(bodies[2]) and SUMMARY in json.dumps(bodies[2]["messages"])
    assert len(json.dumps(bodies[2])) < first_size / 2
    [card] = [e for e in _events(second) if e["type"] == "session.context_compacted"]
    assert card["summary"] == SUMMARY and card["trigger"] == "threshold"
    assert card["tokens_before"] > 0.8 * 4000 > card["tokens_after"]
    assert ["message", ["A fox."]] in _seen(second)
    # The saved notebook's fallback shows the card with the summary, and the footer the gauge.
    fallback = second.final_markdown
    assert "Context compacted" in fallback and "SUMMARY: the user pasted" in fallback
    assert "window " in fallback and "% of 4,000" in fallback
    # %compact by hand: the card, the instructions reached the model; the next turn starts from it.
    shown = manual.displays[-1]
    assert "Context compacted (by hand)" in shown["text/markdown"] and "a fox and a dog" in shown["text/plain"]
    assert "Keep in particular: keep the animals" in json.dumps(bodies[3]["messages"])
    assert "SUMMARY: a fox and a dog." in json.dumps(bodies[4]["messages"]) and SUMMARY not in json.dumps(bodies[4])
    assert ["message", ["It was lazy."]] in _seen(after)
    assert "context window" in usage and "of the 4,000-token context window" in usage

    # Replay: nothing can answer live (the server is gone), and every cell shows what it showed.
    server.close()
    kernel_env.update(AGENTCELL_REPLAY="replay")
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        replayed = _notebook(kc)
    assert all(run.status == "ok" for run in replayed), [run.reply for run in replayed]
    assert [_seen(run) for run in replayed] == [_seen(run) for run in recorded]


def test_a_compaction_at_the_window_the_provider_reported_replays_identically(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    # No context_window in the model config: the window is the provider's report (the scripted provider
    # stands for a real one's model metadata). The replay asks no provider, so it must have it from the
    # recording to compact where the recorded run did.
    script = tmp_path / "script.json"
    replies = ["Noted.", SUMMARY, "A fox."]
    responses = [{"steps": [{"kind": "text", "text": text}]} for text in replies]
    script.write_text(json.dumps({"responses": responses, "context_window": 4000}))
    cells = [f"%model scripted:{script} max_tokens=256", f"Keep this text: {LONG}", "What was it about?"]
    kernel_env.update(AGENTCELL_REPLAY="record")
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        recorded = [execute(kc, cell, timeout=60) for cell in cells]
    assert all(run.status == "ok" for run in recorded), [run.reply for run in recorded]
    [card] = [e for e in _events(recorded[2]) if e["type"] == "session.context_compacted"]
    assert card["summary"] == SUMMARY and card["window"] == 4000

    script.unlink()  # nothing live could answer, or tell the window
    kernel_env.update(AGENTCELL_REPLAY="replay")
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        replayed = [execute(kc, cell, timeout=60) for cell in cells]
    assert all(run.status == "ok" for run in replayed), [run.reply for run in replayed]
    assert [_seen(run) for run in replayed] == [_seen(run) for run in recorded]
    assert _seen(replayed[2])[0][:2] == ["compacted", SUMMARY]
