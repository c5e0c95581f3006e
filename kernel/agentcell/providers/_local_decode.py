"""Reading the local model's output as it streams: JSON replies made under a grammar, and stop sequences."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import IncompleteToolCallError, ProviderError, ProviderProtocolError

__all__ = ["ReplyDecoder", "held_back"]

_ANSWER_HEAD = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_CALL_HEAD = re.compile(r'\s*\{\s*"name"')
_SHOWN = 400
"""Characters of an incomplete call shown in its error (the middle cut out)."""


def held_back(text: str, stops: list[str]) -> int:
    """How many trailing characters of ``text`` could still grow into a stop sequence."""
    return max((k for s in stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)


class ReplyDecoder:
    """Reads a grammar-constrained reply as it streams: an answer's text comes out as it is decoded (JSON
    escapes may be split across tokens); a tool call is parsed whole at the end."""

    def __init__(self, forced: bool) -> None:
        self.raw = ""
        self.kind: str | None = "call" if forced else None
        self._pos = 0
        self._closed = False

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        if self.kind is None:
            if head := _ANSWER_HEAD.match(self.raw):
                self.kind, self._pos = "answer", head.end()
            elif _CALL_HEAD.match(self.raw):
                self.kind = "call"
        return self._decode() if self.kind == "answer" else ""

    def _decode(self) -> str:
        raw, i, safe = self.raw, self._pos, self._pos
        while i < len(raw) and not self._closed:
            if raw[i] == '"':
                self._closed = True
                break
            width = 1
            if raw[i] == "\\":
                width = 6 if raw[i + 1 : i + 2] == "u" else 2
                if width == 6 and raw[i + 2 : i + 4].lower() in ("d8", "d9", "da", "db"):
                    width = 12  # a high surrogate decodes only together with the low one after it
            if i + width > len(raw):
                break
            i = safe = i + width
        segment, self._pos = raw[self._pos : safe], safe
        try:
            return str(json.loads(f'"{segment}"')) if segment else ""
        except ValueError as exc:
            raise ProviderError(f"undecodable answer text {segment!r}", provider="local") from exc

    def tool_call(self, offered: set[str], max_tokens: int) -> tuple[str, dict[str, Any]]:
        try:
            value = json.loads(self.raw)
        except ValueError as exc:
            shown = self.raw if len(self.raw) <= _SHOWN else f"{self.raw[: _SHOWN // 2]} … {self.raw[-_SHOWN // 2 :]}"
            message = (
                f"the model's tool call did not complete within max_tokens={max_tokens} (it wrote {shown!r}); "
                "raise max_tokens (%model NAME max_tokens=N) or ask for a shorter call"
            )
            raise IncompleteToolCallError(
                message, produced=self.raw, provider="local", error_type="max_tokens"
            ) from exc
        if not (isinstance(value, dict) and value.get("name") in offered):
            raise ProviderError(f"the model replied {self.raw!r}, not a tool call", provider="local")
        arguments = value.get("arguments")
        if not isinstance(arguments, dict):
            raise ProviderProtocolError(
                f"the model's call of {value['name']!r} has no arguments object: {self.raw[:300]!r}", provider="local"
            )
        return str(value["name"]), arguments
