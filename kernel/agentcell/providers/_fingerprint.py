"""The fingerprint of a provider request: what a recording is keyed by.

A request is reduced to its parts (the model id, the system prompt, the tools, the settings, and each
message), each part is normalised and hashed, and the fingerprint is the hash of those hashes. Keeping the
per-part hashes in a recording lets a miss say *what* differs (the settings, or the conversation from its
fifth message on) without storing the conversation a second time.

Normalising makes the fingerprint depend on what the model was asked, not on how it was spelt:

* JSON is serialised canonically (sorted keys, no whitespace, ASCII escapes), so dict order and the
  serialiser's spacing never matter, and text that is itself a JSON document is re-serialised the same way;
* tool-call ids, which each provider mints afresh, become ``call-1``, ``call-2``… in order of appearance,
  and so do the ids the engine mints afresh on every run that reach a model: thread ids (``thread-1``…, in
  spawn_thread's answer) and agent ids (``agent-1``…, of the saved agents a coordinator may spawn). The
  digest keeps those it saw, in that order, so a replay can put this run's ids into a recorded answer;
* the notebook's directory, when the caller names it, becomes ``<dir>``, so a tool result that mentions a
  path matches on another machine;
* ``None`` fields are left out, so adding an optional field to the request types keeps old recordings valid;
* settings fields whose names look like credentials are dropped: a secret never reaches a hash input.

Only ``json``, ``hashlib`` and ``re`` are used, whose outputs are fixed across Python versions and
platforms, and nothing depends on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import ModelRequest, StreamEvent, TextDelta, TextPart, ToolInputDelta

__all__ = [
    "DIR_PLACEHOLDER",
    "RequestDigest",
    "canonical_json",
    "digest_request",
    "last_user_text",
    "normalise_model_id",
    "translate_minted_ids",
]

_SECRET_NAME = re.compile(
    r"api[_-]?key|secret|passw(or)?d|authori[sz]ation|bearer|credential|cookie|(access|auth|api|bearer)[_-]?token"
    r"|^token$|^key$",
    re.IGNORECASE,
)
DIR_PLACEHOLDER = "<dir>"


def canonical_json(value: Any) -> str:
    """One spelling per JSON value: sorted keys, no whitespace, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _hash(value: Any, length: int = 16) -> str:
    return hashlib.sha256(canonical_json(value).encode("ascii")).hexdigest()[:length]


@dataclass(frozen=True, slots=True)
class RequestDigest:
    """A request's part hashes (the model id as is: it is short, and readable in a recording) and its
    fingerprint."""

    model: str
    system: str
    tools: str
    settings: str
    messages: tuple[str, ...]
    minted_ids: tuple[str, ...] = field(default=(), compare=False)
    """The thread, agent and run ids the request mentions, in the order they were numbered (not fingerprinted)."""

    @property
    def fingerprint(self) -> str:
        return _hash(self.parts(), 32)

    def parts(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "system": self.system,
            "tools": self.tools,
            "settings": self.settings,
            "messages": list(self.messages),
        }

    @classmethod
    def from_parts(cls, parts: Mapping[str, Any]) -> RequestDigest:
        return cls(
            model=str(parts["model"]),
            system=str(parts["system"]),
            tools=str(parts["tools"]),
            settings=str(parts["settings"]),
            messages=tuple(str(m) for m in parts["messages"]),
        )


_MINTED_ID = re.compile(r"\b(sthr|agent|wfrun)_[0-9A-HJKMNP-TV-Z]{26}\b")
_PLACEHOLDER = {"sthr": "thread", "agent": "agent", "wfrun": "workflow-run"}


def translate_minted_ids(events: Sequence[StreamEvent], ids: Mapping[str, str]) -> list[StreamEvent]:
    """``events`` with the ids of ``ids`` replaced: a recorded answer (``wait_thread`` on a thread of the
    recorded run) put in this run's terms. An id can be split across deltas, so each block's deltas are
    joined, replaced and cut again at the same places: a recorded id and this run's have the same length.
    A tool call's input arrives in deltas only (its BlockStart carries none), so deltas are all there is."""
    if not ids:
        return list(events)
    pattern = re.compile("|".join(re.escape(old) for old in ids))
    joined: dict[tuple[int, str], str] = {}
    for event in events:
        if isinstance(event, TextDelta | ToolInputDelta):
            key = (event.index, event.kind)
            joined[key] = joined.get(key, "") + _delta_text(event)
    replaced = {key: pattern.sub(lambda match: ids[match.group(0)], text) for key, text in joined.items()}
    offsets: dict[tuple[int, str], int] = {}
    out: list[StreamEvent] = []
    for event in events:
        if isinstance(event, TextDelta | ToolInputDelta):
            key = (event.index, event.kind)
            start = offsets.get(key, 0)
            offsets[key] = start + len(_delta_text(event))
            text = replaced[key][start : offsets[key]]
            out.append(event.model_copy(update={"text" if isinstance(event, TextDelta) else "partial_json": text}))
        else:
            out.append(event)
    return out


