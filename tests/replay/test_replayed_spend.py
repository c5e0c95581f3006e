"""Replayed spend counts while its turn is in the conversation: running a recorded notebook's cells again
replaces their turns, and the spend the recording answered for them leaves the ledger (nothing was paid),
so the budget leaves the second run the room the first had and its requests match the recording. Live
spend is paid: it never leaves."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText
from agentcell.providers.replay import Replayer
from agentcell.sessions import Session
from agentcell.usage import CacheCreation, Usage, flat_pricing

from .test_recording import Builds, Cells, open_engine, unavailable

_FLAT = flat_pricing(3, 15)
CELLS = [("cell-1", "Summarise the plan."), ("cell-2", "And the next one?")]
# Less than a request's worst case (4,096 output tokens at $15 per million, and its input bound): each goes
# out shortened to what is left, so a run that starts with less left sends other requests.
BUDGET = Decimal("0.0625")


def _script() -> list[ScriptedResponse]:
    return [ScriptedResponse(steps=[ScriptedText(text=f"Answer {n}.")]) for n in (1, 2)]


def _run_all(session: Session, cells: Cells) -> list[int | None]:
    """Each cell in order, under its own id as Run All sends it; the max_tokens each request went out with."""
    sent = []
    for number, (cell_id, text) in enumerate(CELLS, 1):
        cells.run(number)
        result = session.send_sync(text, cell_id=cell_id)
        assert result.stop_reason.type == "end_turn", result.stop_reason
        sent += [e.max_tokens for e in result.events if e.type == "span.model_request_start"]  # type: ignore[union-attr]
    return sent


def test_running_a_replayed_notebook_again_replays_it_again_under_its_budget(tmp_path: Path) -> None:
    cells = Cells()
    recorder = Replayer.for_notebook(tmp_path / "study.ipynb", "record", cell=cells)
    engine, session = open_engine(
        tmp_path / "record.db", recorder, Builds(lambda: ScriptedProvider(_script(), pricing=_FLAT))
    )
    with engine:
        session.update(budget=BUDGET)
        recorded = _run_all(session, cells)
        recorded_spend = session.usage
    assert recorded[0] is not None and recorded[1] is not None and recorded[1] < recorded[0] < 4096

    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "replay", cell=cells)
    engine, session = open_engine(tmp_path / "replay.db", replayer, Builds(unavailable))
    with engine:
        session.update(budget=BUDGET)
        first = _run_all(session, cells)
        after_first = session.usage
        second = _run_all(session, cells)
        assert session.usage == after_first == recorded_spend
        assert first == second == recorded
    assert replayer.live == 0 and replayer.misses == 0 and replayer.recording.answered == 4


def test_live_spend_stays_in_the_ledger_when_its_turn_is_replaced(db_path: Path) -> None:
    provider = ScriptedProvider(pricing=_FLAT)
    engine = Engine(db_path, providers={"scripted": provider})
    with engine:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
        session.send_sync("one", cell_id="c1")
        once = session.usage
        session.send_sync("one", cell_id="c1")
        assert session.usage == once + once and session.usage.spent == 2 * once.spent > 0
        assert len(provider.requests) == 2


def test_a_part_taken_out_of_a_sum_leaves_the_rest() -> None:
    rest = Usage(
        input_tokens=120,
        output_tokens=30,
        cache_read_input_tokens=400,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=50),
        list_cost=Decimal("0.0021"),
        uncached_cost=Decimal("0.0030"),
    )
    part = Usage(input_tokens=20, output_tokens=5, list_cost=Decimal("0.0001"), uncached_cost=Decimal("0.0001"))
    assert (rest + part) - part == rest
    unpriced = Usage(input_tokens=7, unpriced_requests=1)
    assert (rest + unpriced) - unpriced == rest
    assert (Usage() - part).spent == 0  # never below zero
