"""The recording file: ``name.agentcell.jsonl`` next to ``name.ipynb``, one JSON line per provider request.

The first line is a header; every other line is an :class:`Entry`: the request's fingerprint and part
hashes, the cell it came from, the provider-neutral stream it produced, and what it cost. Entries of the
same fingerprint are answered in the order they were recorded (a cell re-run while recording gets its two
answers in turn), and then from the first again: running the notebook a second time replays it as the
first time did.

Nothing secret reaches the file: requests are stored only as hashes, headers and keys are never part of an
entry, and as a last guard every value of an environment variable named like a credential is replaced by
``[redacted]`` before a line is written, also where a model's output spelt one out across several deltas.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._secrets import scrub, secret_values
from ..errors import InvalidInputError
from ..usage import CacheCreation, Money, Pricing, ServerToolUse, Usage, flat_pricing
from ._fingerprint import canonical_json
from .base import StreamEvent, TextDelta, ThinkingDelta, ToolInputDelta, UsageUpdate

__all__ = ["CellRef", "Entry", "Prices", "Recording", "recorded_pricing", "recording_path"]

HEADER = {"format": "agentcell-recording", "version": 1}
_PROBE_TOKENS = 1000  # small enough to stay in every provider's first price tier


def recording_path(notebook: str | os.PathLike[str]) -> Path:
    """``analysis.ipynb`` → ``analysis.agentcell.jsonl`` in the same folder."""
    path = Path(notebook)
    return path.with_name(f"{path.stem}.agentcell.jsonl")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CellRef(_Model):
    """Where a request came from: the cell's execution count and its notebook cell id, when known."""

    number: int | None = None
    id: str | None = None

    def describe(self) -> str:
        label = f"cell [{self.number}]" if self.number is not None else "this cell"
        return f"{label} (id {self.id})" if self.id else label


def _plain(value: Decimal) -> Decimal:
    """``3.000`` → ``3`` and ``1E+2`` → ``100``: one spelling of a price in the file."""
    return Decimal(format(value.normalize(), "f"))


class Prices(_Model):
    """List prices per million tokens (web searches per thousand), as the live provider charged them."""

    input: Money = Decimal(0)
    output: Money = Decimal(0)
    cache_read: Money = Decimal(0)
    cache_write_5m: Money = Decimal(0)
    cache_write_1h: Money = Decimal(0)
    web_search_k: Money = Decimal(0)

    @classmethod
    def probe(cls, pricing: Pricing) -> Prices:
        """Read the rates off a price function by pricing one kind of usage at a time."""
        per_mtok = Decimal(1_000_000) / _PROBE_TOKENS

        def rate(**fields: Any) -> Decimal:
            return _plain(pricing(Usage(**fields)) * per_mtok)

        return cls(
            input=rate(input_tokens=_PROBE_TOKENS),
            output=rate(output_tokens=_PROBE_TOKENS),
            cache_read=rate(cache_read_input_tokens=_PROBE_TOKENS),
            cache_write_5m=rate(cache_creation=CacheCreation(ephemeral_5m_input_tokens=_PROBE_TOKENS)),
            cache_write_1h=rate(cache_creation=CacheCreation(ephemeral_1h_input_tokens=_PROBE_TOKENS)),
            web_search_k=_plain(pricing(Usage(server_tool_use=ServerToolUse(web_search_requests=1))) * 1000),
        )

    def pricing(self) -> Pricing:
        return flat_pricing(
            self.input,
            self.output,
            cache_read_mtok=self.cache_read,
            cache_write_5m_mtok=self.cache_write_5m,
            cache_write_1h_mtok=self.cache_write_1h,
            web_search_k=self.web_search_k,
        )


class Entry(_Model):
    fingerprint: str
    model: str
    """The model id as the registry serves it (``local:smollm2``), the notebook's folder written ``<dir>``."""
    parts: dict[str, Any]
    """The per-part hashes of :class:`~agentcell.providers._fingerprint.RequestDigest`."""
    cell: CellRef | None = None
    prompt: str = ""
    """The latest user text of the request, shortened: to name the cell in messages."""
    events: list[StreamEvent]
    list_cost: Money | None = Decimal(0)
    """The live provider's list cost of the final usage: replay charges exactly this (None: the model had
    no known list price)."""
    prices: Prices = Prices()
    """The live rates, for what a replay must price without a recorded answer (a budget's worst case)."""
    seconds: float | None = None
    """How long the live stream took."""
    minted_ids: list[str] = []
    """The thread and agent ids the request mentioned, in the fingerprint's order: the recorded run's
    ``thread-1``…, which a replay maps to its own (the engine mints them afresh on every run)."""
    context_window: Annotated[int | None, Field(exclude_if=lambda value: value is None)] = None
    """The model's window as the live provider reported it: a replay compacts where the recorded run did
    without asking a provider. Absent when unknown (and in recordings made before it was kept)."""
    estimates: Annotated[dict[str, int], Field(exclude_if=lambda value: not value)] = {}
    """The live provider's token estimates of the requests it was asked about since the previous entry (by
    fingerprint; some never sent, as the one a compaction replaced): a replay measures them the same, though
    its own count differs (the local model's tokenizer), so it compacts where the recorded run did."""

    @property
    def usage(self) -> Usage:
        final = [e.usage for e in self.events if isinstance(e, UsageUpdate)]
        return final[-1] if final else Usage()


