"""The embedded model's KV cache across requests: the next turn evaluates only its new tokens.

llama.cpp keeps the KV cache of the last prompt it evaluated, and llama-cpp-python reuses the part of it
a new prompt starts with. That is one conversation's worth: when another conversation takes a turn with
the same loaded model (a spawned thread, the outcome grader between turns, a second notebook), the
first one's cache would be overwritten and its next turn evaluated from the start. So before a prompt that
would discard much of the live cache, the live state is saved, and a saved state that shares more of the
new prompt is restored: each conversation resumes where it left off, within a memory cap.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp.llama import Llama, LlamaState

__all__ = ["KVStates", "shared_prefix"]

WORTH_SAVING = 16
"""Tokens of cache a switch must keep (or win back) to be worth copying a state for: copying a state costs
about what evaluating a twentieth of its tokens does."""
DEFAULT_CAPACITY = 256 * 1024 * 1024
"""Bytes of saved states kept per model (SmolLM2-135M takes ~23 kB a token: ~11,000 tokens)."""


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class KVStates:
    """Saved KV states of one loaded model, least recently used first. Used under the model's lock."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._states: OrderedDict[tuple[int, ...], LlamaState] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def prepare(self, llama: Llama, prompt: Sequence[int]) -> int:
        """Make the live cache the best start for ``prompt``; returns how many of its tokens it already holds
        (llama.cpp evaluates the rest; a prompt held whole still has its last token evaluated again)."""
        live_tokens = list(llama.input_ids[: llama.n_tokens])
        live = shared_prefix(live_tokens, prompt)
        best_key, best = None, live
        for key in self._states:
            n = shared_prefix(key, prompt)
            if n > best:
                best_key, best = key, n
        if best_key is not None and best - live < WORTH_SAVING:
            best_key, best = None, live
        if llama.n_tokens - live >= WORTH_SAVING:
            self._save(llama, tuple(live_tokens))
        if best_key is not None:
            llama.load_state(self._states[best_key])
            self._states.move_to_end(best_key)
        return min(best, max(len(prompt) - 1, 0))

    def _save(self, llama: Llama, key: tuple[int, ...]) -> None:
        # A state that is a prefix of the one saved now is only a shorter copy of it: drop it.
        for old in [k for k in self._states if len(k) <= len(key) and key[: len(k)] == k]:
            del self._states[old]
        self._states[key] = llama.save_state()
        while len(self._states) > 1 and sum(s.llama_state_size for s in self._states.values()) > self.capacity:
            self._states.popitem(last=False)

    def clear(self) -> None:
        self._states.clear()
