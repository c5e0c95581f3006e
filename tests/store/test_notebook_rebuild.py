"""A conversation rebuilt from a saved notebook's turns (``kernel/notebook_turns.py``), on both stores: the
new session's log holds the turns the notebook shows, in the order they ran, under new ids; what the model
gets next is that conversation; the old requests' spend does not come along."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcell import Engine, ScriptedProvider
from agentcell.kernel.notebook_turns import read_turns, rebuild
from agentcell.render.renderer import TURN_MIMETYPE as TURN
from agentcell.render.renderer import fallback_bundle, fold_of

from ..conftest import SONNET_LIKE
from .conftest import Backend

LONG = "three, at length:" + " word" * 600  # the saved turn shows a preview of it; its cell holds it whole


def _said(provider: ScriptedProvider) -> list[str]:
    request = provider.requests[-1]
    return ["".join(getattr(p, "text", "") for p in m.content) for m in request.messages if m.role == "user"]


def _cell(source: str, bundle: dict[str, Any]) -> dict[str, Any]:
    output = {"output_type": "display_data", "data": bundle, "metadata": {}}
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": [output], "execution_count": 1}


def test_a_conversation_is_rebuilt_from_the_turns_a_notebook_shows(backend: Backend, tmp_path: Path) -> None:
    provider = ScriptedProvider(pricing=SONNET_LIKE)
    with Engine(backend.db, providers={"scripted": provider}) as engine:
        agent = engine.agents.create(name="a", model="scripted")
        original = engine.sessions.create(agent=agent.id, budget="1.00")
        bundles = {}
        for text, cell in (("one", "c0"), ("two", "c1"), (LONG, "c2")):
            original.send_sync(text, cell_id=cell)
            bundles[text] = fallback_bundle(fold_of(original.last_turn), original.last_turn)
        assert original.usage.list_cost
        # Cells moved since (two above one), one pasted with its output, and an output no agentcell wrote.
        broken = {TURN: {"events": [{"id": "sevt_x", "type": "user.message", "content": "not a list"}]}}
        cells = [_cell("two", bundles["two"]), _cell("one", bundles["one"]), _cell("one", bundles["one"])]
        cells += [_cell(LONG, bundles[LONG]), _cell("?", broken)]
        notebook = tmp_path / "daily.ipynb"
        notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        assert len(bundles[LONG][TURN]["events"][0]["content"][0]["text"]) < len(LONG)

        rebuilt = engine.sessions.create(agent=agent.id, budget="1.00")
        turns = read_turns(notebook)
        assert rebuild(engine.store, rebuilt.id, turns) == 3  # the pasted one counts once, the broken one not at all
        events = rebuilt.events()
        assert {e.session_id for e in events} == {rebuilt.id}
        assert not {e.id for e in events} & {e.id for e in original.events()}
        assert not [e.type for e in events if e.type.startswith("span.") or e.type == "session.usage"]
        assert [e.cell_id for e in events if e.type == "user.message"] == ["c0", "c1", "c2"]  # as they ran
        assert not rebuilt.usage.list_cost  # the old requests' spend was the store's that ran them
        rebuilt.send_sync("four")
        assert _said(provider) == ["one", "two", LONG, "four"]
