"""The secrets of this process (values of credential-like environment variables), and text without them.

What a model or a tool prints may contain an API key; no copy of one may reach the event log, a notebook,
an HTML page, a recording or widget state. Everything that leaves the process through those goes through
:func:`scrub` with :func:`secret_values`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence

__all__ = ["REDACTED", "StreamScrubber", "is_secret_variable", "keep_secret", "scrub", "secret_values"]

SECRET_ENV = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|DSN|(?:^|_)PAT(?:$|_)|(?:^|_)AUTH(?:$|_)", re.IGNORECASE
)
"""Names of variables that hold a credential whole (``GH_PAT``, ``SENTRY_DSN``, ``HTTP_AUTH``)."""
URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:([^@\s/]+)@", re.IGNORECASE)
"""A password inside a URL (``postgresql://user:PASSWORD@host/db`` in ``DATABASE_URL``, ``AGENTCELL_DB``)."""
MIN_SECRET_LENGTH = 8
"""Shorter values ("1", "true") would redact ordinary text."""
REDACTED = "[redacted]"


_kept: set[str] = set()
"""Secrets this process holds outside its environment (a key typed into a hidden prompt)."""


def keep_secret(value: str) -> None:
    """Treat ``value`` as a secret from now on, though no environment variable holds it."""
    if len(value) >= MIN_SECRET_LENGTH:
        _kept.add(value)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of credential-like variables of ``environ`` (this process's by default) and the secrets
    kept by :func:`keep_secret`, longest first."""
    source = os.environ if environ is None else environ
    values = {v for k, v in source.items() if SECRET_ENV.search(k)}
    values |= {password for v in source.values() for password in URL_PASSWORD.findall(v)}
    values = {v for v in values if len(v) >= MIN_SECRET_LENGTH}
    return sorted(values | (_kept if environ is None else set()), key=len, reverse=True)


def is_secret_variable(name: str, value: str) -> bool:
    """Whether an environment variable holds a credential: by its name, or a URL with a password in it."""
    return bool(SECRET_ENV.search(name) or URL_PASSWORD.search(value))


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret replaced, as written and as escaped inside a JSON string."""
    for secret in secrets:
        for spelling in {secret, json.dumps(secret)[1:-1]}:
            if spelling in text:
                text = text.replace(spelling, REDACTED)
    return text


class StreamScrubber:
    """Scrubs text that arrives in pieces (a model's text deltas), so that a secret split across two pieces
    is caught too: the end of a piece that could begin a secret is held back until the next piece of the
    same stream shows whether it does, or until :meth:`flush` when the stream ends."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, int], str] = {}

    def feed(self, stream: tuple[str, int], text: str, secrets: Sequence[str]) -> str:
        """What of ``stream``'s text so far may be shown now, secrets replaced."""
        text = scrub(self._held.pop(stream, "") + text, secrets)
        held = max((k for s in secrets for k in range(1, len(s)) if text.endswith(s[:k])), default=0)
        if held:
            self._held[stream] = text[-held:]
            return text[:-held]
        return text

    def flush(self, event_id: str) -> list[tuple[int, str]]:
        """The text still held for the streams of ``event_id`` (by content index); they ended."""
        done = sorted(key for key in self._held if key[0] == event_id)
        return [(index, self._held.pop((event_id, index))) for _, index in done]

    def clear(self) -> None:
        self._held.clear()
