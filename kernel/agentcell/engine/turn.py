"""The supervision of a session's turns: one at a time, each ending with ``session.status_idle``.

:class:`TurnSupervisor` starts a turn as a task on the caller's loop and streams its items to the caller;
whatever happens — the end of the work, an error, an interrupt, the caller going away — the turn ends with
its threads stopped, its undelivered guidance dropped, ``session.status_idle`` with the stop reason, and a
:class:`~agentcell.engine.result.TurnResult` in :attr:`TurnSupervisor.last`. The work itself
is a driver chosen once from the turn's opening (``drivers.py``): the model conversation, an outcome, a
workflow run, a custom tool's answer resuming what waited for it, or a host's own (an external agent).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Callable
from typing import Literal, cast

from ..errors import InvalidInputError, SessionBusyError, SessionTerminatedError
from ..events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentThinking,
    AgentToolUse,
    BudgetReached,
    ContentBlock,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    Event,
    Interrupted,
    RequiresAction,
    SessionError,
    SessionStatusIdle,
    SessionStatusRunning,
    SessionSteerUndelivered,
    SessionUsageEvent,
    SpanModelRequestStart,
    StopReason,
    StreamItem,
    UserInterrupt,
    UserMessage,
    is_preview,
)
from ..store.base import Lease
from .context import TURN_SESSION
from .deps import TurnDeps
from .drivers import TurnScope, choose_driver, engine_tools, mount_once
from .log import SessionLog
from .notebook_context import carry_context
from .path import is_opening
from .result import TurnResult
from .runner import TurnRunner
from .threads import ThreadManager

__all__ = ["ActiveTurn", "TurnSupervisor"]

_END = object()


class ActiveTurn:
    """A running turn: its task on its loop, the queue its caller reads, its threads and events so far."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, threads: ThreadManager, lease: Lease, *, queued: bool = True
    ) -> None:
        self.loop = loop
        self.lease = lease
        """The session's lease in the store, held while the turn runs."""
        self.queue: asyncio.Queue[object] | None = asyncio.Queue() if queued else None
        """What the caller of :meth:`TurnSupervisor.stream` reads; None for :meth:`TurnSupervisor.run`, whose
        caller reads the items elsewhere (a listener of the log) or not at all."""
        self.task: asyncio.Task[None] | None = None
        self.threads = threads
        self.events: list[Event] = []
        """The turn's buffered events so far, in order."""

    def see(self, item: StreamItem) -> None:
        if not is_preview(item):
            self.events.append(cast(Event, item))
        if self.queue is not None:
            self.queue.put_nowait(item)

    def ended(self) -> None:
        """Tell the caller of :meth:`TurnSupervisor.stream` that the turn ended."""
        if self.queue is not None:
            self.queue.put_nowait(_END)

    def call_soon(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the turn's event loop: at once from it, else scheduled thread-safely."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            action()
        else:
            self.loop.call_soon_threadsafe(action)


class TurnSupervisor:
    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._turn: ActiveTurn | None = None
        self._mounted = False
        self.last: TurnResult | None = None
        """The latest turn's result once it ended, however it ended."""

    @property
    def running(self) -> bool:
        return self._turn is not None

    def mounted(self) -> None:
        """The resources were mounted outside a turn (``session.mount()``): turns need not mount them."""
        self._mounted = True

    # ------------------------------------------------------------------------------------------ the tools

    def offered_tool_names(self, deps: TurnDeps) -> list[str]:
        """The tools the model is offered at the next turn: the host's, the agent's custom tools, and the
        engine's own."""
        own = engine_tools(self.log, deps, ThreadManager(self.log, deps))
        return [t.name for t in TurnRunner(self.log, deps, tools=own).offered_tools(self.log.agent)]

    # ------------------------------------------------------------------------------------------ running

    async def stream(
        self, opening: list[Event], deps: TurnDeps, tool_choices: tuple[str, ...]
    ) -> AsyncIterator[StreamItem]:
        """Run one turn from ``opening``, yielding its items until ``session.status_idle``. Closing the
        iterator early (or cancelling the task that iterates) interrupts the turn."""
        turn = self._start(opening, deps, tool_choices)
        queue = turn.queue
        assert queue is not None
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    return
                yield cast(StreamItem, item)
        finally:
            await self._interrupt_unfinished(turn)

    async def run(self, opening: list[Event], deps: TurnDeps, tool_choices: tuple[str, ...] = ()) -> TurnResult:
        """Run one turn from ``opening`` to its end and return its result, queueing none of its items: for a
        caller that sees them through a listener of the log, or not at all (a workflow run's hundreds of
        thread events would otherwise each wake it). Cancelling the caller interrupts the turn."""
        turn = self._start(opening, deps, tool_choices, queued=False)
        assert turn.task is not None
        try:
            await asyncio.shield(turn.task)
        finally:
            await self._interrupt_unfinished(turn)
        assert self.last is not None  # set by the turn's ending, however it ended
        return self.last

    async def _interrupt_unfinished(self, turn: ActiveTurn) -> None:
        task = turn.task
        if task is not None and not task.done():
            # The caller went away mid-turn (closed the iterator, or its task was cancelled, e.g. by a kernel
            # interrupt): that is the user interrupting.
            self.log.emit(self.log.make(UserInterrupt))
            task.cancel()
            await asyncio.wait({task}, timeout=5)

    def _start(
        self, opening: list[Event], deps: TurnDeps, tool_choices: tuple[str, ...], *, queued: bool = True
    ) -> ActiveTurn:
        with self._lock:
            if self._turn is not None:
                raise SessionBusyError(
                    f"a turn is already running in session {self.log.id}; interrupt it or wait for it to finish"
                )
            # One driver per session on a shared database: refused (SessionDrivenElsewhereError) while another
            # kernel holds the lease; then catch up with whatever other kernels wrote before this turn.
            lease = self.log.store.take_lease(self.log.id)
            try:
                self.log.catch_up(deps.agents)
                if self.log.record.terminated_at is not None:
                    raise SessionTerminatedError(f"session {self.log.id} was terminated; create a new session")
            except BaseException:
                lease.release()
                raise
            self.log.refresh_secrets()
            turn = ActiveTurn(asyncio.get_running_loop(), ThreadManager(self.log, deps), lease, queued=queued)
            self._turn = turn
        unsubscribe = self.log.subscribe(turn.see)
        context = contextvars.copy_context()  # the turn's tasks and threads know which session acts
        context.run(TURN_SESSION.set, self.log.id)
        turn.task = turn.loop.create_task(self._run(turn, opening, deps, unsubscribe, tool_choices), context=context)
        turn.task.add_done_callback(lambda _: lease.release())  # also if the turn's own ending failed
        return turn

    async def _run(
        self,
        turn: ActiveTurn,
        opening: list[Event],
        deps: TurnDeps,
        unsubscribe: Callable[[], None],
        tool_choices: tuple[str, ...],
    ) -> None:
        log = self.log
        stop: StopReason = EndTurn()
        first = opening[-1]
        try:
            driver = choose_driver(log, deps, first)  # once: what runs inside this turn
            driver.before_opening()
            opening = self._rerun(opening)
            first = opening[-1]
            for event in opening:
                log.emit(event)
            if (early := driver.opened()) is not None:
                stop = early
            else:
                log.emit(log.make(SessionStatusRunning))
                scope = TurnScope(log, deps, turn.threads, first, tool_choices, lambda: self._mount(deps))
                stop = await driver.drive(scope)
                if isinstance(stop, EndTurn) and (paused := turn.threads.awaiting_client()):
                    stop = RequiresAction(event_ids=paused)  # threads wait for the client's answers
        except asyncio.CancelledError:
            stop = Interrupted()
        except Exception as exc:  # a bug must not leave the session stuck in "running"
            message = f"{type(exc).__name__}: {exc}"
            log.emit(log.make(SessionError, error=ErrorInfo(type="unknown_error", message=message)))
            stop = ErrorStop(message=message)
        finally:
            try:
                await turn.threads.close(finish=isinstance(stop, EndTurn))
            except asyncio.CancelledError:  # interrupted again while the threads were stopping
                stop = Interrupted()
            # Guidance that came after the last request reached no model: say so, and keep it out of the
            # conversation (the user saw it refused, not answered).
            for blocks in log.drop_steering():
                log.emit(log.make(SessionSteerUndelivered, content=blocks))
            if is_opening(first) and (reason := _left_nothing(stop, turn.events)) is not None:
                log.supersede([first.id], reason)
            if isinstance(stop, BudgetReached):
                log.emit(log.make(SessionUsageEvent, usage=log.usage, budget=log.budget))
            log.emit(log.make(SessionStatusIdle, stop_reason=stop))
            self.last = TurnResult(stop_reason=stop, events=turn.events)
            with self._lock:
                self._turn = None
            turn.lease.release()  # after status_idle, before the caller hears the turn ended
            unsubscribe()
            turn.ended()

    async def _mount(self, deps: TurnDeps) -> None:
        """Mount the session's resources, once per session (not again once ``session.mount()`` did)."""
        if not self._mounted:
            await mount_once(self.log, deps)
            self._mounted = True

    def _rerun(self, opening: list[Event]) -> list[Event]:
        """When the turn's cell ran before, its turn and every later one leave the path; the opening, with
        the notebook's cells its earlier turn was sent carried over (``carry_context``)."""
        log = self.log
        first = opening[-1]
        cell = getattr(first, "cell_id", None)
        if not isinstance(cell, str):
            return opening
        leaving = log.path().rerun(cell)
        if leaving and isinstance(first, UserMessage) and first.context is not None:
            opening = [*opening[:-1], carry_context(first, leaving, log.events(types=("user.message",)))]
        log.supersede(leaving, "rerun", cell_id=cell)
        return opening

    # ------------------------------------------------------------------------------------------ from outside

    def interrupt(self, *, thread_id: str | None = None) -> None:
        """Stop the running turn (from any thread), or only one of its spawned threads."""
        turn = self._turn
        if turn is None or turn.task is None:
            return

        def cancel() -> None:
            if turn.task is None or turn.task.done():
                return
            if thread_id is None:
                self.log.emit(self.log.make(UserInterrupt))
                turn.task.cancel()
            elif turn.threads.cancel(thread_id):
                self.log.emit(self.log.make(UserInterrupt, thread_id=thread_id))

        turn.call_soon(cancel)

    def steer(self, blocks: list[ContentBlock], *, thread_id: str | None = None) -> None:
        """Queue guidance for the running turn's next request (from any thread)."""
        turn = self._turn
        if turn is None:
            raise InvalidInputError(f"no turn is running in session {self.log.id}; send the guidance as a message")
        turn.call_soon(lambda: self.log.steer(thread_id, blocks))


def _left_nothing(stop: StopReason, events: list[Event]) -> Literal["refused", "failed"] | None:
    """Why a turn that ended leaves no prompt behind: refused before any request, or failed before the
    model showed anything. None when the user saw the model's work (an interrupted turn keeps it)."""
    if isinstance(stop, BudgetReached) and not any(isinstance(e, SpanModelRequestStart) for e in events):
        return "refused"
    shown = (AgentMessage, AgentThinking, AgentToolUse, AgentCustomToolUse)
    if isinstance(stop, ErrorStop) and not any(isinstance(e, shown) for e in events):
        return "failed"
    return None
