"""HTTP plumbing shared by the HTTP providers: one streaming POST with retries, and error mapping.

Retry contract (matching the engine's runner): a request is retried here only while nothing of it has
reached the consumer. Events that show nothing (the response start, an empty block start, usage) are held
back until the first event the engine displays, so a failure early in a stream is still retried here;
after that a failure raises a typed :class:`~agentcell.errors.ProviderError` and the engine abandons its
preview and retries the whole request itself.

Keys never leave this module in readable form: error messages are built from scrubbed server text, the
key travels only in request headers, and nothing here logs headers.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import h11
import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from ..errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderProtocolError,
    ProviderStatusError,
)
from .base import StreamEvent, shows_output
from .retry import RetryPolicy

__all__ = [
    "DEFAULT_TIMEOUT",
    "RETRYABLE_ERROR_TYPES",
    "ErrorContext",
    "HTTPStreamer",
    "RetryPolicy",
    "StreamParser",
    "check_key",
    "clean_key",
    "error_fields",
    "join_url",
    "parse_retry_after",
    "scrub",
    "status_error",
    "whole_json_object",
]

log = logging.getLogger("agentcell.providers")

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
"""The official SDKs' default: long reads (a model may think for minutes), quick connects."""

RETRY_STATUSES = frozenset({408, 409, 429})
"""Besides every status >= 500 (500, 502, 503, 504, 529, ...)."""

RETRYABLE_ERROR_TYPES = frozenset(
    {
        "api_error",
        "overloaded_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "server_error",
        "timeout",
        "timeout_error",
    }
)
"""Error types (either API's, and OpenAI-compatible servers') of a stream error worth retrying."""


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, else ``retry-after`` (seconds or a date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return float(raw_ms) / 1000
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    date = email.utils.parsedate_tz(raw)
    if date is None:
        return None
    return float(email.utils.mktime_tz(date) - time.time())


def join_url(base: str, path: str) -> str:
    """Join like the official SDKs: the base keeps its own path, gains a trailing slash, and ``path`` is
    appended to it (``http://h/proxy`` + ``v1/messages`` -> ``http://h/proxy/v1/messages``)."""
    return base.rstrip("/") + "/" + path.lstrip("/")


_KEYLIKE = re.compile(r"\b(?:sk|key|token)-[A-Za-z0-9_*\-]{6,}")
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def clean_key(value: str | None) -> str | None:
    """A configured key without the whitespace around it (a CRLF ``.env`` file leaves a ``\\r``); None when
    nothing is left, since an empty variable counts as unset, as in the SDKs."""
    return (value.strip() or None) if value is not None else None


def check_key(key: str, *, display: str, key_env: str, provider: str) -> None:
    """Refuse a key that no HTTP header can carry, naming where it comes from and never its value."""
    if _HEADER_SAFE.fullmatch(key) is None:
        raise ProviderAuthError(
            f"the {display} API key is malformed: it contains spaces, control characters or non-ASCII "
            f"characters, and a key is printable ASCII only; check {_key_source(key_env)}",
            provider=provider,
        )


def _key_source(key_env: str) -> str:
    return "the api_key= argument" if key_env == "(none)" else f"the {key_env} environment variable (or api_key=)"


def _forms(secret: str) -> list[str]:
    """The ways a secret shows up in text, longest first: as is, trimmed, JSON-escaped, and quoted by repr()
    as text or as bytes (h11 quotes a refused header as ``b'Bearer ...\\r'``)."""
    forms = {
        secret,
        secret.strip(),
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
    }
    return sorted((f for f in forms if len(f) >= 4), key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str | None]) -> str:
    """Remove every secret (in any quoted form), and anything shaped like an API key, from error text."""
    for secret in secrets:
        if secret:
            for form in _forms(secret):
                text = text.replace(form, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


class EventParser:
    """The feeding both parsers share: a failure after some events of a server-sent event were produced is
    held and raised on the next call, so the events before it are handed over first."""

    _failure: ProviderError | None = None

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]:
        if self._failure is not None:
            raise self._failure
        out: list[StreamEvent] = []
        try:
            self._feed(sse.event, sse.data, out)
        except ProviderError as exc:
            if not out:
                raise
            self._failure = exc
        return out

    def _feed(self, name: str, data: str, out: list[StreamEvent]) -> None:
        raise NotImplementedError


class StreamParser(Protocol):
    """Turns the server-sent events of one response into stream events (one parser per attempt)."""

    def feed(self, sse: ServerSentEvent) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]:
        """The body ended: return the closing events, or raise if the response was incomplete."""
        ...


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """What an error message may name: never the key itself, only where it comes from."""

    provider: str
    display: str
    key_env: str
    base_url: str
    model: str
    secrets: tuple[str | None, ...] = field(repr=False)


