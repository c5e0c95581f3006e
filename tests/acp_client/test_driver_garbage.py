"""An agent that writes garbage and then exits: its turn says what it wrote, whichever the client hears first.

The garbage's marker reaches the driver through the SDK's dispatch, while the closed stdout fails the prompt at
once; on a busy machine the prompt's failure can come first. The driver's fakes here set up exactly that order.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from agentcell.acp_client.driver import ExternalDriver
from agentcell.errors import ExternalAgentError
from agentcell.records.stop import ErrorStop


class _Log:
    def __init__(self) -> None:
        self.emitted: list[Any] = []

    def make(self, kind: type, **fields: Any) -> tuple[type, dict[str, Any]]:
        return kind, fields

    def emit(self, event: Any) -> None:
        self.emitted.append(event)


class _Updates:
    def __init__(self) -> None:
        self.over_budget = asyncio.Event()
        self.ended: list[dict[str, Any]] = []

    def end(self, **how: Any) -> None:
        self.ended.append(how)


def _agent(garbage: str | None) -> SimpleNamespace:
    async def aclose(kill: bool = False) -> None:
        pass

    return SimpleNamespace(
        name="broken",
        session_id="s1",
        process=None,
        garbage=garbage,
        garbled=asyncio.Event(),  # never set: the SDK has not dispatched the marker yet
        garbled_failure=lambda when: ExternalAgentError(f"broken wrote something that is not ACP {when}: {garbage!r}"),
        aclose=aclose,
    )


def _answer(garbage: str | None) -> tuple[Any, _Log]:
    async def run() -> tuple[Any, _Log]:
        driver = ExternalDriver.__new__(ExternalDriver)
        driver.agent = _agent(garbage)  # type: ignore[assignment]
        log = _Log()
        prompt: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        prompt.set_exception(ConnectionError("the agent's stdout closed"))
        try:
            answer = await driver._answer(SimpleNamespace(log=log), None, prompt, _Updates())  # type: ignore[arg-type]
        except ConnectionError as exc:
            answer = exc
        return answer, log

    return asyncio.run(run())


def test_garbage_then_exit_fails_the_turn_with_what_the_agent_wrote() -> None:
    answer, log = _answer("this is not JSON")
    assert isinstance(answer, ErrorStop)
    assert "this is not JSON" in answer.message and "during the turn" in answer.message
    assert len(log.emitted) == 1  # the session's error event says the same


def test_an_agent_that_only_exits_fails_the_prompt_as_before() -> None:
    answer, log = _answer(None)
    assert isinstance(answer, ConnectionError) and not log.emitted