def usage_key(usage: Usage) -> str:
    """A usage's token counts, without its cost: what a recorded cost is looked up by."""
    return canonical_json(usage.model_dump(mode="json", exclude={"list_cost"}))


def recorded_pricing(entries: Iterable[Entry]) -> Pricing:
    """Charges a recorded usage exactly its recorded cost, and anything else (a worst case, a request cut
    short) at the recorded rates."""
    exact: dict[str, Decimal] = {}
    prices = Prices()
    for entry in entries:
        if entry.list_cost is not None:
            exact[usage_key(entry.usage)] = entry.list_cost
        prices = entry.prices
    linear = prices.pricing()

    def price(usage: Usage) -> Decimal:
        found = exact.get(usage_key(usage))
        return found if found is not None else linear(usage)

    return price


_DELTA_FIELDS: dict[type[BaseModel], str] = {
    TextDelta: "text",
    ThinkingDelta: "thinking",
    ToolInputDelta: "partial_json",
}


def redact_events(events: Sequence[StreamEvent], secrets: Sequence[str]) -> list[StreamEvent]:
    """The stream with every secret replaced. A secret can be split across deltas, so each block's text is
    joined first; a block that held one becomes a single delta of its redacted text."""
    joined: dict[tuple[int, type], list[str]] = {}
    for event in events:
        if (field := _DELTA_FIELDS.get(type(event))) is not None:
            joined.setdefault((event.index, type(event)), []).append(getattr(event, field))  # type: ignore[union-attr]
    leaking = {key for key, parts in joined.items() if scrub("".join(parts), secrets) != "".join(parts)}
    result: list[StreamEvent] = []
    for event in events:
        key = (getattr(event, "index", -1), type(event))
        if key not in leaking:
            result.append(event)
            continue
        if parts := joined.pop(key, None):  # the block's first delta carries all of it
            field = _DELTA_FIELDS[type(event)]
            result.append(event.model_copy(update={field: scrub("".join(parts), secrets)}))
    return result


def redact(entry: Entry, environ: Mapping[str, str] | None = None) -> str:
    """The entry's line, with no value of a credential-like environment variable left in it."""
    secrets = secret_values(environ)
    if not secrets:
        return entry.model_dump_json()
    safe = entry.model_copy(update={"events": redact_events(entry.events, secrets)})
    return scrub(safe.model_dump_json(), secrets)


class Recording:
    """The entries of one recording file, and how many of each fingerprint were answered so far."""

    def __init__(self, path: Path, entries: list[Entry] | None = None) -> None:
        self.path = path
        self._entries: list[Entry] = list(entries or [])
        self._taken: dict[str, int] = {}
        self._fresh = False
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> Recording:
        """Read ``path``; a missing file is an empty recording, a damaged one an InvalidInputError."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            raise InvalidInputError(f"cannot read the recording {path}: {exc}") from exc
        except UnicodeDecodeError as exc:  # binary garbage: one line naming the file, not a decode traceback
            raise InvalidInputError(
                f"the recording {path} is damaged: it is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                "re-record it (`%record`, or `agentcell run NOTEBOOK --record`) or delete it"
            ) from None
        entries = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if number == 1:
                    if data != HEADER:
                        raise ValueError(f"expected the header {canonical_json(HEADER)}")
                    continue
                entries.append(Entry.model_validate(data))
            except (ValueError, ValidationError) as exc:
                raise InvalidInputError(
                    f"the recording {path} is damaged at line {number}: {exc}; re-record it (`%record`, or "
                    "`agentcell run NOTEBOOK --record`) or delete it"
                ) from None
        return cls(path, entries)

    @property
    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries)

    def for_model(self, model: str) -> list[Entry]:
        return [e for e in self.entries if e.model == model]

    @property
    def answered(self) -> int:
        """How many entries were replayed since the recording was loaded (or rewound)."""
        with self._lock:
            return sum(self._taken.values())

    def take(self, fingerprint: str) -> Entry | None:
        """The next entry of ``fingerprint`` in recorded order, starting over after the last; None when it
        was never recorded."""
        with self._lock:
            matches = [e for e in self._entries if e.fingerprint == fingerprint]
            if not matches:
                return None
            done = self._taken.get(fingerprint, 0)
            self._taken[fingerprint] = done + 1
            return matches[done % len(matches)]

    def estimate(self, fingerprint: str) -> int | None:
        """The live provider's recorded estimate of that request's tokens; None when none was kept."""
        with self._lock:
            return next((e.estimates[fingerprint] for e in self._entries if fingerprint in e.estimates), None)

    def rewind(self) -> None:
        """Answer from the first entry again (a new run of the notebook)."""
        with self._lock:
            self._taken.clear()

    def start_fresh(self) -> None:
        """The next :meth:`append` replaces the file: a recording holds one run of the notebook."""
        with self._lock:
            self._fresh = True

    def append(self, entry: Entry) -> None:
        line = redact(entry) + "\n"
        with self._lock:
            if self._fresh or not self.path.exists():
                self._entries = []
                self._taken.clear()
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_text(canonical_json(HEADER) + "\n", encoding="utf-8")
                self._fresh = False
            with self.path.open("a", encoding="utf-8") as file:
                file.write(line)
            self._entries.append(Entry.model_validate_json(line))