def _delta_text(event: TextDelta | ToolInputDelta) -> str:
    return event.text if isinstance(event, TextDelta) else event.partial_json


class _Normaliser:
    def __init__(self, directories: Sequence[str]) -> None:
        # Longest first, so /a/b/c is replaced before its parent /a/b.
        self._directories = sorted({d.rstrip("/") for d in directories if d.rstrip("/")}, key=len, reverse=True)
        self._call_ids: dict[str, str] = {}
        self._minted: dict[str, str] = {}

    def call_id(self, value: str) -> str:
        return self._call_ids.setdefault(value, f"call-{len(self._call_ids) + 1}")

    @property
    def minted_ids(self) -> tuple[str, ...]:
        return tuple(self._minted)

    def _minted_id(self, match: re.Match[str]) -> str:
        minted, prefix = match.group(0), match.group(1)
        if minted not in self._minted:
            number = sum(1 for m in self._minted if m.startswith(prefix)) + 1
            self._minted[minted] = f"{_PLACEHOLDER[prefix]}-{number}"
        return self._minted[minted]

    def text(self, value: str) -> str:
        for directory in self._directories:
            value = value.replace(directory, DIR_PLACEHOLDER)
        # Thread, agent and workflow run ids are new on every run and reach the model (in spawn_thread's and
        # start_workflow_run's answers, in their lists of agents): number them by first appearance, as call ids are.
        value = _MINTED_ID.sub(self._minted_id, value)
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
            try:
                return canonical_json(json.loads(stripped))
            except ValueError:  # prose that merely starts with a brace
                pass
        return value

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.walk(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.walk(item) for item in value]
        return value

    def message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        parts = []
        for original in message["content"]:
            part = dict(original)
            if part.get("type") == "tool_call":
                part["id"] = self.call_id(part["id"])
            elif part.get("type") == "tool_result":
                part["call_id"] = self.call_id(part["call_id"])
            parts.append(self.walk(part))
        return {"role": message["role"], "content": parts}


def _without_secrets(settings: dict[str, Any]) -> dict[str, Any]:
    extra = settings.get("extra") or {}
    settings["extra"] = {k: v for k, v in extra.items() if not _SECRET_NAME.search(k)}
    return settings


def digest_request(model_id: str, request: ModelRequest, *, directories: Sequence[str] = ()) -> RequestDigest:
    """The digest of ``request`` sent to the model ``model_id`` (the full id, ``local:smollm2``: the bare name
    in the request cannot tell ``ollama:x`` from ``vllm:x``); ``directories`` are replaced by ``<dir>``."""
    normaliser = _Normaliser(directories)
    data = request.model_dump(mode="json", exclude_none=True)
    settings = _without_secrets(data.get("settings", {}))
    return RequestDigest(
        model=normaliser.text(model_id),
        system=_hash(normaliser.walk(data.get("system", ""))),
        tools=_hash(normaliser.walk(data.get("tools", []))),
        settings=_hash(normaliser.walk(settings)),
        messages=tuple(_hash(normaliser.message(m)) for m in data["messages"]),
        minted_ids=normaliser.minted_ids,
    )


def normalise_model_id(model_id: str, *, directories: Sequence[str] = ()) -> str:
    """The model id as a digest holds it (``scripted:/nb/dir/script.json`` → ``scripted:<dir>/script.json``)."""
    return _Normaliser(directories).text(model_id)


def last_user_text(request: ModelRequest, limit: int = 80) -> str:
    """The latest text the user wrote, shortened: how a person recognises the cell a request came from."""
    for message in reversed(request.messages):
        if message.role != "user":
            continue
        texts = [p.text for p in message.content if isinstance(p, TextPart)]
        if texts:  # a message of tool results only is the tool's answer, not the user's words
            text = " ".join(" ".join(texts).split())
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""
