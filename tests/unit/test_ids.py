"""Ids: ``<prefix>_`` and 26 Crockford base-32 digits, 48 bits of milliseconds then 80 of randomness
incremented within a millisecond, so one process's ids sort in the order they were made."""

from __future__ import annotations

import random
import re
import time

from agentcell.ids import _encode, new_id

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _digits(value: int, length: int) -> str:
    """Base 32 by repeated division: the reference the table lookup must match."""
    out = ""
    for _ in range(length):
        value, digit = divmod(value, 32)
        out = CROCKFORD[digit] + out
    return out


def test_the_encoding_is_base_32_of_the_whole_128_bits() -> None:
    rng = random.Random(7)
    for value in [0, 1, 31, 32, 1023, 1024, (1 << 128) - 1] + [rng.getrandbits(128) for _ in range(2000)]:
        assert _encode(value) == _digits(value, 26)


def test_an_id_carries_its_millisecond_and_sorts_after_the_ones_before() -> None:
    before = time.time_ns() // 1_000_000
    ids = [new_id("sevt") for _ in range(5000)]
    after = time.time_ns() // 1_000_000
    assert all(re.fullmatch(r"sevt_[0-9A-HJKMNP-TV-Z]{26}", i) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    millis = [int("".join(f"{CROCKFORD.index(c):05b}" for c in i[5:15]), 2) for i in ids]  # the first 50 bits
    assert before <= millis[0] <= millis[-1] <= after