class HTTPStreamer:
    """One provider's HTTP client: POST a JSON body, stream the answer through a parser, retry early
    failures."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None,
        timeout: float | httpx.Timeout,
        retry: RetryPolicy,
    ) -> None:
        self._own_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)
        self.retry = retry

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    async def post_json(self, url: str, headers: dict[str, str], body: bytes, context: ErrorContext) -> Any:
        """One POST answered with JSON, not retried (callers use it for what they can do without). Raises
        a typed, scrubbed ProviderError."""
        try:
            response = await self._client.post(url, headers=headers, content=body)
            answer = await _json_or_text(response)
            if response.status_code >= 400:
                raise status_error(response, answer, context)
            return answer
        except ProviderError as exc:
            raise _scrubbed(exc, context.secrets) from None
        except _FAILURES as exc:
            raise _failure(exc, context, answered=False) from None

    async def stream(
        self,
        prepare: Callable[[], tuple[str, dict[str, str], bytes]],
        parser: Callable[[], StreamParser],
        context: ErrorContext,
    ) -> AsyncIterator[StreamEvent]:
        """Stream one request. ``prepare`` returns ``(url, headers, body)``; it runs on first iteration so
        that a missing key or a bad setting raises where the caller consumes the stream."""
        url, headers, body = prepare()
        retries = 0
        loop = asyncio.get_running_loop()
        began = loop.time()
        while True:
            released = answered = False
            watch = _StallWatch(loop, self.retry.stall_seconds)
            try:
                watch.start()
                try:
                    async with self._client.stream("POST", url, headers=headers, content=body) as response:
                        answered = True
                        watch.reading = False
                        if response.status_code >= 400:
                            raise status_error(response, await _json_or_text(response), context)
                        held: list[StreamEvent] = []
                        async for event in _parsed(response, parser(), watch):
                            if released:
                                yield event
                            elif shows_output(event):
                                released = True
                                for early in held:
                                    yield early
                                held.clear()
                                yield event
                            else:
                                held.append(event)
                        for event in held:
                            yield event
                except asyncio.CancelledError:
                    if not watch.fired():
                        raise
                    raise ProviderConnectionError(
                        f"{context.display}: the stream stalled: nothing arrived for {watch.waited:.1f} s "
                        f"(the stall limit is {watch.seconds:g} s; AGENTCELL_STALL_SECONDS sets it)",
                        provider=context.provider,
                        retryable=True,
                    ) from None
                finally:
                    watch.stop()
                return
            except ProviderError as exc:
                error = _scrubbed(exc, context.secrets)
            except _FAILURES as exc:
                error = _failure(exc, context, answered=answered)
            spent = loop.time() - began
            if released or not error.retryable or retries >= self.retry.max_retries:
                raise error
            if spent >= self.retry.max_total_seconds:
                raise error  # retrying longer would hold the cell past what anyone waits for
            wait = self.retry.delay(retries, error.retry_after)
            retries += 1
            log.info(
                "%s request failed before any output (%s); retry %d of %d in %.2f s",
                context.display,
                error,
                retries,
                self.retry.max_retries,
                wait,
            )
            await asyncio.sleep(wait)


_FAILURES = (
    httpx.TransportError,
    httpx.DecodingError,
    httpx.InvalidURL,
    SSEError,
    h11.LocalProtocolError,
    UnicodeEncodeError,
)
"""What an HTTP exchange raises besides our own ProviderErrors; :func:`_failure` types each."""


async def _parsed(response: httpx.Response, feed: StreamParser, watch: _StallWatch) -> AsyncIterator[StreamEvent]:
    """The response's stream events, the stall watch told of every wait for the server and of progress."""
    source = EventSource(response).aiter_sse().__aiter__()
    loop = watch.loop
    while True:
        watch.reading = True  # only a wait for the server can stall, not the reader's own work
        try:
            sse = await source.__anext__()
        except StopAsyncIteration:
            break
        finally:
            watch.reading = False
        events = feed.feed(sse)
        if events:  # a keep-alive ping makes none: it does not count as the stream going on
            watch.last = loop.time()
        for event in events:
            yield event
    for event in feed.finish():
        yield event


