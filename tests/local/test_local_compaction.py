"""The embedded local model with its real 4,096-token window: a conversation that outgrows it keeps going,
every request fits, the model itself writes the summaries, and nothing leaves the prompt without a
compaction event that says so.

Each cell is a scripted ~400-token note, answers are short (``max_tokens`` 48) and the model compacts at
40 % of its window (``compact_at`` 0.4), so five turns need a compaction (at the fifth) without minutes of
decoding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, StreamEvent, TextPart
from agentcell.providers.local import DEFAULT_N_CTX, LocalProvider

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TURNS = 5
FILLER = "The lighthouse keeper wrote down the weather, the ships and the birds he saw that day. " * 18


class Watched(LocalProvider):
    """The local model, keeping every request it was sent and the prompt's length in its own tokens."""

    def __init__(self) -> None:
        super().__init__("smollm2")
        self.sent: list[tuple[ModelRequest, int]] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.sent.append((request, self.estimate_input_tokens(request)))
        async for event in super().stream(request):
            yield event


def _texts(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))


async def test_a_long_conversation_on_the_local_model_compacts_and_every_request_fits(db_path: Path) -> None:
    provider = Watched()
    engine = Engine(db_path, providers={"local": provider})
    # The real window; compacting at 40 % of it keeps the tokens evaluated (and the run time) modest.
    model = {"id": "local:smollm2", "max_tokens": 48, "temperature": 0, "compact_at": 0.4, "extra": {"seed": 7}}
    session = engine.sessions.create(agent=engine.agents.create(name="tiny", model=model).id)
    notes = [f"Note {n}: the code word is WORD{n}. {FILLER}" for n in range(TURNS)]
    try:
        for n, note in enumerate(notes):
            result = await session.ask(note, cell_id=f"c{n}")
            assert not isinstance(result.stop_reason, ev.ErrorStop), result.stop_reason
        events = session.events()
    finally:
        await engine.aclose()

    # Every request fitted the window with room for its answer.
    assert all(tokens + 48 <= DEFAULT_N_CTX for _, tokens in provider.sent)
    compactions = [e for e in events if isinstance(e, ev.SessionContextCompacted)]
    assert compactions and all(c.summary for c in compactions)
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    # No note disappears without a compaction: each turn's request holds every note since the latest
    # compaction before it, verbatim, and that compaction's summary.
    position = {e.id: i for i, e in enumerate(events)}
    openings = [e for e in events if isinstance(e, ev.UserMessage)]
    turn_requests = [r for r, _ in provider.sent if "Summarise the conversation above" not in _texts(r)]
    assert len(turn_requests) == TURNS
    for n, (request, opening) in enumerate(zip(turn_requests, openings, strict=True)):
        before = [c for c in compactions if position[c.id] < position[opening.id] or c.kept_from == opening.id]
        covered_up_to = position[before[-1].last_event_id] if before else -1
        seen = _texts(request)
        for m, earlier in enumerate(openings[: n + 1]):
            if position[earlier.id] > covered_up_to:
                assert notes[m] in seen, f"note {m} is missing from turn {n}'s request with no compaction"
        if before:
            assert before[-1].summary is not None and before[-1].summary in seen
