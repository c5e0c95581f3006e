"""Fuzzing: hostile SSE bytes, scrambled event logs, damaged recordings and magic lines fail only with typed errors.

Hypothesis mutates the recorded SSE fixtures and streams them from a real loopback server into both
providers: a stream either folds into a response or fails with a ``ProviderError``, never a ``KeyError``,
``ValidationError`` or ``UnicodeDecodeError``. Event logs recorded from real turns, shuffled, cut and
repeated, fold and render (HTML and Markdown fallbacks) without raising at all. A damaged recording is an
``InvalidInputError``, a line the ACP server reads is a JSON-RPC error response, and a magic's line, however
garbled, is a ``UsageError`` (IPython's one-line error) or an ``AgentCellError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from agentcell import events as ev
from agentcell.acp.wire import check_line
from agentcell.errors import AgentCellError, InvalidInputError, ProviderError
from agentcell.kernel.host import NotebookAgent
from agentcell.kernel.magics import register_magics
from agentcell.providers._http import RetryPolicy
from agentcell.providers._recording import Recording
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.openai import OpenAIProvider
from agentcell.render.fallback_html import fallback_html
from agentcell.render.fold import TurnFold
from agentcell.render.markdown import footer

from ..fixtures.make_event_logs import OUT as EVENT_LOGS
from ..kernel.conftest import host  # noqa: F401 - the notebook host over a plain IPython shell, a fixture here
from ..providers.conftest import API_KEY, FIXTURES, Reply, SSEServer, request

NO_RETRY = RetryPolicy(max_retries=0, initial_delay=0, max_delay=0, stall_seconds=5)
SSE = {path.name: path.read_bytes() for path in sorted(FIXTURES.glob("*.sse"))}
GARBAGE = [b"\xff\xfe", b"\x00", b"data: {", b"data: null\n\n", b"event: \n", b"data: []\n\n", b"\r\n\r\n", b":\n\n"]
GARBAGE += [b'data: {"type": "content_block_delta", "index": 99}\n\n', b'data: {"choices": [{"delta": 5}]}\n\n']


@pytest.fixture(scope="module")
def shared_server() -> Iterator[SSEServer]:
    instance = SSEServer()
    try:
        yield instance
    finally:
        instance.close()


@st.composite
def hostile_stream(draw: st.DrawFn, provider: str) -> bytes:
    """A recorded stream of ``provider``'s, mutated: cut, spliced, with garbage and unicode dropped in."""
    names = [n for n in SSE if n.startswith(provider)]
    pieces = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
    body = b"".join(SSE[n] for n in pieces)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(body)))
        kind = draw(st.sampled_from(["cut", "insert", "drop", "flip"]))
        if kind == "cut":
            body = body[:at]
        elif kind == "insert":
            extra = draw(st.sampled_from(GARBAGE) | st.binary(max_size=40) | st.text(max_size=20).map(str.encode))
            body = body[:at] + extra + body[at:]
        elif kind == "drop":
            body = body[:at] + body[at + draw(st.integers(1, 80)) :]
        elif body:
            index = min(at, len(body) - 1)
            body = body[:index] + bytes([body[index] ^ draw(st.integers(1, 255))]) + body[index + 1 :]
    return body


async def _stream(provider: AnthropicProvider | OpenAIProvider) -> None:
    try:
        async for _ in provider.stream(request()):
            pass
    finally:
        await provider.aclose()


def _play(server: SSEServer, body: bytes, provider: AnthropicProvider | OpenAIProvider) -> None:
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}, chunk_size=97, pause=0))
    with contextlib.suppress(ProviderError):  # the typed way to fail; anything else fails the test
        asyncio.run(_stream(provider))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=hostile_stream("anthropic"))
def test_hostile_anthropic_streams_fail_only_with_provider_errors(shared_server: SSEServer, body: bytes) -> None:
    _play(shared_server, body, AnthropicProvider(api_key=API_KEY, base_url=shared_server.url, retry=NO_RETRY))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=hostile_stream("openai"))
