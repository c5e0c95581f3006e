"""Ordered registrations whose disposers undo exactly their own, read without a lock by running pipelines."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Chain", "Disposer", "Slot"]

Disposer = Callable[[], None]
H = TypeVar("H")


@dataclass(eq=False, slots=True)
class Slot(Generic[H]):
    # eq=False: a disposer removes its own registration, even when the same hook was added twice.
    hook: H


class Chain(Generic[H]):
    """The registrations of one kind, in order. ``hooks`` is replaced (never mutated) on change, so a
    running pipeline iterates a stable snapshot without taking the lock."""

    __slots__ = ("_lock", "_slots", "hooks")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._slots: tuple[Slot[H], ...] = ()
        self.hooks: tuple[H, ...] = ()

    def add(self, hook: H) -> Disposer:
        slot = Slot(hook)
        with self._lock:
            self._slots = (*self._slots, slot)
            self.hooks = tuple(s.hook for s in self._slots)

        def dispose() -> None:
            with self._lock:
                kept = tuple(s for s in self._slots if s is not slot)
                if len(kept) != len(self._slots):
                    self._slots = kept
                    self.hooks = tuple(s.hook for s in kept)

        return dispose
