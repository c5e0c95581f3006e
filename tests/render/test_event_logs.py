"""The recorded event logs (``tests/fixtures/event_logs``): current, complete, and folded the same way by the
Python fold as when they were recorded. ``widgets/js/test/event_logs.test.ts`` holds the widget's fold to the
same recorded statuses: together they are the parity test between the widget and the static fallbacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from agentcell import events as ev

from ..fixtures.make_event_logs import OUT, python_statuses, record_all

LOGS = sorted(OUT.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _event_types() -> set[str]:
    union = get_args(ev.Event)[0]
    return {member.model_fields["type"].default for member in get_args(union)}


def test_the_logs_are_what_the_engine_emits_today() -> None:
    recorded = {path.name: path.read_text(encoding="utf-8") for path in LOGS}
    fresh = record_all()
    stale = sorted(name for name in fresh.keys() | recorded.keys() if fresh.get(name) != recorded.get(name))
    assert not stale, (
        f"stale event logs {stale}: the engine or the Python fold changed. Run "
        "`python tests/fixtures/make_event_logs.py`, check the diff, and commit it (then `make js-test`)."
    )


def test_every_event_type_of_the_union_is_in_some_log() -> None:
    seen = {item["type"] for path in LOGS for item in _items(_load(path))}
    missing = _event_types() - seen
    assert not missing, f"no recorded event log has {sorted(missing)}: add a scenario to make_event_logs.py"
    assert {"event_start", "event_delta"} <= seen  # the previews too


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_the_python_fold_shows_the_recorded_statuses(path: Path) -> None:
    log = _load(path)
    for turn, items in enumerate(log["turns"]):
        assert python_statuses(items) == log["statuses"][turn], f"{path.name}, turn {turn}"


def _items(log: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for turn in log["turns"] for item in turn] + list(log["outside_turns"])
