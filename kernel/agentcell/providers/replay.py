"""Record and replay: a notebook's provider streams saved next to it, so it re-runs with no key.

A :class:`Replayer` owns one recording (``name.agentcell.jsonl`` beside ``name.ipynb``) and a mode:

* ``off``: every request goes to the live provider, nothing is written;
* ``record``: requests go live and their streams are written to the recording, which then holds this run
  only (the first new entry replaces the file);
* ``replay``: requests are answered from the recording and never reach a provider; a request that was not
  recorded fails with :class:`ReplayMissError`, naming the cell and what differs;
* ``auto``: replay on a hit, else run live; when the live provider cannot run (no key, no server, no
  local model) the request fails with the same "not recorded" error.

It is installed where models are resolved (``Engine(replay=...)`` hands :meth:`Replayer.wrap` to the
provider registry), so the turn loop is unchanged: a replayed response goes through the same runner and
yields the same engine events. Replay is exact: the recorded events in their order, the recorded usage,
and the recorded list cost (see :func:`~agentcell.providers._recording.recorded_pricing`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import Literal, TypeAlias, get_args

from ..errors import InvalidInputError, ProviderError, ReplayMissError, UserError
from ..usage import FREE, InputBilling, Pricing
from ._fingerprint import (
    DIR_PLACEHOLDER,
    RequestDigest,
    digest_request,
    last_user_text,
    normalise_model_id,
    translate_minted_ids,
)
from ._recording import CellRef, Entry, Prices, Recording, recorded_pricing, recording_path
from .base import ModelConfig, ModelRequest, Provider, ResponseStart, StreamEvent, UsageUpdate

__all__ = [
    "MODES",
    "NOT_RECORDED",
    "CellRef",
    "ReplayMode",
    "ReplayProvider",
    "Replayer",
    "parse_mode",
    "recording_path",
]

ReplayMode: TypeAlias = Literal["off", "record", "replay", "auto"]
Source: TypeAlias = Literal["replay", "live"]
MODES: tuple[ReplayMode, ...] = get_args(ReplayMode)

NOT_RECORDED = "not recorded:"
"""How every :class:`ReplayMissError` message starts (``agentcell run`` looks for it in a turn's errors)."""
HOW_TO_CHOOSE = (
    "Choose: `%replay auto` runs what was not recorded live (a model must be configured: an API key, or "
    "`%model local:smollm2`); `%record` re-records (then run the notebook from the top); or undo the edit."
)


def parse_mode(value: str) -> ReplayMode:
    mode = value.strip().lower()
    for known in MODES:
        if mode == known:
            return known
    raise InvalidInputError(f"unknown replay mode {value!r}; use one of: {', '.join(MODES)}")


class Replayer:
    """One notebook's recording and replay mode. ``cell`` tells which cell is running (the kernel knows)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: ReplayMode = "off",
        *,
        cell: Callable[[], CellRef | None] | None = None,
    ) -> None:
        self.path = Path(path).absolute()
        self._cell = cell or (lambda: None)
        self._recording: Recording | None = None
        self._mode: ReplayMode = "off"
        self.mode = mode
        self.misses = 0
        """Requests that were not in the recording (answered live in ``auto``, or failed)."""
        self.live = 0
        """Requests sent to a live provider."""

    @classmethod
    def for_notebook(
        cls,
        notebook: str | os.PathLike[str],
        mode: ReplayMode = "off",
        *,
        cell: Callable[[], CellRef | None] | None = None,
    ) -> Replayer:
        return cls(recording_path(notebook), mode, cell=cell)

    # ------------------------------------------------------------------------------------------ state

    @property
    def mode(self) -> ReplayMode:
        return self._mode

    @mode.setter
    def mode(self, mode: ReplayMode) -> None:
        if mode == "record":
            # A recording holds one run: what this run records replaces it (the old file stays until then).
            self._recording = Recording(self.path)
            self._recording.start_fresh()
        elif self._mode == "record":
            self._recording = None  # replay what was just written, from its first entry
        self._mode = mode

    @property
    def from_start(self) -> bool:
        """Whether requests are answered from an existing recording, which holds a conversation from its first
        turn: a host then starts the conversation afresh rather than continuing an earlier one."""
        return self._mode in ("replay", "auto") and self.path.exists()

    @property
    def recording(self) -> Recording:
        if self._recording is None:
            self._recording = Recording.load(self.path)
        return self._recording

    def recorded_model(self) -> str | None:
        """The model id of the recording's first request, as it applies here (its folder put back)."""
        entries = self.recording.entries
        if not entries:
            return None
        return entries[0].model.replace(DIR_PLACEHOLDER, str(self.path.parent))

    def current_cell(self) -> CellRef | None:
        return self._cell()

    def _directories(self) -> list[str]:
        folder = self.path.parent
        return [str(folder), str(folder.resolve())]

    def digest(self, model_id: str, request: ModelRequest) -> RequestDigest:
        return digest_request(model_id, request, directories=self._directories())

    def model_key(self, model_id: str) -> str:
        return normalise_model_id(model_id, directories=self._directories())

    def status(self) -> str:
        recording = self.recording
        return (
            f"replay mode: {self._mode}; recording: {self.path} ({len(recording.entries)} requests, "
            f"{recording.answered} replayed); sent live: {self.live}; not recorded: {self.misses}"
        )

    # ------------------------------------------------------------------------------------------ wrapping

    def wrap(self, config: ModelConfig, build: Callable[[], Provider]) -> Provider:
        """The registry hook: serve ``config`` through this replayer; ``build`` makes the live provider."""
        return ReplayProvider(self, config.id, build)

    def miss_error(self, request: ModelRequest, digest: RequestDigest, cause: str | None = None) -> ReplayMissError:
        """The "not recorded" error: which cell, what it asked, what differs, and how to choose."""
        cell = self.current_cell() or CellRef()
        prompt = last_user_text(request)
        subject = f"{cell.describe()}{f' “{prompt}”' if prompt else ''}"
        missing = f"{NOT_RECORDED} {subject}: {self.path.name} has no answer for it ({self._diagnose(digest)})"
        if cause is None:
            return ReplayMissError(f"{missing}, and replay mode sends nothing live. {HOW_TO_CHOOSE}")
        return ReplayMissError(f"{missing}, and it cannot run live: {cause}. {HOW_TO_CHOOSE}")

    def _diagnose(self, digest: RequestDigest) -> str:
        """What differs between the request and the recorded request it resembles most."""
        recording = self.recording
        if not recording.entries:
            return "the recording is empty" if self.path.exists() else "there is no recording yet"
        same_model = recording.for_model(digest.model)
        if not same_model:
            models = ", ".join(sorted({e.model for e in recording.entries}))
            return f"nothing was recorded for the model {digest.model}; the recording has {models}"

        def shared(entry: Entry) -> int:
            count = 0
            for ours, theirs in zip(digest.messages, entry.parts.get("messages", []), strict=False):
                if ours != theirs:
                    break
                count += 1
            return count

        best = max(same_model, key=shared)
        common = shared(best)
        recorded = RequestDigest.from_parts(best.parts)
        if common == len(digest.messages) == len(recorded.messages):
            labels = {"system": "the system prompt", "tools": "the tools offered", "settings": "the model settings"}
            changed = [label for part, label in labels.items() if getattr(recorded, part) != getattr(digest, part)]
            return f"{' and '.join(changed)} differ from the recording"
        if common == len(recorded.messages) < len(digest.messages):
            return (
                f"the conversation goes on past the recording: after the {common} recorded message(s) this "
                "session holds more; `%session new` starts the notebook's conversation afresh"
            )
        nearest = best.cell.describe() if best.cell else "a recorded cell"
        asked = f" “{best.prompt}”" if best.prompt else ""
        return (
            f"the conversation matches the recording for {common} message(s), then differs from the nearest "
            f"recorded request, {nearest}{asked}: an edited cell, or an earlier one that answered differently"
        )


class ReplayProvider(Provider):
    """Serves one model through a :class:`Replayer`: from the recording, live, or live and recorded."""

    name = "replay"

    def __init__(self, replayer: Replayer, model_id: str, build: Callable[[], Provider]) -> None:
        self.replayer = replayer
        self.model_id = model_id
        self._build = build
        self._live: Provider | None = None
        self._estimates: dict[str, int] = {}
        """Record mode: the live estimates asked since the latest entry (see ``Entry.estimates``)."""

    def __repr__(self) -> str:
        return f"ReplayProvider({self.model_id!r}, mode={self.replayer.mode!r})"

    def live(self) -> Provider:
        """The live provider, built on first use: a replay never constructs it."""
        if self._live is None:
            self._live = self._build()
        return self._live

    def pricing(self, model: str) -> Pricing | None:
        replayer = self.replayer
        if replayer.mode in ("off", "record"):
            return self.live().pricing(model)
        entries = replayer.recording.for_model(replayer.model_key(self.model_id))
        if entries:
            if any(entry.list_cost is None for entry in entries):
                return None  # recorded with no list price: its cost stays unknown on replay too
            return recorded_pricing(entries)
        if replayer.mode == "replay":
            return FREE  # nothing of this model can be answered, so nothing will be charged
        try:
            return self.live().pricing(model)
        except UserError:  # the model cannot run here: the request will fail as "not recorded"
            return FREE

    def input_token_bound(self, request: ModelRequest) -> int:
        if self.replayer.mode in ("off", "record"):
            return self.live().input_token_bound(request)
        return super().input_token_bound(request)  # the byte bound is safe and needs no live provider

    def context_window(self, model: str) -> int | None:
        # A replay builds no live provider to ask: the window the live provider reported is in the recording,
        # so a replay compacts where the recorded run did. A recording without it (made before it was
        # kept, or of a model whose window was unknown) compacts only where the model config names one.
        replayer = self.replayer
        if replayer.mode in ("off", "record"):
            return self.live().context_window(model)
        entries = replayer.recording.for_model(replayer.model_key(self.model_id))
        if entries:
            return next((e.context_window for e in reversed(entries) if e.context_window), None)
        if replayer.mode == "replay":
            return None
        try:  # auto, nothing of this model recorded: it runs live, against the live provider's window
            return self.live().context_window(model)
        except UserError:
            return None

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        replayer = self.replayer
        if replayer.mode == "off":
            return self.live().estimate_input_tokens(request)
        fingerprint = replayer.digest(self.model_id, request).fingerprint
        if replayer.mode == "record":
            estimate = self.live().estimate_input_tokens(request)
            self._estimates[fingerprint] = estimate  # written with the next entry
            return estimate
        recorded = replayer.recording.estimate(fingerprint)
        return recorded if recorded is not None else super().estimate_input_tokens(request)

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        if self.replayer.mode in ("off", "record"):
            return await self.live().count_input_tokens(request)
        return None  # a replay sends nothing live, counting included

    def check_ready(self) -> None:
        replayer = self.replayer
        if replayer.mode in ("replay", "auto") and replayer.recording.for_model(replayer.model_key(self.model_id)):
            return  # the recording answers this model
        if replayer.mode != "replay":
            self.live().check_ready()

    def preparing(self) -> str | None:
        return self.live().preparing() if self.replayer.mode in ("off", "record") else None

    def input_billing(self, request: ModelRequest) -> InputBilling:
        if self.replayer.mode in ("off", "record"):
            return self.live().input_billing(request)
        return super().input_billing(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        replayer = self.replayer
        mode = replayer.mode
        if mode == "off":
            replayer.live += 1
            async for event in self.live().stream(request):
                yield event
            return
        digest = replayer.digest(self.model_id, request)
        if mode == "record":
            async for event in self._record(request, digest):
                yield event
            return
        entry = replayer.recording.take(digest.fingerprint)
        if entry is not None:
            ids = {old: new for old, new in zip(entry.minted_ids, digest.minted_ids, strict=False) if old != new}
            async for event in _marked(translate_minted_ids(entry.events, ids), "replay"):
                await asyncio.sleep(0)  # let interrupts and the renderer in, as a socket read would
                yield event
            return
        replayer.misses += 1
        if mode == "replay":
            raise replayer.miss_error(request, digest)
        async for event in self._live_after_miss(request, digest):
            yield event

    async def _live_after_miss(self, request: ModelRequest, digest: RequestDigest) -> AsyncIterator[StreamEvent]:
        """``auto`` without a recorded answer: go live. A provider that fails before its first event (no key,
        nothing listening, no local model) turns this into the "not recorded" error."""
        started = False
        try:
            provider = self.live()
            self.replayer.live += 1
            async for event in _marked(provider.stream(request), "live"):
                started = True
                yield event
        except (ProviderError, UserError) as exc:
            if started:
                raise
            raise self.replayer.miss_error(request, digest, str(exc)) from exc

    async def _record(self, request: ModelRequest, digest: RequestDigest) -> AsyncIterator[StreamEvent]:
        replayer = self.replayer
        provider = self.live()
        pricing = provider.pricing(request.model)
        cell = replayer.current_cell()
        events: list[StreamEvent] = []
        began = time.perf_counter()
        replayer.live += 1
        async for event in provider.stream(request):
            events.append(event)
            yield event
        # Only a complete response is recorded: a failed or interrupted attempt is retried or abandoned live,
        # and the replay answers the request with the response that finally came.
        usage = next((e.usage for e in reversed(events) if isinstance(e, UsageUpdate)), None)
        self._estimates, estimates = {}, self._estimates
        replayer.recording.append(
            Entry(
                fingerprint=digest.fingerprint,
                model=digest.model,
                parts=digest.parts(),
                cell=cell,
                prompt=last_user_text(request),
                events=events,
                list_cost=(pricing(usage) if usage is not None else Decimal(0)) if pricing is not None else None,
                prices=Prices.probe(pricing) if pricing is not None else Prices(),
                seconds=round(time.perf_counter() - began, 3),
                minted_ids=list(digest.minted_ids),
                context_window=provider.context_window(request.model),
                estimates=estimates,
            )
        )

    async def aclose(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            await live.aclose()


async def _marked(
    events: Iterable[StreamEvent] | AsyncIterable[StreamEvent], source: Source
) -> AsyncIterator[StreamEvent]:
    """``events`` with their response's start saying where the answer came from (a start is added first when
    a recorded stream has none)."""
    first = True
    iterator = events if isinstance(events, AsyncIterable) else _aiter(events)
    async for event in iterator:
        if first and isinstance(event, ResponseStart):
            yield event.model_copy(update={"source": source})
        else:
            if first:
                yield ResponseStart(source=source)
            yield event
        first = False


async def _aiter(events: Iterable[StreamEvent]) -> AsyncIterator[StreamEvent]:
    for event in events:
        yield event
