"""One throttle for every renderer: coalesce a stream of changes into at most ``max_rate`` sends a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["Throttle"]


class Throttle:
    """Calls ``send`` when something changed, at most ``max_rate`` times a second, on the running loop.

    ``send`` returns whether it sent anything: a call with nothing new does not count against the rate.
    The first change after a quiet spell is sent at once; changes within the interval wait for one timer.
    """

    def __init__(self, send: Callable[[], bool], *, max_rate: float) -> None:
        self._send = send
        self._interval = 1.0 / max_rate
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def changed(self) -> None:
        """Something new to send: send now, or once the interval since the last send is over."""
        if self._timer is not None or self._closed:
            return
        wait = self._last + self._interval - time.monotonic()
        if wait <= 0:
            self._run()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._run)

    def _run(self) -> None:
        self._timer = None
        if self._send():
            self._last = time.monotonic()

    def close(self, *, flush: bool) -> None:
        """No more sends after this one: ``flush`` sends what is pending now, otherwise it is dropped."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if flush and not self._closed:
            self._run()
        self._closed = True
