"""Provider faults: what a misbehaving API does to a cell of the real kernel, with no text lost or shown twice.

One agentcell kernel (through jupyter_client) on Claude, served by a loopback server that misbehaves on
cue: 429 with retry-after, 529 again and again, 500, an error event mid-stream, a cut connection, a stall
with and without keep-alive pings, malformed SSE, 401. For each, the widget's live items, the bundle that
replaces the live view and the event log on disk must tell the same turn (every logged event once, in
order, with the same text), a recovered fault must leave no partial text behind, and a fatal one must fail
the cell in one line that names the cause and not the key.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..providers.conftest import API_KEY, Reply, SSEServer, fixture, json_reply, sse_reply
from ..widgets.conftest import TurnDriver
from .kernel_session import TurnAccounts, assert_no_loss_or_duplication, kernel, loopback_claude, run_turn

pytestmark = pytest.mark.slow

ANSWER = "Héllo, wörld — 日本語で こんにちは 🎉!"  # what anthropic_text.sse says
START = fixture("anthropic_text.sse").split(b"\n\n")[0] + b"\n\n"  # message_start only
PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_cells = itertools.count(1)


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return json_reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)


def _stalling(pings: bool) -> Reply:
    """message_start, then nothing for 3 s, or only a ping every 0.1 s for 3 s."""
    body = START + (PING * 30 if pings else PING)
    splits = [len(START) + n * len(PING) for n in range(1, 30)] if pings else [len(START)]
    return Reply(body=body, headers={"content-type": "text/event-stream"}, splits=splits, pause=0.1 if pings else 3.0)


class Loopback:
    def __init__(self, server: SSEServer, driver: TurnDriver, db: str) -> None:
        self.server, self.driver, self.db = server, driver, db

    def turn(self, *replies: Reply) -> tuple[TurnAccounts, float, int]:
        """Run one cell against these replies; the turn, how long it took and how many requests it sent."""
        sent = len(self.server.requests)
        self.server.queue(*replies)
        started = time.monotonic()
        try:
            turn = run_turn(self.driver, f"Question {next(_cells)}?", f"cell-{next(_cells)}", self.db)
        finally:
            unused, self.server.replies[:] = list(self.server.replies), []  # the next case starts afresh
        elapsed = time.monotonic() - started
        assert not unused, "the turn left queued replies unused"
        assert_no_loss_or_duplication(turn)
        return turn, elapsed, len(self.server.requests) - sent


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    root = tmp_path_factory.mktemp("provider-faults")
    server = SSEServer()
    env = loopback_claude(server, root)
    try:
        with kernel(env) as (_, kc):
            yield Loopback(server, TurnDriver(kc), env["AGENTCELL_DB"])
    finally:
        server.close()


def _recovered(turn: TurnAccounts) -> None:
    assert turn.reply["status"] == "ok"
    assert turn.texts(turn.logged) == [ANSWER]
    assert turn.markdown.count(ANSWER) == 1
    assert "Partial answ" not in turn.markdown and "trunc" not in turn.markdown


def _failed(turn: TurnAccounts, *, says: str) -> dict[str, Any]:
    """The cell failed in one line; returns the logged error."""
    assert turn.reply["status"] == "error"
    assert "\n" not in turn.reply["evalue"].strip() and says in turn.reply["evalue"]
    [error] = [e for e in turn.logged if e["type"] == "session.error"]
    assert says in error["error"]["message"]
    assert not turn.texts(turn.logged)
    return dict(error)


def test_429_waits_as_long_as_retry_after_says_and_answers_once(loopback: Loopback) -> None:
    turn, elapsed, requests = loopback.turn(
        _error(429, "rate_limit_error", "Slow down", {"retry-after": "0.4"}), sse_reply("anthropic_text.sse")
    )
    _recovered(turn)
    assert requests == 2 and elapsed >= 0.4


def test_529_again_and_again_fails_the_cell_in_one_line(loopback: Loopback) -> None:
    turn, _, requests = loopback.turn(*[_error(529, "overloaded_error", "Overloaded")] * 3)
    _failed(turn, says="Overloaded")
    assert requests == 3  # the first attempt and the two retries, then it stops


def test_500_then_success_answers_once(loopback: Loopback) -> None:
    turn, _, requests = loopback.turn(_error(500, "api_error", "boom"), sse_reply("anthropic_text.sse"))
    _recovered(turn)
    assert requests == 2


def test_an_error_event_mid_stream_is_retried_and_its_partial_text_dropped(loopback: Loopback) -> None:
    turn, _, requests = loopback.turn(sse_reply("anthropic_error_midstream.sse"), sse_reply("anthropic_text.sse"))
    _recovered(turn)
    assert requests == 2
    assert [e["error"]["type"] for e in turn.logged if e["type"] == "session.error"] == ["model_overloaded_error"]


def test_a_cut_connection_mid_stream_is_retried_and_answers_once(loopback: Loopback) -> None:
    body = fixture("anthropic_text.sse")
    cut = sse_reply("anthropic_text.sse", cut_after=body.index(b"content_block_delta") + 120)
    turn, _, requests = loopback.turn(cut, sse_reply("anthropic_text.sse"))
    _recovered(turn)
    assert requests == 2


@pytest.mark.parametrize("pings", [False, True], ids=["silent", "pinging"])
def test_a_stalled_stream_is_given_up_in_the_stall_timeout_and_retried(loopback: Loopback, pings: bool) -> None:
    turn, elapsed, requests = loopback.turn(_stalling(pings), sse_reply("anthropic_text.sse"))
    _recovered(turn)
    assert requests == 2
    assert elapsed < 2.9  # 0.5 s of stall, not the 3 s the server would have held it (or forever, pinging)


def test_malformed_sse_fails_the_cell_as_a_protocol_error_without_its_partial_text(loopback: Loopback) -> None:
    # Output had begun ("Fine."), so resending would show the model's text twice: the error is terminal.
    turn, _, requests = loopback.turn(sse_reply("anthropic_malformed.sse"))
    error = _failed(turn, says="malformed JSON")
    assert requests == 1 and error["error"]["type"] == "protocol_error"
    assert "Fine." not in turn.markdown


def test_401_fails_the_cell_saying_the_key_was_refused_without_showing_it(loopback: Loopback) -> None:
    turn, _, requests = loopback.turn(_error(401, "authentication_error", "invalid x-api-key"))
    error = _failed(turn, says="ANTHROPIC_API_KEY")
    assert requests == 1  # a refused key is not retried
    for text in (turn.markdown, turn.reply["evalue"], str(error), str(turn.live)):
        assert API_KEY not in text


def test_after_every_fault_the_kernel_still_answers(loopback: Loopback, tmp_path: Path) -> None:
    turn, _, _ = loopback.turn(sse_reply("anthropic_text.sse"))
    _recovered(turn)
