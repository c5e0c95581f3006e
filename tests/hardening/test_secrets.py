"""Secrets: an API key (or a PAT, a DSN, a URL's password) a model repeats and a tool prints is in no artifact of a run.

``agentcell run --record --html`` executes a notebook on Claude, served by a loopback server whose model
calls the python tool to print ``ANTHROPIC_API_KEY`` and then repeats the key, split across stream
deltas. Afterwards every file the run left (the executed notebook with its widget state and turn bundles,
the HTML page, the recording, the SQLite database and its WAL) and everything it printed (the run's and
the kernel's logs) are grepped for the key, raw and JSON-escaped: none may hold it, and the redaction
must show where it was.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from agentcell._secrets import REDACTED, StreamScrubber

from ..providers.conftest import API_KEY, Reply, SSEServer, sse_body
from .kernel_session import loopback_claude

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

OTHERS = {
    # Secrets under other names, or inside a value (issue 31, 7): each must be redacted by its value too.
    "GH_PAT": "ghp_canaryPersonalAccessToken1234",
    "SENTRY_DSN": "https://canarydsnpublickey99@o1.ingest.sentry.io/42",
    "DATABASE_URL": "postgresql://analyst:canary-db-password-77@db.example/warehouse",
}
OTHER_SECRETS = [OTHERS["GH_PAT"], OTHERS["SENTRY_DSN"], "canary-db-password-77"]
LEAK = (
    "import os\nprint('the key is', os.environ['ANTHROPIC_API_KEY'])\n"
    "for name in ('GH_PAT', 'SENTRY_DSN', 'DATABASE_URL'):\n    print(name, os.environ[name])"
)


def _message(stop: str, blocks: list[object]) -> bytes:
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [], "stop_reason": None, "usage": {"input_tokens": 20, "output_tokens": 1}},
    }  # fmt: skip
    end = [
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return sse_body(start, *blocks, *end)


def _replies() -> list[Reply]:
    tool_call = _message(
        "tool_use",
        [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "python", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps({"code": LEAK})},
            },
            {"type": "content_block_stop", "index": 0},
        ],
    )
    half = len(API_KEY) // 2
    text = [f"Your key is {API_KEY[:half]}", f"{API_KEY[half:]}, and again: {API_KEY}."]
    repeat = _message(
        "end_turn",
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in text),
            {"type": "content_block_stop", "index": 0},
        ],
    )
    return [Reply(body=body, headers={"content-type": "text/event-stream"}) for body in (tool_call, repeat)]


def test_no_artifact_of_a_run_holds_the_key(tmp_path: Path) -> None:
    server = SSEServer()
    try:
        server.queue(*_replies())
        folder = tmp_path / "study"
        folder.mkdir()
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
        notebook.cells = [nbformat.v4.new_code_cell("Print the environment, then tell me the key.")]
        nbformat.write(notebook, folder / "study.ipynb")
        env = loopback_claude(server, tmp_path, AGENTCELL_DB=str(folder / "study.db"), **OTHERS)
        for name in ("JPY_SESSION_NAME", "AGENTCELL_REPLAY"):  # `agentcell run` sets both itself
            env.pop(name)
        run = subprocess.run(
            [sys.executable, "-m", "agentcell.cli", "run", str(folder / "study.ipynb"), "--record", "--html"],
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
            timeout=100,
            check=False,
        )
    finally:
        server.close()
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(server.requests) == 2  # the tool ran and its output went back to the model

    artifacts = {path.name: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}
    assert {"study.executed.ipynb", "study.executed.html", "study.agentcell.jsonl", "study.db"} <= set(artifacts)
    artifacts["stdout"], artifacts["stderr"] = run.stdout.encode(), run.stderr.encode()
    forms = [API_KEY.encode(), json.dumps(API_KEY).strip('"').encode(), API_KEY[: len(API_KEY) - 2].encode()]
    forms += [secret.encode() for secret in OTHER_SECRETS]
    leaked = sorted(name for name, data in artifacts.items() for form in forms if form in data)
    assert not leaked, f"the key is in {leaked}"

    executed = nbformat.read(folder / "study.executed.ipynb", as_version=4)
    shown = json.dumps(executed.cells[0].outputs) + json.dumps(executed.metadata.get("widgets", {}))
    assert "[redacted]" in shown  # the key's place is marked, in the outputs the notebook keeps
    assert "[redacted]" in artifacts["study.executed.html"].decode()
    assert "the key is" in shown  # the tool's output itself was kept, only the key went


def test_a_key_split_anywhere_across_deltas_is_redacted_and_nothing_else_is_lost() -> None:
    text = f"before {API_KEY} middle s sk {API_KEY[:5]} end"
    for cut in range(1, len(text)):
        for second in range(cut + 1, len(text), 7):
            scrubber = StreamScrubber()
            stream = ("sevt_x", 0)
            shown = [scrubber.feed(stream, piece, [API_KEY]) for piece in (text[:cut], text[cut:second], text[second:])]
            shown += [held for _, held in scrubber.flush("sevt_x")]
            assert all(API_KEY not in piece for piece in shown)
            assert "".join(shown) == text.replace(API_KEY, REDACTED), (cut, second)
