"""Runtime counts overlapping threads once, active time sums each thread's; duration runs from creation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from hypothesis import given
from hypothesis import strategies as st

from agentcell.engine.stats import Transition, runtime_seconds, thread_seconds

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_overlapping_threads_count_once() -> None:
    transitions: list[Transition] = [
        (at(0), None, "running"),
        (at(2), "thread_a", "running"),
        (at(5), None, "idle"),  # primary stops, thread_a still runs
        (at(8), "thread_a", "idle"),
        (at(10), "thread_b", "running"),
        (at(11), "thread_b", "idle"),
    ]
    assert runtime_seconds(transitions, at(100)) == 9.0  # [0, 8] and [10, 11]


def test_a_thread_still_running_counts_until_the_end() -> None:
    assert runtime_seconds([(at(0), None, "running"), (at(3), None, "idle"), (at(4), None, "running")], at(10)) == 9.0


def test_an_idle_without_running_is_ignored() -> None:
    assert runtime_seconds([(at(1), "x", "idle"), (at(2), None, "running"), (at(3), None, "idle")], at(9)) == 1.0


intervals = st.lists(
    st.tuples(st.sampled_from([None, "a", "b", "c"]), st.integers(0, 100), st.integers(1, 50)), max_size=12
)


@given(intervals)
def test_matches_the_union_of_intervals(spans: list[tuple[str | None, int, int]]) -> None:
    # Each thread runs its intervals; build transitions per thread without self-overlap.
    transitions: list[Transition] = []
    covered: set[int] = set()
    busy_until: dict[str | None, int] = {}
    for thread, wanted_start, length in sorted(spans, key=lambda s: s[1]):
        start = max(wanted_start, busy_until.get(thread, 0))
        end = start + length
        busy_until[thread] = end
        running: Literal["running", "idle"] = "running"
        idle: Literal["running", "idle"] = "idle"
        transitions += [(at(start), thread, running), (at(end), thread, idle)]
        covered.update(range(start, end))
    transitions.sort(key=lambda t: (t[0], t[2] == "running"))  # at equal times stop before start
    assert runtime_seconds(transitions, at(1000)) == len(covered)


def test_active_time_sums_each_threads_own_running_time() -> None:
    """Seed 002: active_seconds sums each thread's own active time (runtime_seconds counts overlaps once)."""
    transitions: list[Transition] = [
        (at(0), None, "running"),
        (at(0.1), "thread_a", "running"),
        (at(0.1), "thread_b", "running"),
        (at(1.1), "thread_a", "idle"),
        (at(1.1), "thread_b", "idle"),
        (at(1.2), None, "idle"),
    ]
    assert thread_seconds(transitions, at(100)) == 3.2  # 1.2 + 1 + 1
    assert runtime_seconds(transitions, at(100)) == 1.2
    assert thread_seconds([(at(0), "a", "running")], at(4)) == 4.0  # still running: counted to the end
