"""An ACP agent that misbehaves once prompted, started by the tests as a real subprocess.

``python misbehaving_agent.py garbage LOG`` streams its answer (a long first piece, then a few words), then
writes a line that is not JSON-RPC on its stdout and goes on running without a word more.
``python misbehaving_agent.py deaf LOG`` streams a few words, then never answers: it ignores
``session/cancel``, the end of its stdin and SIGTERM (only SIGKILL ends it). Either writes its pid and every
method it receives to LOG, one a line, so a test can tell that the kernel sent ``session/cancel`` and that the
process is gone. ``python misbehaving_agent.py lingering LOG`` answers well, but does not exit when its stdin
closes (as codex-acp does not).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PARTIAL = "Partial answer, before it went wrong."
LONG = "long " * 40_000


def _send(message: dict[str, Any], *, flush: bool = True) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    if flush:
        sys.stdout.flush()


def _say(text: str, *, flush: bool = True) -> None:
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    _send({"method": "session/update", "params": {"sessionId": "s1", "update": chunk}}, flush=flush)


def main() -> None:
    mode, log = sys.argv[1], Path(sys.argv[2])
    with log.open("a") as out:
        out.write(f"pid {os.getpid()}\n")
    if mode == "deaf":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        with log.open("a") as out:
            out.write(f"{method}\n")
        if method == "initialize":
            _send({"id": ident, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            _send({"id": ident, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            if mode == "garbage":  # a message longer than a pipe's read, then garbage in the same write
                _say(LONG, flush=False)
                _say(PARTIAL, flush=False)
                sys.stdout.write("this is not JSON: a log line on the wrong stream\n")
                sys.stdout.flush()
            else:
                _say(PARTIAL)
                if mode == "lingering":
                    _send({"id": ident, "result": {"stopReason": "end_turn"}})
    while True:  # its stdin closed: it lingers all the same
        time.sleep(60)


if __name__ == "__main__":
    main()
