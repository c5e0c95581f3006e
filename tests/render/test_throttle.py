"""The one throttle of the renderers: the first change goes out at once, changes within the interval
coalesce into one later send, a send with nothing new does not count, and close flushes or drops."""

from __future__ import annotations

import asyncio
import time

from agentcell.render.throttle import Throttle


class Sink:
    def __init__(self) -> None:
        self.pending = 0
        self.sent: list[tuple[int, float]] = []
        self.arrived = asyncio.Event()

    def change(self, throttle: Throttle) -> None:
        self.pending += 1
        throttle.changed()

    def send(self) -> bool:
        if not self.pending:
            return False
        self.sent.append((self.pending, time.monotonic()))
        self.pending = 0
        self.arrived.set()
        return True


async def test_changes_within_the_interval_go_out_together_once_it_is_over() -> None:
    sink = Sink()
    throttle = Throttle(sink.send, max_rate=20)  # one send per 50 ms
    sink.change(throttle)
    assert [n for n, _ in sink.sent] == [1]  # at once
    sink.arrived.clear()
    for _ in range(5):
        sink.change(throttle)
    assert len(sink.sent) == 1  # held back: one timer for all five
    await sink.arrived.wait()
    assert [n for n, _ in sink.sent] == [1, 5]
    assert sink.sent[1][1] - sink.sent[0][1] >= 0.045


async def test_close_flushes_what_is_pending_or_drops_it_and_nothing_goes_out_after() -> None:
    sink = Sink()
    throttle = Throttle(sink.send, max_rate=1)
    sink.change(throttle)
    sink.change(throttle)
    throttle.close(flush=True)
    assert [n for n, _ in sink.sent] == [1, 1]
    sink.change(throttle)
    assert len(sink.sent) == 2

    dropped = Sink()
    other = Throttle(dropped.send, max_rate=1)
    dropped.change(other)
    dropped.change(other)
    other.close(flush=False)
    assert [n for n, _ in dropped.sent] == [1] and dropped.pending == 1


async def test_a_send_with_nothing_new_does_not_hold_back_the_next_change() -> None:
    sink = Sink()
    throttle = Throttle(sink.send, max_rate=1)  # one send per second
    throttle.changed()  # nothing pending: send() returns False, no rate is used up
    assert sink.sent == []
    sink.change(throttle)
    assert [n for n, _ in sink.sent] == [1]  # at once, not a second later
