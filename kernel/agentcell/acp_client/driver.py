"""The external agent's turn driver: the notebook's message goes to the agent as ``session/prompt``.

The engine runs it as it runs its own drivers (``engine/drivers.py``), through ``TurnDeps.driver``: the
supervisor keeps the lease, the running and idle statuses and the interrupt; this driver starts the agent
when it is not running, sends the message (with the notebook's context as text before it), folds the
agent's updates into events, and ends the turn with the agent's stop reason. An interrupt (Stop, the
kernel's interrupt) sends ``session/cancel`` and waits a moment for the agent's last updates; the budget
cancels the same way once the agent's reported cost reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from acp.helpers import image_block, text_block
from acp.schema import PromptResponse

from acp import RequestError

from ..engine.drivers import TurnScope
from ..engine.notebook_context import context_text
from ..errors import ExternalAgentError
from ..events import (
    BudgetReached,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    Event,
    ImageBlock,
    Interrupted,
    SessionError,
    SpanModelRequestEnd,
    SpanModelRequestStart,
    StopReason,
    TextBlock,
    UserMessage,
)
from .connection import ExternalAgent
from .recording import ExchangeEntry, ExchangeReplay
from .turn import AgentTurn
from .updates import TurnUpdates

__all__ = ["ExternalDriver", "driver_for"]

EXIT_MOMENT = 0.5
"""Seconds an agent that wrote garbage has to exit, if that was its crash, before it is told it wrote garbage."""
CANCEL_GRACE = 3.0
"""Seconds the agent has to answer its cancelled prompt before the turn ends without its answer and the agent
is killed: less than the supervisor waits for an interrupted turn (``engine/turn.py``), so the cell says so."""


class ExternalDriver:
    """A :class:`~agentcell.engine.drivers.TurnDriver` whose work is the external agent's turn."""

    def __init__(self, agent: ExternalAgent, first: UserMessage, replay: ExchangeReplay | None = None) -> None:
        self.agent = agent
        self.first = first
        self.replay = replay
        self.text = "".join(b.text for b in first.content if isinstance(b, TextBlock)).strip()
        """What a recorded exchange is looked up by: the message's own text (not the notebook's context)."""

    def before_opening(self) -> None:
        pass

    def opened(self) -> StopReason | None:
        return None

    async def drive(self, scope: TurnScope) -> StopReason:
        agent, log, replay = self.agent, scope.log, self.replay
        if replay is not None and replay.mode in ("replay", "auto"):
            if (entry := replay.recording.take(agent.name, self.text)) is not None:
                return await self._replayed(scope, entry)
            if replay.mode == "replay":
                where = replay.recording.path.name
                return _failed(scope, f"not recorded: {agent.name}'s answer to {self.text[:80]!r} is not in {where}; "
                               "`%replay auto` asks the agent itself, `%record` re-records")  # fmt: skip
        try:
            conn = await agent.ensure(scope.deps.workspace)
            await agent.apply_pending()  # %agent acp set, since the last turn
        except ExternalAgentError as exc:
            return _failed(scope, str(exc))
        assert agent.session_id is not None
        session_id = agent.session_id
        updates = TurnUpdates(log, agent.reported_cost)
        recording = replay is not None and replay.mode == "record"
        if recording:
            updates.seen = []
        turn = agent.turn = AgentTurn(agent.label, log, scope.deps, updates)
        # The agent's turn is the turn's one "model request": the cost meter and the stats count it.
        span = log.make(SpanModelRequestStart, model=f"acp:{agent.name}")
        log.emit(span)
        ended: str | None = None
        prompt = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=_prompt(self.first)))
        try:
            answer = await self._answer(scope, conn, prompt, updates)
            if not isinstance(answer, PromptResponse):
                return answer
            response = answer
            ended = response.stop_reason
        except (ConnectionError, RequestError, ValueError) as exc:
            updates.end(reason=f"{agent.name} broke off")
            return _failed(scope, await self._broken(exc))
        finally:
            agent.turn = None
            agent.reported_cost = updates.reported_cost
            end = log.make(
                SpanModelRequestEnd, model_request_start_id=span.id, model_usage=updates.spent, stop_reason=ended
            )
            log.emit(end)
        updates.end()
        if recording and replay is not None and updates.seen is not None:
            replay.recording.append(agent.name, self.text, updates.seen, response.stop_reason)
        for refused in turn.refused:  # the agent was told; the user sees it too
            message = f"{agent.label} was refused {refused}"
            log.emit(log.make(SessionError, error=ErrorInfo(type="external_agent_refused", message=message)))
        return _stop(response)

    async def _replayed(self, scope: TurnScope, entry: ExchangeEntry) -> StopReason:
        """The recorded exchange played into the turn, the agent not started: the same events again."""
        log, agent = scope.log, self.agent
        updates = TurnUpdates(log, agent.reported_cost)
        span = log.make(SpanModelRequestStart, model=f"acp:{agent.name}")
        log.emit(span)
        try:
            for update in entry.parsed():
                updates.apply(update)
                await asyncio.sleep(0)  # let interrupts and the renderer in, as the agent's pipe would
        except asyncio.CancelledError:
            updates.end(interrupted=True)
            raise
        finally:
            agent.reported_cost = updates.reported_cost
            end = log.make(SpanModelRequestEnd, model_request_start_id=span.id, model_usage=updates.spent,
                           stop_reason=entry.stop_reason, source="replay")  # fmt: skip
            log.emit(end)
        updates.end()
        return _stop(PromptResponse.model_validate({"stopReason": entry.stop_reason}))

    async def _answer(
        self, scope: TurnScope, conn: Any, prompt: asyncio.Future[PromptResponse], updates: TurnUpdates
    ) -> PromptResponse | StopReason:
        """The agent's answer to the prompt; or how the turn ended first: the budget reached (cancelled),
        garbage on the agent's stdout (the agent stopped). An interrupt cancels the agent's turn too."""
        agent = self.agent
        session_id = agent.session_id
        budget = asyncio.ensure_future(updates.over_budget.wait())
        garbled = asyncio.ensure_future(agent.garbled.wait())
        try:
            waiting: set[asyncio.Future[Any]] = {prompt, budget, garbled}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            # An agent that writes garbage and then exits fails the prompt (its stdout closed) maybe before the
            # SDK has dispatched the garbage's marker: what it wrote is known already, and says more.
            if prompt.done() and not (agent.garbage is not None and _raised(prompt)):
                return prompt.result()
            if garbled.done() or agent.garbage is not None:
                prompt.cancel()
                updates.end(reason=f"{agent.name} wrote garbage")
                return _failed(scope, await self._garbled())
            answered = await _cancel(conn, session_id, prompt)  # the budget was reached first
            updates.end(interrupted=True, reason="the session's budget was reached")
            if not answered:
                await self._unanswered(scope)
            return BudgetReached()
        except asyncio.CancelledError:
            answered = await _cancel(conn, session_id, prompt)
            updates.end(interrupted=True)
            if not answered:
                await self._unanswered(scope)
            raise
        finally:
            budget.cancel()
            garbled.cancel()

    async def _garbled(self) -> str:
        """What the agent that wrote garbage did: broke off (often garbage is its last words: a crash), or
        went on running (then it is stopped)."""
        agent, process = self.agent, self.agent.process
        if process is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.wait()), EXIT_MOMENT)
            if process.returncode is not None:
                return await self._broken(ConnectionError()) + f"\nbefore it wrote {agent.garbage!r} on its stdout"
        message = str(agent.garbled_failure("during the turn"))
        await agent.aclose()
        return message

    async def _unanswered(self, scope: TurnScope) -> None:
        """The agent did not end its cancelled turn: said in the cell, and the agent stopped (it may be
        stuck; the next message starts it again with a new session)."""
        agent, log = self.agent, scope.log
        message = (
            f"{agent.name} did not end its turn within {CANCEL_GRACE:.0f} s of session/cancel; "
            "it was stopped, the next message starts it again"
        )
        log.emit(log.make(SessionError, error=ErrorInfo(type="external_agent_error", message=message)))
        await agent.aclose(kill=True)

    async def _broken(self, exc: BaseException) -> str:
        """What broke: the agent's process ended (its status and the end of its stderr), or it answered
        the prompt with an error."""
        agent = self.agent
        process = agent.process
        if isinstance(exc, ConnectionError) and process is not None:
            with contextlib.suppress(TimeoutError):  # its stdout closed: its exit status comes a moment later
                await asyncio.wait_for(process.wait(), 2)
            status = "still running" if process.returncode is None else f"exit status {process.returncode}"
            message = str(agent.failure(f"{agent.name} broke off mid-turn ({status})"))
            await agent.aclose()
            return f"{message}\nthe next message starts it again"
        return f"{agent.name} answered the prompt with an error: {exc}"