def test_hostile_openai_streams_fail_only_with_provider_errors(shared_server: SSEServer, body: bytes) -> None:
    provider = OpenAIProvider(api_key=API_KEY, base_url=shared_server.url + "/v1", retry=NO_RETRY)
    _play(shared_server, body, provider)


def _logged_items() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for path in sorted(EVENT_LOGS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for turn in data["turns"]:
            items.extend(turn if isinstance(turn, list) else turn.get("items", []))
    return items


LOGGED = _logged_items()


def test_the_event_logs_give_the_fuzzer_every_kind_of_item() -> None:
    assert len(LOGGED) > 200 and len({i["type"] for i in LOGGED}) > 25


@settings(max_examples=80, deadline=None)
@given(order=st.lists(st.integers(0, len(LOGGED) - 1), max_size=60))
def test_scrambled_event_logs_fold_and_render_without_raising(order: list[int]) -> None:
    fold = TurnFold()
    for index in order:
        fold.apply(ev.stream_item_adapter.validate_python(LOGGED[index]))
    fold.statuses()
    assert isinstance(fold.text, str)
    assert isinstance(fallback_html(fold, footer=footer(fold)), str)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(['{"format": "agentcell-recording", "version": 1}', "{}", "[]", "null", '{"model": 1}'])
        | st.text(max_size=60),
        max_size=5,
    ),
    raw=st.binary(max_size=30),
)
def test_a_damaged_recording_is_one_invalid_input_error(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], raw: bytes
) -> None:
    path = tmp_path_factory.mktemp("recording") / "nb.agentcell.jsonl"
    path.write_bytes("\n".join(lines).encode() + raw)
    refused: InvalidInputError | None = None
    try:
        Recording.load(path)
    except InvalidInputError as error:
        refused = error
    assert refused is None or str(path) in str(refused)


@settings(max_examples=150, deadline=None)
@given(line=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_every_line_the_acp_server_reads_is_a_message_or_a_json_rpc_error(line: bytes) -> None:
    answer = check_line(line)
    assert answer is None or (answer["jsonrpc"] == "2.0" and answer["error"]["code"] < 0)


@pytest.fixture
def magics(host: NotebookAgent) -> NotebookAgent:  # noqa: F811
    """The host with agentcell's magics registered, as the kernel's extension does (IPython's own %system
    runs a shell command: without ours, a fuzzed line would run programs)."""
    register_magics(host.shell, host)
    return host


LINE_MAGICS = ["model", "system", "tools", "permissions", "agent", "mcp", "budget", "usage", "session"]
LINE_MAGICS += ["replay", "skills", "steer", "threads", "workflows"]
WORDS = ["list", "show", "new", "add", "remove", "enable", "disable", "force", "pin", "versions", "revoke", "all"]
WORDS += ["off", "auto", "status", "resume", "title", "follow", "stop", "--url", "--", "--clear", "-h", "0", "-1"]
WORDS += ["1e309", "nan", "$5", "read-only", "danger-full-access", "scripted", "max_tokens=", "temperature=x"]
WORDS += ["'", '"', "\\", "sesn_01", "=", "==", "\x00", "☃", "a" * 300, "http://[::1", "notaurl"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS) | st.text(max_size=12), max_size=6))
@pytest.mark.parametrize("magic", LINE_MAGICS)
def test_a_garbled_magic_line_is_a_one_line_usage_error(magics: NotebookAgent, magic: str, words: list[str]) -> None:
    # %mcp add starts the command it is given: a fuzzer must not start arbitrary programs.
    assume(not (magic == "mcp" and "add" in words))
    line = " ".join(words)
    refused: Exception | None = None
    try:
        magics.shell.run_line_magic(magic, line)
    except (UsageError, AgentCellError) as error:
        refused = error
    assert refused is None or (str(refused).strip() and "Traceback" not in str(refused))


def test_the_fuzzed_magics_are_agentcells_own(magics: NotebookAgent) -> None:
    found = {name: magics.shell.find_line_magic(name) for name in LINE_MAGICS}
    assert all(getattr(f, "__module__", "").startswith("agentcell.") for f in found.values()), found
