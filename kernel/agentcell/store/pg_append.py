"""The statements that append an event to PostgreSQL, and why they keep commit order.

Every append draws the next global ``position`` from the sequence ``agentcell.event_position`` while it
holds the transaction-scoped advisory lock ``POSITION_LOCK``. PostgreSQL releases that lock only after the
commit is visible to others, so positions are handed out in commit order: a reader that has seen position
*p* will never later see a smaller one appear. The cost is that appends commit one at a time across the
whole database (see bench/RESULTS.md).

A session's own order is its ``seq``, the primary key with the session id: two writers of one session
cannot both write the same ``seq``, so interleaving fails loudly rather than silently.
"""

from __future__ import annotations

from .pg_schema import POSITION_LOCK

__all__ = ["APPEND_GUARDED", "APPEND_LEASED", "NEXT_POSITION"]

NEXT_POSITION = f"""(
    SELECT nextval('agentcell.event_position')
    FROM (SELECT pg_advisory_xact_lock({POSITION_LOCK})::text AS locked) AS l WHERE l.locked IS NOT NULL
)"""
"""The next global position, drawn under the position lock (the filter makes the lock come first)."""
APPEND_LEASED = f"""
INSERT INTO agentcell.events (session_id, seq, position, id, type, body)
VALUES (%s, %s, {NEXT_POSITION}, %s, %s, %s)
"""
"""The append of a kernel whose lease is certainly live: nobody else can hold one, so no guard, and it
knows the session's next seq."""
APPEND_GUARDED = f"""
INSERT INTO agentcell.events (session_id, seq, position, id, type, body)
SELECT %(session)s, COALESCE((SELECT max(seq) + 1 FROM agentcell.events WHERE session_id = %(session)s), 1),
       {NEXT_POSITION}, %(id)s, %(type)s, %(body)s
WHERE NOT EXISTS (
    SELECT 1 FROM agentcell.session_leases
    WHERE session_id = %(session)s AND holder <> %(holder)s AND expires_at > now()
)
RETURNING seq
"""
"""Any other append: refused (no row) while another kernel holds a live lease; the next seq is read."""