class _StallWatch:
    """One timer per stall period (not per event: the hot path only stores a time): when the stream has
    delivered nothing for ``seconds`` while we wait on the server, it cancels the reading task, and the
    stream turns that cancellation into a retryable stall error."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop = loop
        self.seconds = seconds
        self.last = loop.time()
        self.reading = True
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._fired = False
        self.waited = 0.0
        """When it fired: how long nothing had arrived, as the error says (not the limit: a check that found
        the reader busy comes back later)."""

    def start(self) -> None:
        self._task = asyncio.current_task()
        self.last = self.loop.time()
        self._handle = self.loop.call_at(self.last + self.seconds, self._check)

    def _check(self) -> None:
        now = self.loop.time()
        if self.reading and now - self.last >= self.seconds and self._task is not None:
            self._fired = True
            self.waited = now - self.last
            self._task.cancel()
            return
        # The reader busy with its own work past the limit: look again soon rather than a whole period on,
        # which let a stalled stream wait up to twice the limit.
        due = self.last + self.seconds
        self._handle = self.loop.call_at(due if due > now else now + min(self.seconds, 0.25), self._check)

    def fired(self) -> bool:
        """Whether the cancellation was this watch's; then it is taken back (the task goes on)."""
        if self._fired and self._task is not None:
            self._fired = False
            self._task.uncancel()
            return True
        return False

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _failure(exc: Exception, context: ErrorContext, *, answered: bool) -> ProviderError:
    """The typed, scrubbed ProviderError for an exception of :data:`_FAILURES`."""
    reason = scrub(f"{type(exc).__name__}: {exc}", context.secrets)
    if isinstance(exc, httpx.LocalProtocolError | h11.LocalProtocolError | UnicodeEncodeError):
        # A header the request cannot carry. The exception quotes it (the key, likely), so it is not chained,
        # and sending the request again cannot help.
        return ProviderAuthError(
            f"{context.display}: the request has a header HTTP cannot carry ({reason}); check "
            f"{_key_source(context.key_env)} and any custom headers",
            provider=context.provider,
        )
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return ProviderConnectionError(
            f"{context.display}: cannot send to {context.base_url}, which is not a valid http(s) URL "
            f"({reason}); check the base URL",
            provider=context.provider,
        )
    error: ProviderError
    if isinstance(exc, httpx.TimeoutException):
        error = ProviderConnectionError(
            f"{context.display} timed out ({type(exc).__name__}) at {context.base_url}",
            provider=context.provider,
            retryable=True,
        )
    elif isinstance(exc, SSEError):
        error = ProviderProtocolError(
            f"{context.display} did not answer with an event stream: {scrub(str(exc), context.secrets)}",
            provider=context.provider,
        )
    elif isinstance(exc, httpx.DecodingError):
        error = ProviderProtocolError(
            f"{context.display} sent a body that cannot be decoded: {scrub(str(exc), context.secrets)}",
            provider=context.provider,
        )
    else:
        what = "the stream was cut" if answered else f"cannot reach {context.base_url}"
        error = ProviderConnectionError(
            f"{context.display}: {what} ({reason})", provider=context.provider, retryable=True
        )
    error.__cause__ = exc
    return error


def _scrubbed(error: ProviderError, secrets: Sequence[str | None]) -> ProviderError:
    # Parsers quote server text in their messages; a server that echoes the key must not leak it.
    clean = scrub(error.message, secrets)
    if clean != error.message:
        error.message = clean
        error.args = (clean, *error.args[1:])
    return error


async def _json_or_text(response: httpx.Response) -> Any:
    raw = await response.aread()
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _should_retry(response: httpx.Response) -> bool:
    override = response.headers.get("x-should-retry")
    if override in ("true", "false"):
        return bool(override == "true")
    return response.status_code in RETRY_STATUSES or response.status_code >= 500


def error_fields(body: Any) -> tuple[str | None, str, dict[str, Any]]:
    """``(error type, message, the error object)`` from an error body of either API, or Ollama's
    ``{"error": "text"}``, or plain text."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            kind = error.get("type") or error.get("code")
            return (str(kind) if kind else None), str(error.get("message") or ""), error
        if isinstance(error, str):
            return None, error, {}
        if isinstance(body.get("message"), str):
            return None, body["message"], {}
        return None, json.dumps(body)[:500], {}
    text = str(body).strip()
    return None, text[:500], {}


def status_error(response: httpx.Response, body: Any, context: ErrorContext) -> ProviderError:
    status = response.status_code
    kind, message, error = error_fields(body)
    message = scrub(message, context.secrets) or response.reason_phrase or "no message"
    label = f"HTTP {status}" + (f" {kind}" if kind else "")
    request_id = response.headers.get("request-id") or response.headers.get("x-request-id")
    suffix = f" (request {request_id})" if request_id else ""
    common: dict[str, Any] = {"provider": context.provider, "status_code": status, "error_type": kind}
    if status in (401, 403):
        return ProviderAuthError(
            f"{context.display} refused the credentials ({label}: {message}); check the "
            f"{context.key_env} environment variable{suffix}",
            **common,
        )
    if status == 404:
        return ProviderStatusError(
            f"{context.display} has no model {context.model!r} at {context.base_url} ({label}: {message}); "
            f"check the model name and the base URL{suffix}",
            **common,
        )
    retryable = _should_retry(response)
    details = error.get("details")
    if isinstance(details, dict) and details.get("error_code") == "enforced_spend_limit_reached":
        retryable = False  # a spend cap does not lift by waiting
    return ProviderStatusError(
        f"{context.display} returned {label}: {message}{suffix}",
        retryable=retryable,
        retry_after=parse_retry_after(response.headers),
        **common,
    )


def whole_json_object(arguments: str) -> bool:
    """Whether a call's arguments are whole: a JSON object, or nothing at all (a call without input)."""
    if not arguments.strip():
        return True
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False
