"""The agentcell kernel for real: started through jupyter_client, driven over ZMQ."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import execute, running_kernel, write_script

pytestmark = pytest.mark.slow


SLOW_LOOP = "import time\nfor _ in range(600): time.sleep(0.05)"


def _events(db: str, session_id: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [t for (t,) in conn.execute("SELECT type FROM events WHERE session_id = ? ORDER BY seq", (session_id,))]
    finally:
        conn.close()


def _session_id(kc: object) -> str:
    shown = execute(kc, "%session")  # type: ignore[arg-type]
    return shown.stdout.split()[1]


def test_a_prose_cell_streams_coalesced_updates_and_ends_idle(kernel_env: dict[str, str], tmp_path: Path) -> None:
    text = "".join(f"word{i} " for i in range(300))
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json", [{"steps": [{"kind": "text", "text": text, "chunk_size": 6, "delay": 0.004}]}]
    )
    with running_kernel(kernel_env) as (_, kc):
        # The Markdown renderer streams through update_display_data; the widget's own transport is
        # checked in tests/widgets/test_transport.py.
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        run = execute(kc, "Tell me a long story.")
        assert run.status == "ok"
        updates = run.of("update_display_data")
        assert len(updates) >= 5  # it streamed
        first_id = run.of("display_data")[0]["content"]["transient"]["display_id"]
        assert all(u["content"]["transient"]["display_id"] == first_id for u in updates)
        streaming = updates[-1]["time"] - run.of("display_data")[0]["time"]
        assert len(updates) <= 30 * streaming + 3  # at most ~30 updates a second
        assert run.final_markdown.startswith(text.strip())
        assert "application/vnd.agentcell.turn+json" in run.displays[-1]
        assert not run.of("stream")  # never through print()
        assert run.reply["execution_count"] == 2


def test_magics_answer_and_mistakes_are_one_line(kernel_env: dict[str, str], tmp_path: Path) -> None:
    with running_kernel(kernel_env) as (_, kc):
        assert "show or set the model" in execute(kc, "%model --help").stdout
        assert execute(kc, "%budget 0.75").stdout.strip() == "budget: $0.75"
        assert execute(kc, "%budget").stdout.strip() == "budget: $0.75"
        assert execute(kc, "%budget off").stdout.strip() == "budget: none"
        assert "title: My study" in execute(kc, "%session title My study").stdout
        assert "permissions: read-only" in execute(kc, "%permissions read-only").stdout
        assert execute(kc, "%permissions").stdout.splitlines() == [
            "permissions: read-only",
            "commands: refused (in the bubblewrap sandbox nothing would be writable)",
            "python tool: refused (its code runs in this kernel, which nothing would keep read-only)",
            "always rules: none (an approval's Allow always adds one)",
        ]
        assert "system prompt set (agent v2)" in execute(kc, "%system Be terse.").stdout
        assert "Be terse." in execute(kc, "%system").stdout
        assert "model: scripted (agent v3)" in execute(kc, "%model scripted max_tokens=64").stdout
        assert "v3 of 3" in execute(kc, "%agent").stdout
        assert "tools disabled: bash" in execute(kc, "%tools disable bash").stdout
        listed = execute(kc, "%tools").stdout
        assert "bash  (disabled)" in listed
        assert "  notebook_edit  (not under read-only" in listed  # a turn's tool, listed though the agent has none
        assert "| `%usage` |" in execute(kc, "%help").displays[0]["text/markdown"]
        assert "did you mean %model?" in execute(kc, "%modle scripted").stderr
        run = execute(kc, "%%system\nYou are a careful analyst.\nCite your sources.")
        assert run.status == "ok"
        for bad, message in [
            ("%budget lots", "a budget is an amount in USD"),
            ("%budget 1e309", "a budget is at most 1,000,000 USD"),
            ("%permissions everything", "unknown permission preset"),
            ("%permissions revoke bash", "no always rule named 'bash'"),
            ("%model scripted max_tokens=many", "max_tokens must be int"),
            ("%agent pin 99", "has no version 99"),
            ("%tools enable teleport", "unknown tool teleport"),
            ("%session resume sesn_nope", "no session with id"),
        ]:
            failed = execute(kc, bad)
            assert failed.status == "error", bad
            assert message in failed.stderr, (bad, failed.stderr)
            assert "Traceback" not in failed.stderr and failed.stderr.count("\n") == 1
        execute(kc, "%permissions workspace-write")
        assert "✓ notebook_edit  (proposes cells" in execute(kc, "%tools").stdout
        execute(kc, "%config AgentCell.propose_cells = False")
        assert "  notebook_edit  (off: `%config AgentCell.propose_cells = True`" in execute(kc, "%tools").stdout
        refused = execute(kc, "%tools enable notebook_edit")
        assert "notebook_edit follows `%config AgentCell.propose_cells = True`" in refused.stderr
        usage = execute(kc, "%usage")
        assert "input tokens" in usage.displays[0]["text/markdown"]
        assert "list cost" in usage.displays[0]["text/plain"] and "object>" not in usage.displays[0]["text/plain"]
        assert "| list cost | \\$" in usage.displays[0]["text/markdown"]  # money, not math
        # The Jupyter habit works too: %config reaches the same settings (and checks a model as %model does).
        script = write_script(tmp_path / "config.json", [])
        assert execute(kc, f"%config AgentCell.model = {script!r}").status == "ok"
        assert f"model: {script}" in execute(kc, "%model").stdout
        assert "AgentCell.budget" in execute(kc, "%config AgentCell").stdout
        before = _session_id(kc)
        assert execute(kc, "%session new").stdout.startswith("new session ")
        assert _session_id(kc) != before
        listed = execute(kc, "%session list").stdout
        assert before in listed and f"* {_session_id(kc)}" in listed


def test_python_cells_and_the_agent_share_the_namespace(kernel_env: dict[str, str], tmp_path: Path) -> None:
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json",
        [
            {
                "steps": [
                    {
                        "kind": "tool_call",
                        "name": "python",
                        "input": {"code": "total = sum(data)\nprint(total)"},
                    }
                ]
            },
            {"steps": [{"kind": "text", "text": "The total is 10."}]},
        ],
    )
    with running_kernel(kernel_env) as (_, kc):
        assert execute(kc, "%%python\ndata = [1, 2, 3, 4]").status == "ok"
        run = execute(kc, "Add up data.")
        assert run.status == "ok"
        final = run.final_markdown
        assert "🔧 **python** — completed" in final and "10" in final and "The total is 10." in final
        assert not [m for m in run.of("stream") if "10" in m["content"]["text"]]  # output is in the tool card
        back = execute(kc, "%%python\ntotal * 2")
        assert back.displays[0]["text/plain"] == "20"


def test_interrupt_mid_stream_and_mid_tool(kernel_env: dict[str, str], tmp_path: Path) -> None:
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json",
        [
            {"steps": [{"kind": "text", "text": "x " * 5000, "chunk_size": 2, "delay": 0.01}]},
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": SLOW_LOOP}}]},
        ],
    )  # fmt: skip
    with running_kernel(kernel_env) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")  # its display updates say what is under way
        for prompt, under_way in (("stream forever", "x x x"), ("run something slow", "python** — running")):
            # stop_on_error=False: after an error reply ipykernel aborts requests that reach it before it
            # dispatches its own "stop aborting" callback, which the next prompt, sent at once, can beat.
            msg_id = kc.execute(prompt, stop_on_error=False)
            while True:  # wait until the stream, or the tool, is visibly under way
                msg = kc.get_iopub_msg(timeout=20)
                shown = msg["content"].get("data", {}).get("text/markdown", "")
                if msg["parent_header"].get("msg_id") == msg_id and under_way in shown:
                    break
            interrupted = time.monotonic()
            km.interrupt_kernel()
            reply = kc.get_shell_msg(timeout=10)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=10)
            assert time.monotonic() - interrupted < 1.0, prompt
            assert reply["content"]["status"] == "error"
            assert km.is_alive()
        after = execute(kc, "%%python\n1 + 1")
        assert after.displays[0]["text/plain"] == "2"
        assert execute(kc, "still there?").final_markdown.startswith("You said: still there?")
        session_id = _session_id(kc)
    types = _events(kernel_env["AGENTCELL_DB"], session_id)
    assert types.count("user.interrupt") == 2
    idle_reasons = [t for t in types if t == "session.status_idle"]
    assert len(idle_reasons) == 3


def test_restart_continues_the_same_session(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env) as (km, kc):
        first = execute(kc, "remember the number 7")
        session_id = _session_id(kc)
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        assert _session_id(kc) == session_id
        second = execute(kc, "what was the number?")
        assert second.status == "ok"
        assert "What was the number?".lower() in second.final_markdown.lower()
    types = _events(kernel_env["AGENTCELL_DB"], session_id)
    assert types.count("user.message") == 2
    del first


def test_a_killed_kernel_resumes_with_every_committed_event(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env) as (km, kc):
        execute(kc, "first question")
        session_id = _session_id(kc)
        committed = _events(kernel_env["AGENTCELL_DB"], session_id)
        assert km.provisioner is not None
        pid = km.provisioner.pid  # type: ignore[attr-defined]
        os.kill(pid, signal.SIGKILL)
        while km.is_alive():
            time.sleep(0.05)
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        assert _session_id(kc) == session_id
        assert _events(kernel_env["AGENTCELL_DB"], session_id)[: len(committed)] == committed
        assert execute(kc, "second question").final_markdown.startswith("You said: second question")


def test_a_console_without_a_notebook_path_gets_a_new_session_each_time(kernel_env: dict[str, str]) -> None:
    kernel_env.pop("JPY_SESSION_NAME")
    ids = []
    for _ in range(2):
        with running_kernel(kernel_env) as (_, kc):
            execute(kc, "hello")
            ids.append(_session_id(kc))
    assert ids[0] != ids[1]


def test_load_ext_and_agent_cells_in_a_plain_python_kernel(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env, kernel_name="python3") as (_, kc):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        assert execute(kc, "x = 2 + 2").status == "ok"  # plain Python stays Python
        run = execute(kc, "%%agent\nhello from a python kernel")
        assert run.status == "ok"
        assert run.final_markdown.startswith("You said: hello from a python kernel")
        assert "budget: $0.2" in execute(kc, "%budget 0.2").stdout
        assert execute(kc, "x").displays[0]["text/plain"] == "4"
        assert "__agentcell__" not in execute(kc, "%who").stdout


def test_the_extension_in_vs_code_records_next_to_the_notebook_vs_code_names(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    kernel_env.pop("JPY_SESSION_NAME", None)
    kernel_env["AGENTCELL_REPLAY"] = "record"
    notebook = tmp_path / "analysis.ipynb"
    with running_kernel(kernel_env, kernel_name="python3", cwd=tmp_path) as (_, kc):
        assert execute(kc, f"__vsc_ipynb_file__ = {str(notebook)!r}").status == "ok"  # as VS Code does
        assert execute(kc, "%load_ext agentcell").status == "ok"
        assert execute(kc, "%%agent\nhello from VS Code").status == "ok"
        status = execute(kc, "%replay status").stdout
    recording = tmp_path / "analysis.agentcell.jsonl"
    assert recording.is_file() and "analysis.agentcell.jsonl" in status
    assert "hello from VS Code" in recording.read_text()


def test_kernel_info_and_is_complete(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env) as (_, kc):
        info = _reply(kc, kc.kernel_info())
        assert info["implementation"] == "agentcell"
        assert info["language_info"]["name"] == "markdown"
        assert _reply(kc, kc.is_complete("What is the mean of data?"))["status"] == "complete"


def _reply(kc: Any, msg_id: str) -> dict[str, Any]:
    """The shell reply to ``msg_id`` (start-up may leave another kernel_info reply on the channel)."""
    while True:
        reply = kc.get_shell_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg_id:
            content: dict[str, Any] = reply["content"]
            return content


def test_threads_magic_turns_coordination_on_and_off_and_force_takes_a_sequence(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env) as (_, kc):
        refused = execute(kc, "%tools force spawn_thread")
        assert refused.status == "error" and "unknown tool spawn_thread" in refused.stderr
        assert execute(kc, "%threads").stdout.strip() == "threads: off (`%threads on` lets the agent spawn them)"
        on = execute(kc, "%threads on")
        assert on.stdout.strip() == "threads on: the agent may spawn helpers it defines and wait for them (agent v2)"
        assert execute(kc, "%threads").stdout.strip() == "threads: on; none spawned yet"
        forced = execute(kc, "%tools force spawn_thread wait_thread")
        assert forced.stdout.strip() == "the next turn starts by calling spawn_thread, then wait_thread"
        bad = execute(kc, "%tools force spawn_thread wait")
        assert bad.status == "error" and "unknown tool wait; available:" in bad.stderr
        unknown = execute(kc, "%threads on agent_nope")
        assert unknown.status == "error" and "%threads: " in unknown.stderr and "agent_nope" in unknown.stderr
        assert "Traceback" not in unknown.stderr
        assert execute(kc, "%threads off").stdout.strip() == "threads off (agent v3)"
        assert execute(kc, "%tools force wait_thread").status == "error"
        assert "%threads [list | on [AGENT_ID…] | off]" in execute(kc, "%threads sideways").stderr


def test_an_interrupted_turn_fails_its_cell_without_a_traceback(kernel_env: dict[str, str], tmp_path: Path) -> None:
    # The toolbar's interrupt: the turn says "interrupted" itself; a red traceback under it said it again.
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json", [{"steps": [{"kind": "text", "text": "x " * 5000, "chunk_size": 2, "delay": 0.01}]}]
    )
    with running_kernel(kernel_env) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        msg_id = kc.execute("stream for a while", stop_on_error=False)
        seen: list[dict[str, Any]] = []
        while not any("x x x" in json.dumps(m["content"]) for m in seen):
            msg = kc.get_iopub_msg(timeout=20)
            if msg["parent_header"].get("msg_id") == msg_id:
                seen.append(msg)
        km.interrupt_kernel()
        while not (seen[-1]["msg_type"] == "status" and seen[-1]["content"]["execution_state"] == "idle"):
            msg = kc.get_iopub_msg(timeout=20)
            if msg["parent_header"].get("msg_id") == msg_id:
                seen.append(msg)
        reply = kc.get_shell_msg(timeout=10)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=10)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "TurnInterrupted"
    assert not [m for m in seen if m["msg_type"] == "error"]
    assert "stop: interrupted" in json.dumps(seen[-2]["content"])  # the turn's own last display says it