def _raised(future: asyncio.Future[Any]) -> bool:
    return not future.cancelled() and future.exception() is not None


async def _cancel(conn: Any, session_id: str | None, prompt: asyncio.Future[PromptResponse]) -> bool:
    """``session/cancel``, then a moment for the agent to answer the prompt (its last updates with it);
    whether it answered (with anything, an error too) within that moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CANCEL_GRACE  # one grace for both: its pipe may be full, as it reads nothing
    with contextlib.suppress(Exception):
        await asyncio.wait_for(conn.cancel(session_id=session_id), CANCEL_GRACE)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(prompt), max(0.0, deadline - loop.time()))
    answered = prompt.done()
    prompt.cancel()
    return answered


def _failed(scope: TurnScope, message: str) -> ErrorStop:
    log = scope.log
    log.emit(log.make(SessionError, error=ErrorInfo(type="external_agent_error", message=message)))
    return ErrorStop(message=message)


def _stop(response: PromptResponse) -> StopReason:
    match response.stop_reason:
        case "cancelled":
            return Interrupted()
        case "refusal":
            return ErrorStop(message="the agent refused to answer")
        case _:  # end_turn, max_tokens, max_turn_requests: the agent ended its turn
            return EndTurn()


def _prompt(message: UserMessage) -> list[Any]:
    """The message as ACP content: the notebook's context first, as text, then the message's own blocks."""
    blocks: list[Any] = []
    if message.context is not None and not message.context.empty:
        blocks.append(text_block(context_text(message.context)))
    for block in message.content:
        if isinstance(block, TextBlock):
            blocks.append(text_block(block.text))
        elif isinstance(block, ImageBlock) and block.source.type == "base64":
            blocks.append(image_block(block.source.data, block.source.media_type))
    return blocks


def driver_for(agent: ExternalAgent, replay: ExchangeReplay | None = None) -> Any:
    """What ``TurnDeps.driver`` calls: the agent's driver for a notebook message, None for anything else (an
    outcome, a workflow run, a custom tool's answer stay the engine's own)."""

    def choose(first: Event) -> ExternalDriver | None:
        if isinstance(first, UserMessage) and not first.steered:
            return ExternalDriver(agent, first, replay)
        return None

    return choose
