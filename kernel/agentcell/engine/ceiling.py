"""A ceiling on what part of a session may spend: a workflow run's own budget, beside the session's.

The run sets :data:`SPEND_CEILING` in the context its tasks start from, so every request made for it (its
steps' turns, their graders) reserves its worst case against the ceiling as well as against the session's
budget, and is billed to both (``SessionLog.reserve_budget``/``add_usage``). A request whose worst case does
not fit what remains of the ceiling is not sent: spend never passes it.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from decimal import Decimal

__all__ = ["SPEND_CEILING", "SpendCeiling"]


class SpendCeiling:
    def __init__(self, cap: Decimal) -> None:
        self.cap = cap
        self.spent = Decimal(0)
        self._reserved = Decimal(0)
        self._lock = threading.Lock()

    def reserve(self, worst_case: Decimal) -> bool:
        """Hold ``worst_case`` for a request; False when it does not fit what remains."""
        with self._lock:
            if self.spent + self._reserved + worst_case > self.cap:
                return False
            self._reserved += worst_case
            return True

    def room(self) -> Decimal:
        """What remains once the requests in flight are held."""
        with self._lock:
            return self.cap - self.spent - self._reserved

    def release(self, worst_case: Decimal) -> None:
        with self._lock:
            self._reserved -= worst_case

    def add(self, cost: Decimal) -> None:
        with self._lock:
            self.spent += cost


SPEND_CEILING: ContextVar[SpendCeiling | None] = ContextVar("agentcell_spend_ceiling", default=None)
