"""A run's journal at a lower cost: keys made once per step, and each item's start and end stored in the
transactions of its thread's opening and closing (issue 20's scheduling bench)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentcell import events as ev
from agentcell.engine.workflows import check_plan
from agentcell.engine.workflows.journal import ItemKeys, item_key
from agentcell.records import workflow_events as wf
from agentcell.store.base import Store

from ._workflows import by_system, review_plan, say, workflow_engine


def _script() -> Any:
    return by_system(drafter=lambda _: say("D"), critic=lambda _: say("ok"), reviser=lambda _: say("R"))


def test_item_keys_are_those_of_item_key_and_do_not_change_across_versions(db_path: Path, workspace: Path) -> None:
    engine, _, session, agents = workflow_engine(db_path, workspace, _script())
    log, deps = session._log, session._deps()
    checked = check_plan(
        review_plan(agents), settings=log.record.multiagent, session_agent=log.agent, resolve_model=deps.resolve_model
    )
    keys = ItemKeys()
    for step in checked.steps:
        for index, value in ((None, None), (0, "style"), (2, {"k": [1, "ü"]})):
            for prompt in ("Draft tides", "Review the draft for style:\nD ü"):
                assert keys.key(step, prompt, index, value) == item_key(step, prompt, index, value)
    # An inline step's key depends on nothing minted per engine: a journal written by an earlier version
    # must still match (this is the key that version gave).
    reviews = checked.steps[1]
    assert keys.key(reviews, "Review the draft for style:\nD", 0, "style") == "71984e4e403ff9b8cf7487539200d148"
    engine.close()


def test_item_keys_tell_apart_inline_agents_that_differ_in_one_field(db_path: Path, workspace: Path) -> None:
    """ItemKeys serializes an agent's part once per agent: inline agents that share a model but differ in
    name, system or description each keep a part of their own (the same keys as item_key's)."""
    engine, _, session, _ = workflow_engine(db_path, workspace, _script())
    log, deps = session._log, session._deps()
    agents = [{"name": "a", "system": "s"}, {"name": "a", "system": "t"}, {"name": "b", "system": "s"},
              {"name": "a", "system": "s", "description": "d"}, {"name": "a", "system": "s", "model": "scripted"},
              {"name": "a", "system": "s"}]  # fmt: skip
    plan = {
        "name": "p",
        "steps": [{"id": f"s{i}", "agent": {"inline": a}, "prompt": "same"} for i, a in enumerate(agents)],
    }
    checked = check_plan(
        plan, settings=log.record.multiagent, session_agent=log.agent, resolve_model=deps.resolve_model
    )
    keys = ItemKeys()
    parts = set()
    for step in checked.steps:
        assert keys.key(step, "same", None, None) == item_key(step, "same", None, None)
        parts.add(keys._of(step)[0])
    # The last agent is the first one again, and so is the fifth: its model is the session agent's, named.
    assert len(parts) == 4
    engine.close()


class _CountingStore:
    """The engine's store, recording which events each write carried (one list per transaction)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.writes: list[list[str]] = []

    def append(self, event: ev.Event) -> None:
        self._store.append(event)
        self.writes.append([event.id])

    def append_many(self, events: Sequence[ev.Event]) -> None:
        self._store.append_many(events)
        self.writes.append([e.id for e in events])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def test_an_items_start_and_end_are_stored_with_its_threads_opening_and_closing(
    db_path: Path, workspace: Path
) -> None:
    engine, _, session, agents = workflow_engine(db_path, workspace, _script())
    counting = _CountingStore(session._log.store)
    session._log.store = counting  # type: ignore[assignment]
    run = await session.run_workflow(review_plan(agents))
    assert run.status == "completed"

    events = session.events()
    write_of = {event_id: index for index, ids in enumerate(counting.writes) for event_id in ids}
    assert set(write_of) == {e.id for e in events}  # every event stored exactly through these writes
    assert len(counting.writes) < len(events)
    by_thread: dict[str, dict[str, str]] = {}
    for event in events:
        thread = getattr(event, "session_thread_id", None) or event.thread_id
        if thread is not None and thread.startswith("sthr"):
            by_thread.setdefault(thread, {}).setdefault(event.type, event.id)
    assert len(by_thread) == 5  # draft, three reviews, the revision
    for kinds in by_thread.values():
        # One transaction holds the item's start and its thread's opening, another its thread's end and
        # the item's completion: the journal entry is durable with the thread's last events.
        opening = {write_of[kinds[t]] for t in ("workflow_run.step_started", "session.thread_created")}
        closing = {write_of[kinds[t]] for t in ("session.thread_status_idle", "workflow_run.step_completed")}
        assert len(opening) == 1 and len(closing) == 1 and opening != closing
    engine.close()


async def test_in_a_chain_a_steps_closing_is_stored_with_the_next_steps_opening(db_path: Path, workspace: Path) -> None:
    """The next step of a chain starts in the task the last one ended in, before anything is awaited: the
    closing of one thread (with its item's completion) and the opening of the next (with its item's start)
    are one transaction. Every event is still stored once, in order, and shown only once stored."""
    engine, _, session, _ = workflow_engine(db_path, workspace, by_system(noop=lambda _: say("ok")))
    log = session._log
    counting = _CountingStore(log.store)
    log.store = counting  # type: ignore[assignment]
    shown_unstored: list[str] = []

    def listener(item: ev.StreamItem) -> None:
        if not ev.is_preview(item) and not any(item.id in ids for ids in counting.writes):  # type: ignore[union-attr]
            shown_unstored.append(item.id)  # type: ignore[union-attr]

    log.subscribe(listener)
    agent = {"inline": {"name": "noop", "system": "noop: you answer"}}
    steps = [{"id": f"s{i}", "agent": agent, "prompt": f"step {i}", **({"depends_on": [f"s{i - 1}"]} if i else {})}
             for i in range(3)]  # fmt: skip
    run = await session.run_workflow({"name": "chain", "steps": steps})
    assert run.status == "completed" and run.ran == 3

    events = session.events()
    stored = [event_id for ids in counting.writes for event_id in ids]
    assert stored == [e.id for e in events]  # each once, in the log's order
    assert shown_unstored == []
    write_of = {event_id: index for index, ids in enumerate(counting.writes) for event_id in ids}
    first = {
        (e.type, e.step_id): e.id
        for e in events
        if isinstance(e, wf.WorkflowRunStepStarted | wf.WorkflowRunStepCompleted)
    }
    for before, after in (("s0", "s1"), ("s1", "s2")):
        assert (
            write_of[first["workflow_run.step_completed", before]]
            == write_of[first["workflow_run.step_started", after]]
        )
    engine.close()


def test_batched_events_are_stored_before_they_are_shown_and_reads_inside_see_them(
    db_path: Path, workspace: Path
) -> None:
    engine, _, session, _ = workflow_engine(db_path, workspace, _script())
    log = session._log
    shown: list[tuple[str, bool]] = []

    def listener(item: ev.StreamItem) -> None:
        stored = any(e.id == item.id for e in log.store.events(log.id))  # type: ignore[union-attr]
        shown.append((item.id, stored))  # type: ignore[union-attr]

    log.subscribe(listener)
    with log.batched():
        first = log.make(ev.SessionStatusRunning)
        log.emit(first)
        assert shown == [] and log.store.last_event(log.id, None) != first
        # A read inside the block stores (and shows) what the block emitted so far.
        assert log.last_event("session.status_running") == first
        assert shown == [(first.id, True)]
        with log.batched():  # a nested block joins the outer one
            second = log.make(wf.WorkflowRunStepFailed, run_id="wfrun_x", step_id="s", error="e")
            log.emit(second)
        assert len(shown) == 1
    assert shown == [(first.id, True), (second.id, True)]
    assert [e.id for e in session.events()][-2:] == [first.id, second.id]
    engine.close()


async def test_the_run_returned_is_the_run_the_log_holds_with_a_secret_redacted(
    db_path: Path, workspace: Path, monkeypatch: Any
) -> None:
    """run_workflow returns the run as its runner folded it (not folded again from the whole turn): it must
    be the run the log tells, down to a secret in the plan or printed by a step's agent, which neither holds."""
    secret = "sk-wf-journal-0123456789"
    monkeypatch.setenv("WF_JOURNAL_TEST_API_KEY", secret)
    script = by_system(drafter=lambda _: say(f"D {secret}"), critic=lambda _: say("ok"), reviser=lambda _: say("R"))
    engine, _, session, agents = workflow_engine(db_path, workspace, script)
    plan = review_plan(agents, topic=f"tides {secret}")
    plan["steps"] = plan["steps"][:1]  # the draft alone: its output is the run's
    run = await session.run_workflow(plan)
    assert run.status == "completed"
    assert run.output == "D [redacted]" and run.plan["inputs"] == {"topic": "tides [redacted]"}
    assert secret not in repr(run)
    assert run == session.workflow_runs[-1]
    engine.close()


async def test_a_held_block_is_stored_before_what_comes_after_it_and_by_the_loops_next_turn(
    db_path: Path, workspace: Path
) -> None:
    engine, _, session, _ = workflow_engine(db_path, workspace, _script())
    log = session._log
    with log.batched(hold=True):
        held = log.make(ev.SessionStatusRunning)
        log.emit(held)
    last = log.store.last_event(log.id, None)
    assert last is None or last.id != held.id  # held for the next block
    after = log.make(ev.SessionStatusRunning)
    log.emit(after)  # an emit outside a block stores (and shows) what was held first
    assert [e.id for e in session.events()][-2:] == [held.id, after.id]
    with log.batched(hold=True):
        left = log.make(ev.SessionStatusRunning)
        log.emit(left)
    for _ in range(2):  # no block followed: the loop's turn after next stores it
        await asyncio.sleep(0)
    last = log.store.last_event(log.id, None)
    assert last is not None and last.id == left.id
    engine.close()
