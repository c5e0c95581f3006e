"""An external agent's exchange recorded beside the notebook, so a shared notebook replays with no agent.

``name.agentcell-acp.jsonl`` sits beside ``name.ipynb`` (and its model recording, ``name.agentcell.jsonl``);
it follows the notebook's replay mode (``%record``, ``%replay``; see ``providers/replay.py``). Recording, each
prompt's ``session/update``s are kept in order (a run of text chunks joined into one, so no secret is split
across two, then every secret scrubbed) with the agent's stop reason; a recording holds one run. Replaying,
a prompt is answered from the entry of the same agent and text, in recorded order, without starting the
agent: the same events, hence the same cards, text and cost. ``replay`` refuses a prompt that was not
recorded; ``auto`` sends it to the agent.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import AgentMessageChunk, AgentThoughtChunk, SessionNotification, TextContentBlock
from pydantic import BaseModel, ConfigDict, ValidationError

from .._secrets import scrub, secret_values
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..providers.replay import Replayer

__all__ = ["ExchangeEntry", "ExchangeRecording", "ExchangeReplay", "exchange_path"]

HEADER = {"agentcell_acp_recording": 1}


def exchange_path(recording: Path) -> Path:
    """``name.agentcell.jsonl`` (the notebook's model recording) → ``name.agentcell-acp.jsonl``."""
    return recording.with_name(recording.name.removesuffix(".agentcell.jsonl") + ".agentcell-acp.jsonl")


class ExchangeEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    prompt: str
    updates: list[dict[str, Any]]
    """Each ``session/update``'s ``update``, as sent (by alias)."""
    stop_reason: str

    def parsed(self) -> list[Any]:
        return [SessionNotification.model_validate({"sessionId": "-", "update": u}).update for u in self.updates]


class ExchangeRecording:
    """The exchanges of one notebook, and how many of each (agent, prompt) were replayed so far."""

    def __init__(self, path: Path, *, fresh: bool = False) -> None:
        self.path = path
        self._entries: list[ExchangeEntry] | None = None
        self._taken: dict[tuple[str, str], int] = {}
        self._fresh = fresh
        """The next append replaces the file (``%record``: a recording holds one run)."""
        self._lock = threading.Lock()

    @property
    def entries(self) -> list[ExchangeEntry]:
        if self._entries is None:
            self._entries = [] if self._fresh else _load(self.path)
        return self._entries

    def knows(self, agent: str) -> bool:
        return any(e.agent == agent for e in self.entries)

    def take(self, agent: str, prompt: str) -> ExchangeEntry | None:
        """The next recorded answer to ``prompt`` by ``agent``, starting over after the last; None when it was
        never recorded."""
        with self._lock:
            matches = [e for e in self.entries if (e.agent, e.prompt) == (agent, prompt)]
            if not matches:
                return None
            done = self._taken.get((agent, prompt), 0)
            self._taken[(agent, prompt)] = done + 1
            return matches[done % len(matches)]

    def append(self, agent: str, prompt: str, updates: list[Any], stop_reason: str) -> None:
        dumped = [u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in _joined(updates)]
        entry = ExchangeEntry(agent=agent, prompt=prompt, updates=dumped, stop_reason=stop_reason)
        line = entry.model_dump_json()
        if secrets := secret_values():
            line = scrub(line, secrets)
        with self._lock:
            if self._fresh or not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_text(json.dumps(HEADER) + "\n", encoding="utf-8")
                self._entries, self._fresh = [], False
            with self.path.open("a", encoding="utf-8") as file:
                file.write(line + "\n")
            self.entries.append(ExchangeEntry.model_validate_json(line))


def _joined(updates: list[Any]) -> list[Any]:
    """Consecutive text chunks of one kind (and message) as one chunk."""
    joined: list[Any] = []
    for update in updates:
        last: Any = joined[-1] if joined else None
        same = (
            isinstance(update, AgentMessageChunk | AgentThoughtChunk)
            and type(last) is type(update)
            and isinstance(update.content, TextContentBlock)
            and isinstance(last.content, TextContentBlock)
            and last.message_id == update.message_id
        )
        if same:
            text = TextContentBlock(type="text", text=last.content.text + update.content.text)
            joined[-1] = last.model_copy(update={"content": text})
        else:
            joined.append(update)
    return joined


def _load(path: Path) -> list[ExchangeEntry]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the agent recording {path}: {exc}") from None
    entries: list[ExchangeEntry] = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            entries.append(ExchangeEntry.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the line"
            raise InvalidInputError(
                f"the agent recording {path} is damaged at line {number}: {where}: {first['msg']}; re-record it "
                "(`%record`) or delete it"
            ) from None
    return entries


class ExchangeReplay:
    """The notebook's replay mode (its :class:`~agentcell.providers.replay.Replayer`) applied to the agent
    exchange: which recording a turn reads or writes now."""

    def __init__(self, replayer: Replayer) -> None:
        self.replayer = replayer
        self._recording: ExchangeRecording | None = None
        self._recording_mode = False

    @property
    def mode(self) -> str:
        return self.replayer.mode

    @property
    def recording(self) -> ExchangeRecording:
        """The recording; a new, empty one each time the notebook starts recording (``%record``)."""
        recording_now = self.replayer.mode == "record"
        if self._recording is None or recording_now != self._recording_mode:
            self._recording = ExchangeRecording(exchange_path(self.replayer.path), fresh=recording_now)
            self._recording_mode = recording_now
        return self._recording
