"""A session's log as the engine works on it: the one place a turn's events go through.

:class:`SessionLog` appends every buffered event to the store (previews are shown, never stored), then
shows each item to every listener; keeps the message history of each thread folded from the log; keeps the
usage ledger and the budget held by requests in flight; and queues the guidance steered into a running turn
until the runner delivers it. Everything under ``engine/`` works on a ``SessionLog`` and a
:class:`~agentcell.engine.deps.TurnDeps`; the public ``Session`` handle wraps both.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Collection, Iterator
from decimal import Decimal
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel

from .._secrets import StreamScrubber, scrub, secret_values
from ..events import (
    ContentBlock,
    ContentDelta,
    Event,
    EventDelta,
    Outcome,
    RequiresAction,
    SessionOutcomeUpdated,
    SessionStatusIdle,
    SessionTurnsSuperseded,
    SessionUsageEvent,
    StreamItem,
    TextBlock,
    UserCustomToolResult,
    is_preview,
    stream_item_adapter,
)
from ..ids import new_id
from ..records.agent import Agent, materialize
from ..records.common import utc_now
from ..records.session import SessionRecord
from ..store.base import Store
from ..usage import Budget, Usage
from .cache_watch import CacheWatch
from .ceiling import SPEND_CEILING
from .deps import AgentSource
from .history import HISTORY_EVENT_TYPES, History
from .path import PATH_EVENT_TYPES, REPLAYED_USAGE_EVENT_TYPES, ActivePath, on_path, replayed_usage

__all__ = ["Listener", "SessionLog"]

E = TypeVar("E", bound=BaseModel)
Listener = Callable[[StreamItem], None]

_UNSEEN = "(not looked yet)"


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class SessionLog:
    def __init__(self, store: Store, record: SessionRecord, agent: Agent, *, new: bool = False) -> None:
        """``new``: the session was created just now, here, so the store holds none of its events yet (its
        first turn then catches up with one query rather than re-reading the record it was made from)."""
        self.store = store
        self._record = record
        self._agent = agent
        self._histories: dict[str | None, History] = {}
        self._usage: Usage | None = None
        self._reserved = Decimal(0)
        self._settling: list[asyncio.Future[None]] = []
        """Requests waiting for others' reservations to be released."""
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._steering: dict[str | None, list[list[ContentBlock]]] = {}
        """Per thread: guidance steered in and not yet given to the model."""
        self._secrets = secret_values()
        """What no event may carry (API keys a model or a tool printed): scrubbed on the way in."""
        self._streams = StreamScrubber()
        self._last_known: str | None = None if new else _UNSEEN
        """The id of the newest event this log knows the store holds (see :meth:`catch_up`)."""
        self.cache_watch = CacheWatch()
        """Whether the prompt cache keeps missing, across the session's turns (``cache_watch``)."""
        self._batch: list[StreamItem] | None = None
        """Items emitted inside :meth:`batched`, not yet stored nor shown."""
        self._held: list[StreamItem] = []
        """Items a block ended with ``hold`` kept for the next block's transaction (see :meth:`batched`)."""

    # ------------------------------------------------------------------------------------------ the session

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def record(self) -> SessionRecord:
        return self._record

    @property
    def agent(self) -> Agent:
        """The pinned agent version."""
        return self._agent

    @property
    def budget(self) -> Budget | None:
        return self._record.budget

    @property
    def tool_scope(self) -> str:
        """Where the session's agent's tools are registered: the agent's id, shared by its sessions, unless
        this session replaced the agent's MCP servers for itself (their tools are then its own)."""
        if "mcp_servers" in self._record.agent_overrides:
            return f"{self._agent.id}/{self.id}"
        return self._agent.id

    def replace(self, record: SessionRecord, agent: Agent) -> None:
        """The session was updated (its record stored): work on the new record and pinned agent."""
        self._record = record
        self._agent = agent

    def catch_up(self, agents: AgentSource) -> None:
        """On a shared database another kernel may have driven the session since this log last looked: when
        the store's newest event is not the newest one known here, fold history and usage from the store
        again and re-read the record (its agent version, its termination). One query when nothing changed."""
        last = self.store.last_event(self.id, None)
        last_id = last.id if last is not None else None
        seen, self._last_known = self._last_known, last_id
        if last_id == seen:
            return
        self._histories.clear()
        self._usage = None
        record = self.store.get_session(self.id)
        if record is not None and record != self._record:
            self.replace(record, materialize(agents.get(record.agent_id, record.agent_version), record.agent_overrides))

    # ------------------------------------------------------------------------------------------ events

    def make(self, cls: type[E], **fields: Any) -> E:
        fields.setdefault("id", new_id("sevt"))
        return cls(created_at=utc_now(), session_id=self.id, **fields)

    def refresh_secrets(self) -> None:
        """Read the process's secrets again (a turn starts: a key may have been set since)."""
        self._secrets = secret_values()

    def _scrubbed(self, item: StreamItem) -> StreamItem | None:
        if isinstance(item, EventDelta):
            content = item.delta.content
            if not isinstance(content, TextBlock):
                return item
            # A key split across two deltas is in neither: the text is scrubbed as one stream.
            text = self._streams.feed((item.event_id, item.delta.index), content.text, self._secrets)
            if text == content.text:
                return item
            if not text:
                return None  # all of it held back until the next delta shows whether it begins a key
            delta = item.delta.model_copy(update={"content": content.model_copy(update={"text": text})})
            return item.model_copy(update={"delta": delta})
        raw = item.model_dump_json()
        cleaned = scrub(raw, self._secrets)
        return item if cleaned == raw else stream_item_adapter.validate_json(cleaned)

    def _flush_stream(self, event: Event) -> None:
        """Show the text still held back of the deltas that previewed ``event``, before ``event`` itself."""
        for index, text in self._streams.flush(event.id):
            delta = ContentDelta(index=index, content=TextBlock(text=text))
            self.notify(EventDelta(event_id=event.id, delta=delta, thread_id=getattr(event, "thread_id", None)))
        if event.type == "session.status_idle":
            self._streams.clear()  # previews of a failed attempt never end with an event of their own

    def emit(self, item: StreamItem) -> StreamItem | None:
        """Append a buffered event durably (previews are not stored), then show it to every listener. No
        secret of the process reaches either: it is replaced by ``[redacted]`` first. Inside
        :meth:`batched`, both wait for the end of the block. Returns the item as stored and shown (``item``
        itself unless a secret was scrubbed from it; None for a preview held back)."""
        if self._held and self._batch is None:
            self._flush()  # what a block held goes first
        if self._secrets:
            scrubbed = self._scrubbed(item)
            if scrubbed is None:
                return None
            item = scrubbed
            if not is_preview(item):
                self._flush_stream(cast(Event, item))
        if self._batch is not None:
            self._batch.append(item)
            return item
        if not is_preview(item):
            event = cast(Event, item)
            self.store.append(event)
            self._applied(event)
        self.notify(item)
        return item

    def _applied(self, event: Event) -> None:
        self._last_known = event.id
        history = self._histories.get(event.thread_id)
        if history is not None:
            history.apply(event)

    @contextlib.contextmanager
    def batched(self, *, hold: bool = False) -> Iterator[None]:
        """Store the events emitted inside the block in one transaction at its end, then show them in order.

        For a run of events emitted one after another with nothing awaited between them (a step thread's
        opening, its closing and the workflow run's note of it): they become durable together before
        anything waits on a model or a tool, so a crash keeps all of them or none (one by one, it could
        keep the first few), and the store commits once instead of once each. Stored before shown holds as
        for :meth:`emit`. Nested blocks join the outermost; a read of the log inside a block
        (:meth:`events`, :meth:`last_event`, :meth:`history`) stores what was emitted so far first.

        ``hold``: the block's events wait for the next block to store them in its transaction, when that
        block begins before this task waits on anything (a workflow step's closing, then the opening of the
        step that follows it in a chain, or the next item let in by the slot it frees: one commit for both).
        They are stored and shown no later than the next emit outside a block, the next read, or the loop's
        turn after next, whichever comes first, so nothing emitted after them is stored or shown before them."""
        if self._batch is not None:
            yield
            return
        self._batch, self._held = self._held, []
        completed = False
        try:
            yield
            completed = True
        finally:
            try:
                if hold and completed and self._batch and self._hold_until_next_turn():
                    self._held, self._batch = self._batch, None
                else:
                    self._flush()
            finally:
                self._batch = None

    def _hold_until_next_turn(self) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False  # no loop to store them on its next turn: stored now
        # Two turns: a task that a slot freed by this block's task wakes on the next turn may begin its block
        # first and take these into its transaction (what another task emits or reads before it stores them
        # first, in order).
        loop.call_soon(loop.call_soon, self._flush)
        return True

    def _flush(self) -> None:
        """Store and show what :meth:`batched` held back so far (the block goes on collecting), and what a
        block that ended with ``hold`` left."""
        if self._held:  # only outside a block: a block begins by taking them
            held, self._held = self._held, []
            self._store_and_show(held)
        items = self._batch
        if not items:
            return
        self._batch = []
        self._store_and_show(items)

    def _store_and_show(self, items: list[StreamItem]) -> None:
        events = [cast(Event, item) for item in items if not is_preview(item)]
        if events:
            self.store.append_many(events)
        for item in items:
            if not is_preview(item):
                self._applied(cast(Event, item))
            self.notify(item)

    def notify(self, item: StreamItem) -> None:
        """Show an item to the listeners without appending it (one the store already holds)."""
        for listener in list(self._listeners):
            listener(item)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every item from now on; returns the unsubscriber."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def events(self, *, types: Collection[str] | None = None, after_id: str | None = None) -> Iterator[Event]:
        self._flush()
        return self.store.events(self.id, types=types, after_id=after_id)

    def last_event(self, event_type: str | None) -> Event | None:
        self._flush()
        return self.store.last_event(self.id, event_type)

    def history(self, thread_id: str | None = None) -> History:
        """The thread's message history on the active path, folded from the log once and kept current as
        events are emitted (a supersession folds it afresh)."""
        self._flush()
        history = self._histories.get(thread_id)
        if history is None:
            history = History()
            superseded = self.path().superseded
            events = self.events(types=(*HISTORY_EVENT_TYPES, "session.status_idle"))
            for event in on_path(events, superseded) if superseded else events:
                if event.thread_id == thread_id:
                    history.apply(event)
            self._histories[thread_id] = history
        return history

    def new_thread(self, thread_id: str) -> None:
        """A thread begins now, so nothing in the store is its yet: its history is folded from its events
        as they are emitted, rather than from the whole log at its first request."""
        self._histories.setdefault(thread_id, History())

    def path(self) -> ActivePath:
        """The turns on the active path (see ``engine/path.py``)."""
        return ActivePath(self.events(types=PATH_EVENT_TYPES))

    def supersede(self, turn_ids: list[str], reason: Literal["rerun", "refused", "failed"], **fields: Any) -> None:
        """Take turns off the active path (the log keeps them): the next request no longer sees them."""
        if turn_ids:
            self.emit(self.make(SessionTurnsSuperseded, turn_ids=turn_ids, reason=reason, **fields))
            self._histories.clear()
            replayed = replayed_usage(self.events(types=REPLAYED_USAGE_EVENT_TYPES), set(turn_ids))
            if replayed != Usage():
                self._usage = self.usage - replayed
                self.emit(self.make(SessionUsageEvent, usage=self._usage, budget=self.budget))

    @property
    def outcome(self) -> Outcome | None:
        """The latest outcome's state in the primary thread (a workflow step's is its thread's); None when none
        was defined."""
        last = self.last_event("session.outcome_updated")
        if last is not None and last.thread_id is not None:
            primary = (e for e in self.events(types=("session.outcome_updated",)) if e.thread_id is None)
            last = next(iter(reversed(list(primary))), None)
        return last.outcome if isinstance(last, SessionOutcomeUpdated) else None

    def pending_custom_tool_uses(self) -> set[str]:
        """The custom tool uses the last turn stopped for that have no result yet."""
        last_idle = self.last_event("session.status_idle")
        if not isinstance(last_idle, SessionStatusIdle) or not isinstance(last_idle.stop_reason, RequiresAction):
            return set()
        answered = {
            e.custom_tool_use_id
            for e in self.events(types=("user.custom_tool_result",), after_id=last_idle.id)
            if isinstance(e, UserCustomToolResult)
        }
        return set(last_idle.stop_reason.event_ids) - answered

    # ------------------------------------------------------------------------------------------ usage and budget

    @property
    def usage(self) -> Usage:
        """Cumulative usage and list cost of the whole session."""
        if self._usage is None:
            last = self.last_event("session.usage")
            self._usage = last.usage if isinstance(last, SessionUsageEvent) else Usage()
        return self._usage

    def add_usage(self, usage: Usage, *, thread_id: str | None = None) -> None:
        self._usage = self.usage + usage
        if (ceiling := SPEND_CEILING.get()) is not None:
            ceiling.add(usage.spent)
        self.emit(self.make(SessionUsageEvent, thread_id=thread_id, usage=self._usage, budget=self.budget))

    def reserve_budget(self, worst_case: Decimal) -> bool:
        """Hold ``worst_case`` of the budget for a request; False when it does not fit what remains (of the
        session's budget, or of the ceiling of the workflow run the request is made for)."""
        budget = self.budget
        ceiling = SPEND_CEILING.get()
        with self._lock:
            if budget is not None and self.usage.spent + self._reserved + worst_case > budget.max_list_cost:
                return False
            if ceiling is not None and not ceiling.reserve(worst_case):
                return False
            self._reserved += worst_case
            return True

    def budget_room(self) -> Decimal | None:
        """What remains of the budget once the requests in flight are held (the lesser of the session's and
        the ceiling's of the workflow run the request is made for); None without either."""
        budget = self.budget
        ceiling = SPEND_CEILING.get()
        with self._lock:
            room = None if budget is None else budget.max_list_cost - self.usage.spent - self._reserved
            if ceiling is not None:
                room = ceiling.room() if room is None else min(room, ceiling.room())
            return room

    @property
    def reserved(self) -> Decimal:
        """What requests in flight hold of the budget."""
        return self._reserved

    async def reservations_settle(self) -> None:
        """Wait until a request in flight releases what it held."""
        waiter = asyncio.get_running_loop().create_future()
        self._settling.append(waiter)
        await waiter

    def release_budget(self, worst_case: Decimal) -> None:
        with self._lock:
            self._reserved -= worst_case
            if (ceiling := SPEND_CEILING.get()) is not None:
                ceiling.release(worst_case)
            waiting, self._settling = self._settling, []
        for waiter in waiting:
            if not waiter.done():
                waiter.get_loop().call_soon_threadsafe(_settle, waiter)

    # ------------------------------------------------------------------------------------------ steering

    def steer(self, thread_id: str | None, blocks: list[ContentBlock]) -> None:
        """Queue guidance for ``thread_id``'s next request (call it on the turn's loop)."""
        self._steering.setdefault(thread_id, []).append(blocks)

    def take_steering(self, thread_id: str | None) -> list[list[ContentBlock]]:
        """The guidance waiting for ``thread_id``'s next request (the runner delivers it)."""
        return self._steering.pop(thread_id, [])

    def steering_pending(self, thread_id: str | None) -> bool:
        return bool(self._steering.get(thread_id))

    def drop_steering(self) -> list[list[ContentBlock]]:
        """Empty the queue at the end of a turn; returns the primary thread's undelivered guidance."""
        left = self._steering.pop(None, [])
        self._steering.clear()
        return left
