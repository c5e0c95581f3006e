"""Turns belong to cells (issue 14): the real kernel over ZMQ, cell ids in the requests' metadata as
JupyterLab sends them, and a loopback OpenAI-compatible server whose request log shows what the model saw."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from .conftest import execute, running_kernel
from .echo_server import EchoServer, echo_server

pytestmark = pytest.mark.slow

FIRST = [("user", "first question")]
REPLY_1 = ("assistant", "reply to: first question")


@pytest.fixture
def server() -> Iterator[EchoServer]:
    with echo_server() as instance:
        yield instance


@pytest.fixture
def env(kernel_env: dict[str, str], server: EchoServer) -> dict[str, str]:
    kernel_env.update(AGENTCELL_MODEL="openai:echo", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-echo")
    return kernel_env


def _event_types(db: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [t for (t,) in conn.execute("SELECT type FROM events ORDER BY seq")]


def test_rerunning_the_last_cell_regenerates_it(env: dict[str, str], server: EchoServer) -> None:
    with running_kernel(env) as (_, kc):
        assert execute(kc, "first question", cell_id="c1").status == "ok"
        assert execute(kc, "second question", cell_id="c2").status == "ok"
        assert execute(kc, "second question", cell_id="c2").status == "ok"
    first, second, again = server.conversations()
    assert first == FIRST
    assert second == [*FIRST, REPLY_1, ("user", "second question")]
    assert again == second  # the turns above only: the earlier run of c2 left the path
    assert "session.turns_superseded" in _event_types(env["AGENTCELL_DB"])


def test_rerunning_an_earlier_cell_branches_from_there(env: dict[str, str], server: EchoServer) -> None:
    with running_kernel(env) as (_, kc):
        for cell_id, text in (("c1", "first question"), ("c2", "second question"), ("c3", "third question")):
            assert execute(kc, text, cell_id=cell_id).status == "ok"
        branched_run = execute(kc, "second, reworded", cell_id="c2")
        assert branched_run.status == "ok"
        # The turn says what it carried: one turn above (c1), not the three turns that ran before it.
        assert "context: 1 turn above · 10 tokens" in branched_run.final_markdown
        # The cell after it has left the path: a new cell sees c1 and the new c2 only.
        assert execute(kc, "fourth question", cell_id="c4").status == "ok"
    *_, branched, after = server.conversations()
    assert branched == [*FIRST, REPLY_1, ("user", "second, reworded")]
    assert after == [*branched, ("assistant", "reply to: second, reworded"), ("user", "fourth question")]
    with sqlite3.connect(env["AGENTCELL_DB"]) as conn:
        (data,) = conn.execute("SELECT body FROM events WHERE type = 'session.turns_superseded'").fetchone()
    assert len(json.loads(data)["turn_ids"]) == 2  # the earlier c2 and c3


def test_run_all_twice_sends_the_same_requests(env: dict[str, str], server: EchoServer) -> None:
    cells = [("a", "first question"), ("b", "second question"), ("c", "third question")]
    with running_kernel(env) as (_, kc):
        for _ in range(2):
            for cell_id, text in cells:
                assert execute(kc, text, cell_id=cell_id).status == "ok"
    requests = server.requests
    assert len(requests) == 6
    assert requests[3:] == requests[:3]


def test_a_kernel_restart_keeps_the_path(env: dict[str, str], server: EchoServer) -> None:
    with running_kernel(env) as (km, kc):
        execute(kc, "first question", cell_id="c1")
        execute(kc, "second question", cell_id="c2")
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        assert execute(kc, "second question", cell_id="c2").status == "ok"
    assert server.conversations()[-1] == [*FIRST, REPLY_1, ("user", "second question")]


def test_without_cell_ids_turns_append(env: dict[str, str], server: EchoServer) -> None:
    with running_kernel(env) as (_, kc):
        execute(kc, "first question")
        execute(kc, "first question")
    assert server.conversations()[-1] == [*FIRST, REPLY_1, *FIRST]


def test_a_failed_prompt_never_reaches_a_later_request(env: dict[str, str], server: EchoServer) -> None:
    with running_kernel(env) as (_, kc):
        execute(kc, "first question", cell_id="c1")
        failed = execute(kc, "please FAIL now", cell_id="c2")
        assert failed.status == "error"
        assert execute(kc, "third question", cell_id="c3").status == "ok"
    last = server.conversations()[-1]
    assert last == [*FIRST, REPLY_1, ("user", "third question")]
    assert not any("FAIL" in text for conversation in server.conversations()[2:] for _, text in conversation)


def test_a_prompt_the_budget_refused_never_reaches_a_later_request(
    kernel_env: dict[str, str], server: EchoServer
) -> None:
    # A priced model (Claude's list prices), served by the loopback server.
    kernel_env.update(AGENTCELL_MODEL="claude-sonnet-4-5", ANTHROPIC_BASE_URL=server.root, ANTHROPIC_API_KEY="sk-ant-x")
    with running_kernel(kernel_env) as (_, kc):
        execute(kc, "first question", cell_id="c1")
        assert execute(kc, "%budget 0.0000001").status == "ok"
        refused = execute(kc, "a REFUSED prompt", cell_id="c2")
        assert "budget" in refused.final_markdown
        assert len(server.requests) == 1  # refused before any request
        assert execute(kc, "%budget off").status == "ok"
        assert execute(kc, "third question", cell_id="c3").status == "ok"
    last = server.conversations()[-1]
    assert last == [*FIRST, REPLY_1, ("user", "third question")]
    assert not any("REFUSED" in text for conversation in server.conversations() for _, text in conversation)


def test_agentcell_run_sends_cell_ids_so_a_continued_run_redoes_its_turns(
    env: dict[str, str], server: EchoServer, tmp_path: Path
) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("first question"), nbformat.v4.new_code_cell("second question")]
    notebook.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    for cell in notebook.cells:  # as a notebook saved before nbformat 4.5: no cell ids
        del cell["id"]
    notebook.nbformat_minor = 4
    path = tmp_path / "twice.ipynb"
    path.write_text(json.dumps(notebook))
    env = {**env, "AGENTCELL_REPLAY": "off"}
    env.pop("JPY_SESSION_NAME")
    for flags in ([], ["--continue"]):
        done = subprocess.run(
            [sys.executable, "-m", "agentcell.cli", "run", str(path), *flags],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    requests = server.requests
    assert len(requests) == 4
    assert requests[2:] == requests[:2]  # the continued run replaced its turns rather than appending them


def test_agentcell_run_fails_at_a_failed_turn_and_names_its_cell(
    env: dict[str, str], server: EchoServer, tmp_path: Path
) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(text) for text in ("first question", "please FAIL now", "third")]
    notebook.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    path = tmp_path / "fails.ipynb"
    nbformat.write(notebook, path)
    env = {**env, "AGENTCELL_REPLAY": "off"}
    env.pop("JPY_SESSION_NAME")
    command = [sys.executable, "-m", "agentcell.cli", "run", str(path)]
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "cell 2 of 3 (please FAIL now) failed" in done.stderr
    assert "TurnError:" in done.stderr and "refused" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(server.requests) == 2  # the run stopped at the failed cell
    executed = nbformat.read(tmp_path / "fails.executed.ipynb", as_version=4)
    # The turn's own output says what failed; no error output repeats it under the turn (issue 38).
    assert not [o for o in executed.cells[1].outputs if o.output_type == "error"]
    assert "refused" in json.dumps(executed.cells[1].outputs)
