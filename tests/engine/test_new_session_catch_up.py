"""A session made by this engine starts knowing its log is empty, so its first turn skips re-reading the
record; what another engine on the same database wrote before that turn is still folded in."""

from __future__ import annotations

from pathlib import Path

from agentcell import Engine, ScriptedProvider, ScriptedResponse
from agentcell.providers.base import TextPart


def _reply(text: str) -> ScriptedResponse:
    return ScriptedResponse.model_validate({"steps": [{"kind": "text", "text": text}]})


def _user_texts(provider: ScriptedProvider) -> list[str]:
    request = provider.requests[-1]
    return [
        block.text
        for message in request.messages
        if message.role == "user"
        for block in message.content
        if isinstance(block, TextPart)
    ]


async def test_a_new_sessions_first_turn_sees_what_another_engine_wrote_first(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    here_model, there_model = ScriptedProvider([_reply("here")]), ScriptedProvider([_reply("there")])
    here = Engine(db, providers={"scripted": here_model})
    session = here.sessions.create(agent=here.agents.create(name="a", model="scripted").id)

    there = Engine(db, providers={"scripted": there_model})
    async for _ in there.sessions.get(session.id).send("written elsewhere"):
        pass
    await there.aclose()

    async for _ in session.send("written here"):
        pass
    assert _user_texts(here_model) == ["written elsewhere", "written here"]
    assert [e.type for e in session.events()].count("agent.message") == 2
    await here.aclose()


async def test_a_new_session_with_nothing_written_elsewhere_asks_the_store_once(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "db", providers={"scripted": ScriptedProvider([_reply("ok")])})
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    reads: list[str] = []
    get_session = engine.store.get_session

    def counted(session_id: str) -> object:
        reads.append(session_id)
        return get_session(session_id)

    engine.store.get_session = counted  # type: ignore[method-assign]
    async for _ in session.send("hello"):
        pass
    assert reads == []  # the record it was made from is the one in the store
    await engine.aclose()
