"""The run's journal: every completed step item is kept in the event log under a key, for later runs to reuse.

A key is the hash of what decides an item's output: the step's id, the agent it runs (a saved agent's id
and version, or an inline agent's whole definition), the prompt as rendered (so the outputs of the steps it
reads, and its item), and the options that shape the answer (output schema, max_turns, outcome). Nothing
minted per run (thread, agent or event ids) enters it, so the same plan in the same session gives the same
keys after a kernel restart.

Running a plan again reuses the longest unchanged prefix: an item is reused when its key has a
``workflow_run.step_completed`` in the session's log and every step it depends on was reused whole; the
first item that runs live makes everything downstream of its step run live too (the output it gives may
differ from the journaled one, even with an unchanged key downstream).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ...events import Event
from ...records.workflow_events import WorkflowRunStepCompleted
from .validate import CheckedStep

__all__ = ["JOURNAL_EVENT_TYPES", "ItemKeys", "Journal", "item_key"]

JOURNAL_EVENT_TYPES = ("workflow_run.step_completed",)
KEY_VERSION = 1
"""Bumped when what a key covers changes, so older journal entries stop matching rather than mislead."""


def item_key(step: CheckedStep, prompt: str, item: int | None, item_value: Any) -> str:
    """The key of one item: the hash of the canonical JSON of what decides its output."""
    spec = step.spec
    material = {
        "v": KEY_VERSION,
        "step": spec.id,
        "agent": _who(step),
        "prompt": prompt,
        "item": [item, item_value] if item is not None else None,
        "output_schema": spec.output_schema,
        "max_turns": spec.max_turns,
        "outcome": _outcome(step),
    }
    return hashlib.sha256(_canonical(material).encode("ascii")).hexdigest()[:32]


def _who(step: CheckedStep) -> dict[str, Any]:
    """The agent an item runs: a saved agent's id and version, or an inline agent's whole definition."""
    agent = step.agent
    if step.inline:
        return {"inline": agent.model_dump(mode="json", include={"name", "model", "system", "description"})}
    return {"id": agent.id, "version": agent.version}


def _outcome(step: CheckedStep) -> dict[str, Any] | None:
    outcome = step.spec.outcome
    return outcome.model_dump(mode="json") if outcome is not None else None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _canonical_or_null(value: Any) -> str:
    """:func:`_canonical`, without a trip through the JSON encoder for the options most steps leave unset."""
    return "null" if value is None else _canonical(value)


class ItemKeys:
    """Makes the keys of one run's items, the same as :func:`item_key`'s with less work per item: what a
    step contributes beyond its prompt and item (its agent, options and outcome, dumped from pydantic
    models) is serialized once per step, and an agent's part once per agent (the steps of a plan mostly
    share a few); an item's material is that text with its ``item`` and ``prompt`` put in their sorted
    places, the bytes ``json.dumps(material, sort_keys=True)`` would give."""

    def __init__(self) -> None:
        self._static: dict[str, tuple[str, str, str]] = {}
        self._agents: dict[tuple[Any, ...], tuple[object, str]] = {}
        """An agent's part of the key, by what decides it: a saved agent's id and version; an inline agent's
        name, description, system prompt and model object (each inline step has an agent object of its own,
        most share the session agent's model). With the object the key holds by identity, kept alive so
        that its id is not reused."""

    def _who_text(self, step: CheckedStep) -> str:
        agent = step.agent
        if step.inline:
            held: object = agent.model
            what: tuple[Any, ...] = ("inline", agent.name, agent.description, agent.system, id(held))
        else:
            held, what = None, ("saved", agent.id, agent.version)
        known = self._agents.get(what)
        if known is None or known[0] is not held:
            known = self._agents[what] = (held, _canonical(_who(step)))
        return known[1]

    def _of(self, step: CheckedStep) -> tuple[str, str, str]:
        static = self._static.get(step.id)
        if static is None:
            spec = step.spec
            # The material's keys in sorted order: agent, item, max_turns, outcome, output_schema, prompt,
            # step, v.
            static = self._static[step.id] = (
                f'{{"agent":{self._who_text(step)},"item":',
                f',"max_turns":{_canonical_or_null(spec.max_turns)},"outcome":{_canonical_or_null(_outcome(step))}'
                f',"output_schema":{_canonical_or_null(spec.output_schema)},"prompt":',
                f',"step":{_canonical(spec.id)},"v":{KEY_VERSION}}}',
            )
        return static

    def key(self, step: CheckedStep, prompt: str, item: int | None, item_value: Any) -> str:
        head, middle, tail = self._of(step)
        canonical = head + ("null" if item is None else _canonical([item, item_value])) + middle
        canonical += _canonical(prompt) + tail
        return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:32]


class Journal:
    """The completed step items of a session, by key: the first completion of each key."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._entries: dict[str, WorkflowRunStepCompleted] = {}
        for event in events:
            self.add(event)

    def add(self, event: Event) -> None:
        if isinstance(event, WorkflowRunStepCompleted):
            self._entries.setdefault(event.key, event)

    def get(self, key: str) -> WorkflowRunStepCompleted | None:
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)
