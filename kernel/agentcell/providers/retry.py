"""How a request that failed before any output is retried: the policy alone, in the standard library, so the
engine reads it without importing the HTTP stack."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait before resending a request that failed before any output.

    The defaults are the official SDKs': 2 retries, 0.5 s doubling up to 8 s with up to 25 % downward
    jitter, and a server's ``retry-after-ms`` / ``retry-after`` obeyed when it asks for at most 60 s.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    stall_seconds: float = field(default_factory=lambda: float(os.environ.get("AGENTCELL_STALL_SECONDS") or 30))
    """A stream that delivers nothing (keep-alive pings do not count) for this long fails as a retryable
    stall: a stalled server cannot hold a cell for the read timeout's ten minutes."""
    max_total_seconds: float = 180.0
    """Retries stop once this long has passed since the first attempt began."""

    def delay(self, retries_done: int, retry_after: float | None) -> float:
        if retry_after is not None and 0 < retry_after <= self.max_retry_after:
            return retry_after
        backoff = min(self.initial_delay * 2.0 ** min(retries_done, 1000), self.max_delay)
        return max(0.0, backoff * (1 - 0.25 * random.random()))
