"""The one-driver lease on PostgreSQL, timed: renewed while held, taken over once it lapses, and a kernel
that lost it can no longer write."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from agentcell import PostgresStore, SessionDrivenElsewhereError
from agentcell import events as ev
from agentcell.records.session import SessionRecord

LEASE = 1.0


def _session(store: PostgresStore) -> str:
    record = SessionRecord(
        id=f"sesn_{time.monotonic_ns()}", agent_id="agent_x", agent_version=1, created_at=datetime.now(UTC)
    )
    store.put_session(record)
    return record.id


def _message(session_id: str, text: str) -> ev.UserMessage:
    return ev.UserMessage(
        id=f"sevt_{time.monotonic_ns()}",
        created_at=datetime.now(UTC),
        session_id=session_id,
        content=[ev.TextBlock(text=text)],
    )


def test_a_held_lease_is_renewed_and_given_back_at_once(pg_url: str) -> None:
    first, second = PostgresStore(pg_url, lease_seconds=LEASE), PostgresStore(pg_url, lease_seconds=LEASE)
    try:
        session_id = _session(first)
        lease = first.take_lease(session_id)
        held_until = time.monotonic() + 3 * LEASE  # three lease lengths: it only lasts by being renewed
        while time.monotonic() < held_until:
            with pytest.raises(SessionDrivenElsewhereError, match="its lease runs until"):
                second.take_lease(session_id)
            time.sleep(LEASE / 4)
        lease.release()
        second.take_lease(session_id).release()  # at once, without waiting for anything to lapse
    finally:
        first.close()
        second.close()


def test_a_dead_holders_lease_lapses_and_it_can_no_longer_write(pg_url: str) -> None:
    first, second = PostgresStore(pg_url, lease_seconds=LEASE), PostgresStore(pg_url, lease_seconds=LEASE)
    try:
        session_id = _session(first)
        first.take_lease(session_id)
        first.append(_message(session_id, "mine"))
        first._leases._stop.set()  # the holder stops renewing, as a SIGKILLed or frozen kernel does
        stopped = time.monotonic()
        while True:
            try:
                lease = second.take_lease(session_id)
                break
            except SessionDrivenElsewhereError:
                assert time.monotonic() - stopped < 3 * LEASE, "the lease never lapsed"
                time.sleep(LEASE / 20)
        waited = time.monotonic() - stopped
        assert LEASE / 2 <= waited <= LEASE + 0.5  # lapsed within a lease of the last renewal, not before
        second.append(_message(session_id, "taken over"))
        with pytest.raises(SessionDrivenElsewhereError, match="being driven by another kernel"):
            first.append(_message(session_id, "too late"))  # fenced out: nothing interleaves
        assert [e.content[0].text for e in second.events(session_id)] == ["mine", "taken over"]  # type: ignore[union-attr]
        lease.release()
    finally:
        first.close()
        second.close()


def test_two_writers_of_one_session_collide_on_its_seq(pg_url: str) -> None:
    """Even without leases in the way (an admin removed the row), the second of two interleaving appends fails."""
    import psycopg

    first, second = PostgresStore(pg_url, lease_seconds=30), PostgresStore(pg_url, lease_seconds=30)
    try:
        session_id = _session(first)
        first.take_lease(session_id)
        first.append(_message(session_id, "one"))
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DELETE FROM agentcell.session_leases")
        second.append(_message(session_id, "two"))  # no lease anywhere: written after "one"
        with pytest.raises(SessionDrivenElsewhereError):
            first.append(_message(session_id, "three"))  # its next seq was taken meanwhile
        first.append(_message(session_id, "three"))  # then it reads the log again and goes on after it
        assert [e.content[0].text for e in first.events(session_id)] == ["one", "two", "three"]  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()
