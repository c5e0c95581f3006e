"""An external ACP agent answering a real kernel's turns: ``agentcell acp`` (on its scripted model) started by
``%agent acp agentcell`` as a subprocess, the notebook's session folding its updates into our events; its
permission requests answered by the widget's approval, its file writes served inside the workspace only,
Stop sending ``session/cancel``; agents that fail to start or break off mid-turn fail the cell, not the kernel.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine

from .conftest import execute, external_agent_kernel, running_kernel, write_script

# Longer than any one wait below, so a wait that runs out says what the kernel published (TurnDriver.until).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _bash(command: str) -> dict[str, Any]:
    return {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": command}}]}


def _text(text: str, **step: Any) -> dict[str, Any]:
    return {"steps": [{"kind": "text", "text": text, **step}]}


@pytest.fixture
def notebook(kernel_env: dict[str, str], tmp_path: Path) -> Path:
    """The notebook's folder: the kernel's working directory, hence the external agent's workspace."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("before\n")
    kernel_env["JPY_SESSION_NAME"] = str(folder / "notebook.ipynb")
    return folder


def _events(db: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(session id, type, fields) of every stored event, session by session, each in order."""
    with Engine(db) as engine:
        return [(s.id, e.type, e.model_dump(mode="json")) for s in engine.sessions.list() for e in s.events()]


def _kernel_session(kc: Any) -> str:
    return execute(kc, "%session").stdout.split()[1]


def test_a_text_turn_streams_thinking_and_text_then_local_answers_again(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    reply = "Hello from the external agent, in many small deltas."
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json",
        [{"steps": [{"kind": "thinking", "thinking": "The user greets me."},
                    {"kind": "text", "text": reply, "chunk_size": 2, "delay": 0.01}]}],
    )  # fmt: skip
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        chosen = execute(kc, "%agent acp agentcell")
        assert chosen.status == "ok" and "agentcell answers this notebook's messages" in chosen.stdout
        turn = execute(kc, "hello", timeout=90)
        assert turn.status == "ok", turn.reply
        assert reply in turn.final_markdown and "The user greets me." in turn.final_markdown
        partial = [d["text/markdown"] for d in turn.displays if reply not in d.get("text/markdown", reply)]
        assert partial  # it streamed: the cell showed the reply before it was whole
        shown = execute(kc, "%agent acp").stdout
        assert "answers this notebook" in shown and "running" in shown and "permission = workspace-write" in shown
        session_id = _kernel_session(kc)
        assert "own engine answers again (agentcell stopped)" in execute(kc, "%agent local").stdout
        own = execute(kc, "hello again", timeout=60)  # the kernel's own engine, on the same script
        assert own.status == "ok" and reply in own.final_markdown
        assert km.is_alive()
    events = [(t, p) for s, t, p in _events(kernel_env["AGENTCELL_DB"]) if s == session_id]
    first, second = _split_turns(events)
    # agentcell acp sends a thought whole once its model's block ends, here after the text streamed
    assert sorted(t for t, _ in first if t.startswith("agent.")) == ["agent.message", "agent.thinking"]
    assert [p["thinking"] for t, p in first if t == "agent.thinking"] == ["The user greets me."]
    assert [p["content"][0]["text"] for t, p in first if t == "agent.message"] == [reply]
    # the agent's turn is the turn's one request (the cost meter counts it); the next is the kernel's own
    assert [p["model"] for t, p in first if t == "span.model_request_start"] == ["acp:agentcell"]
    assert [p["model"] for t, p in second if t == "span.model_request_start"] == [kernel_env["AGENTCELL_MODEL"]]
    assert [p["stop_reason"]["type"] for t, p in events if t == "session.status_idle"] == ["end_turn", "end_turn"]


def _split_turns(events: list[tuple[str, dict[str, Any]]]) -> list[list[tuple[str, dict[str, Any]]]]:
    turns: list[list[tuple[str, dict[str, Any]]]] = []
    for event in events:
        if event[0] == "user.message":
            turns.append([])
        if turns:
            turns[-1].append(event)
    return turns


def test_a_permission_request_is_the_widgets_approval_granted_then_refused(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    allowed, refused = notebook / "allowed", notebook / "refused"
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json", [_bash(f"touch {allowed}"), _text("Done."), _bash(f"touch {refused}"), _text("Fine.")]
    )
    with external_agent_kernel(kernel_env, notebook, "agentcell") as d:
        for marker, answer in ((allowed, "allow"), (refused, "deny")):
            d.execute(f"Touch {marker.name}.")
            d.until(lambda m: d.comm_id is not None, 60)
            assert d.announce()["approvals"] is True
            request = d.until_item("widget.approval_request", 60)
            assert "agentcell (an external agent) asks before this call" in request["reason"]
            d.send({"type": "approval", "tool_use_id": request["tool_use_id"], "result": answer, "remember": "once"})
            result = d.until_item("agent.tool_result", 60, tool_use_id=request["tool_use_id"])
            d.until_idle(60)
            state = d.final_state
            [use] = [i for i in state if i["type"] == "agent.tool_use"]
            assert use["id"] == request["tool_use_id"] and use["input"]["command"] == f"touch {marker}"
            assert use["input"]["kind"] == "execute"
            assert [c["result"] for c in state if c["type"] == "user.tool_confirmation"] == [answer]
            assert result["is_error"] is (answer == "deny")
        assert allowed.exists() and not refused.exists()


def test_file_writes_are_served_inside_the_workspace_and_refused_outside(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"  # in the temp directory, which the agent's own preset counts as inside
    writes = {
        "steps": [
            {"kind": "tool_call", "name": "write_file", "input": {"path": "notes.txt", "content": "after\n"}},
            {"kind": "tool_call", "name": "write_file", "input": {"path": str(outside), "content": "escaped\n"}},
        ]
    }
    kernel_env["AGENTCELL_MODEL"] = write_script(tmp_path / "s.json", [writes, _text("Wrote them.")])
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        execute(kc, "%agent acp agentcell")
        turn = execute(kc, "Write the files.", timeout=90)
        assert turn.status == "ok", turn.reply
        assert "was refused writing" in turn.final_markdown and "outside the workspace" in turn.final_markdown
        session_id = _kernel_session(kc)
        assert km.is_alive()
    assert (notebook / "notes.txt").read_text() == "after\n"
    assert not outside.exists()
    events = [(t, p) for s, t, p in _events(kernel_env["AGENTCELL_DB"]) if s == session_id]
    results = [p for t, p in events if t == "agent.tool_result"]
    assert [r["is_error"] for r in results] == [False, True]
    errors = [p["error"] for t, p in events if t == "session.error"]
    # it reads a file before writing it (the diff of its card): both refused, nothing else
    assert {e["type"] for e in errors} == {"external_agent_refused"}
    assert any(e["message"].startswith(f"agentcell was refused writing {outside}") for e in errors)
    assert all(str(outside) in e["message"] for e in errors)


def test_an_interrupt_sends_session_cancel_and_the_agent_answers_the_next_turn(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json", [_text("x " * 3000, chunk_size=2, delay=0.01), _text("After the stop.")]
    )
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        execute(kc, "%agent acp agentcell")
        msg_id = kc.execute("stream forever", stop_on_error=False)
        while True:  # until the stream is visibly under way
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and "x x x" in msg["content"].get("data", {}).get(
                "text/markdown", ""
            ):
                break
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "error" and km.is_alive()
        after = execute(kc, "and now?", timeout=60)
        assert after.status == "ok" and "After the stop." in after.final_markdown
        session_id = _kernel_session(kc)
    events = _events(kernel_env["AGENTCELL_DB"])
    ours = [(t, p) for s, t, p in events if s == session_id]
    assert [p["stop_reason"]["type"] for t, p in ours if t == "session.status_idle"] == ["interrupted", "end_turn"]
    [cut] = [p for t, p in ours if t == "agent.message" and p.get("interrupted")]
    assert cut["content"][0]["text"].startswith("x x x")
    # The agent's own session (the same database) heard the cancel: its turn ended interrupted too.
    theirs = [(t, p) for s, t, p in events if s != session_id]
    assert [p["stop_reason"]["type"] for t, p in theirs if t == "session.status_idle"] == ["interrupted", "end_turn"]


BROKEN_AGENT = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        result = {"sessionId": "s1"}
    elif method == "session/prompt":
        sys.stdout.write("this is not JSON\\n")
        sys.stdout.flush()
        sys.stderr.write("the agent gave up\\n")
        sys.exit(7)
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\\n")
    sys.stdout.flush()
"""


def test_agents_that_are_missing_fail_to_start_or_exit_mid_turn_fail_the_cell_not_the_kernel(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken_agent.py"
    broken.write_text(BROKEN_AGENT)
    kernel_env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        missing = execute(kc, "%agent acp claude")
        assert missing.status == "error"
        assert "claude-agent-acp is not installed" in missing.reply["evalue"]
        assert "npm install -g @zed-industries/claude-agent-acp" in missing.reply["evalue"]
        unknown = execute(kc, "%agent acp nosuchagent")
        assert unknown.status == "error"
        assert "known: claude, codex, gemini, opencode, agentcell" in unknown.reply["evalue"]

        execute(kc, f"%agent acp -- {sys.executable} -c 'import sys; sys.stderr.write(\"no key\"); sys.exit(3)'")
        failed = execute(kc, "hello", timeout=60)
        assert failed.status == "error" and failed.reply["ename"] == "TurnError"
        assert "failed at initialize" in failed.reply["evalue"] and "no key" in failed.reply["evalue"]

        execute(kc, f"%agent acp -- {sys.executable} {broken}")
        broke = execute(kc, "hello", timeout=60)
        assert broke.status == "error" and broke.reply["ename"] == "TurnError"
        assert "broke off mid-turn (exit status 7)" in broke.reply["evalue"]
        assert "the agent gave up" in broke.reply["evalue"]
        assert "before it wrote 'this is not JSON' on its stdout" in broke.reply["evalue"]

        assert execute(kc, "%agent local").status == "ok"
        assert execute(kc, "%%python\n6 * 7").displays[0]["text/plain"] == "42"  # the kernel is alive and answers
        assert km.is_alive()


def test_the_budget_cancels_the_agents_turn_and_its_settings_are_set_from_the_notebook(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    read = {"steps": [{"kind": "tool_call", "name": "read_file", "input": {"path": "notes.txt"}}]}
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "responses": [_text("Cheap."), read, _text("Never sent: the budget stopped the turn.")],
                "pricing": {"input_mtok": 1000, "output_mtok": 1000},
            }
        )
    )
    kernel_env["AGENTCELL_MODEL"] = f"scripted:{script}"
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        execute(kc, "%agent acp agentcell")
        cheap = execute(kc, "hello", timeout=90)
        assert cheap.status == "ok"
        meter = re.search(r"turn \\\$([0-9.]+) · session \\\$([0-9.]+)", cheap.final_markdown)
        assert meter is not None and meter[1] == meter[2] and Decimal(meter[1]) > 0  # the turn's cost is shown
        asked = execute(kc, "%agent acp set permission read-only")
        assert asked.status == "ok" and "permission = read-only from the next message" in asked.stdout
        wrong = execute(kc, "%agent acp set permission lenient")
        assert wrong.status == "error" and "one of read-only, workspace-write" in wrong.reply["evalue"]
        spent = _spent(kc)
        assert spent > 0  # the agent's reported cost is the session's usage
        execute(kc, f"%budget {spent + Decimal('0.000001')}")
        capped = execute(kc, "read the notes", timeout=90)
        assert capped.status == "ok"
        assert "permission = read-only" in execute(kc, "%agent acp").stdout
        session_id = _kernel_session(kc)
        assert km.is_alive()
    events = _events(kernel_env["AGENTCELL_DB"])
    ours = [(t, p) for s, t, p in events if s == session_id]
    assert [p["stop_reason"]["type"] for t, p in ours if t == "session.status_idle"] == ["end_turn", "budget_reached"]
    theirs = [(t, p) for s, t, p in events if s != session_id]
    assert [p["stop_reason"]["type"] for t, p in theirs if t == "session.status_idle"] == ["end_turn", "interrupted"]
    assert "Never sent" not in str(theirs)


def _spent(kc: Any) -> Decimal:
    shown = execute(kc, "%%python\nprint(__agentcell__.session.usage.spent)")
    return Decimal(shown.stdout.strip())


def test_a_restarted_kernel_goes_on_with_the_same_agent_and_loads_its_session(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    kernel_env["AGENTCELL_MODEL"] = write_script(tmp_path / "s.json", [_text("Noted: kiwi.")])
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        execute(kc, "%agent acp agentcell")
        assert "Noted: kiwi." in execute(kc, "The word is kiwi.", timeout=90).final_markdown
        session_id = _kernel_session(kc)
        # %agent show says who answers instead of the model it names: the command, and the agent's session
        command = f"{sys.executable} -m agentcell.cli acp"
        running = re.search(rf"answers this notebook \({re.escape(command)}; running, session (\S+)\)$",
                            execute(kc, "%agent show").stdout, re.M)  # fmt: skip
        assert running is not None
        theirs_id = running.group(1)
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        shown = execute(kc, "%agent acp")
        assert f"({command}; starts at the next message, loading its session {theirs_id})" in shown.stdout
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        again = execute(kc, "What was the word?", timeout=90)
        assert again.status == "ok" and "Noted: kiwi." in again.final_markdown  # a new agent process
        assert f"; running, session {theirs_id})" in execute(kc, "%agent show").stdout
        assert _kernel_session(kc) == session_id
        assert "own engine answers again" in execute(kc, "%agent local").stdout
        assert "answers this notebook" not in execute(kc, "%agent show").stdout
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        assert "agentcell's own engine answers this notebook" in execute(kc, "%agent acp").stdout
    events = _events(kernel_env["AGENTCELL_DB"])
    theirs = {s for s, _, _ in events if s != session_id}
    assert theirs == {theirs_id}  # the restarted kernel's agent loaded the session the first one made
    prompts = [p["content"][0]["text"] for s, t, p in events if s in theirs and t == "user.message"]
    assert [p.strip() for p in prompts] == ["The word is kiwi.", "What was the word?"]


def test_an_always_answer_holds_for_the_agents_next_call_of_the_same_command(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    log = notebook / "log.txt"
    command = f"echo again >> {log}"
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json", [_bash(command), _text("Once."), _bash(command), _text("Twice.")]
    )
    with external_agent_kernel(kernel_env, notebook, "agentcell") as d:
        d.execute("Log it.")
        d.until(lambda m: d.comm_id is not None, 60)
        d.announce()
        request = d.until_item("widget.approval_request", 60)
        d.send({"type": "approval", "tool_use_id": request["tool_use_id"], "result": "allow", "remember": "always"})
        d.until_idle(60)
        assert [c["remember"] for c in d.final_state if c["type"] == "user.tool_confirmation"] == ["always"]
        d.execute("Log it again.")
        d.until(lambda m: d.comm_id is not None, 60)
        d.announce()
        d.until_idle(60)
        state = d.final_state
        assert not [i for i in state if i["type"] == "widget.approval_request"]  # nobody was asked
        [result] = [i for i in state if i["type"] == "agent.tool_result"]
        assert not result["is_error"]
        assert log.read_text() == "again\nagain\n"


def test_a_recorded_exchange_replays_with_no_agent_installed(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "my-agent"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m agentcell.cli acp "$@"\n')
    wrapper.chmod(0o755)
    reply = "Recorded once, replayed anywhere."
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json", [_text(reply, chunk_size=3), _bash("echo never run"), _text("Refused.")]
    )
    recorded = {**kernel_env, "AGENTCELL_REPLAY": "record", "PATH": f"{bin_dir}{os.pathsep}{kernel_env['PATH']}"}
    with running_kernel(recorded, cwd=notebook) as (_, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        execute(kc, "%agent acp -- my-agent")
        live = execute(kc, "Say it.", timeout=90)
        assert live.status == "ok" and reply in live.final_markdown
        # nobody can approve here: the agent's bash call is refused, its card and all recorded too
        refused = execute(kc, "Run something.", timeout=90)
        assert refused.status == "ok" and "Refused." in refused.final_markdown
    lines = (notebook / "notebook.agentcell-acp.jsonl").read_text().splitlines()
    assert len(lines) == 3 and reply in lines[1]

    agents_before = {s for s, _, _ in _events(kernel_env["AGENTCELL_DB"])}
    replayed_env = {**kernel_env, "AGENTCELL_REPLAY": "replay", "AGENTCELL_MODEL": "scripted"}
    with running_kernel(replayed_env, cwd=notebook) as (km, kc):
        execute(kc, "%config AgentCell.renderer = 'markdown'")
        chosen = execute(kc, "%agent acp -- my-agent")
        assert chosen.status == "ok" and "replayed from the notebook's recording" in chosen.stdout
        again = execute(kc, "Say it.", timeout=60)
        assert again.status == "ok"
        shown, footer = again.final_markdown.split("<sub>")
        assert shown == live.final_markdown.split("<sub>")[0]  # the same turn, to the character
        assert "replayed from the notebook's recording" in footer
        card = execute(kc, "Run something.", timeout=60)
        assert card.status == "ok" and "Refused." in card.final_markdown and "echo never run" in card.final_markdown
        missing = execute(kc, "Something new.", timeout=60)
        assert (
            missing.status == "error"
            and "not recorded: my-agent's answer to 'Something new.'" in missing.reply["evalue"]
        )
        assert km.is_alive()
    # no agent ran: no session of its own was made (the kernel goes on with the notebook's)
    assert {s for s, _, _ in _events(kernel_env["AGENTCELL_DB"])} == agents_before


MISBEHAVING = Path(__file__).with_name("misbehaving_agent.py")


def _misbehaving(kc: Any, mode: str, log: Path) -> None:
    """The notebook's messages go to ``misbehaving_agent.py`` in ``mode`` (Markdown output)."""
    execute(kc, "%config AgentCell.renderer = 'markdown'")
    assert execute(kc, f"%agent acp -- {sys.executable} {MISBEHAVING} {mode} {log}").status == "ok"


def _gone(log: Path) -> bool:
    """Whether the misbehaving agent's process (its pid, the log's first line) has ended and been reaped."""
    pid = log.read_text().splitlines()[0].removeprefix("pid ")
    return not Path(f"/proc/{pid}").exists()


def test_an_agent_writing_garbage_on_stdout_fails_the_cell_and_is_stopped_its_words_kept(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    log = tmp_path / "garbage.log"
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        _misbehaving(kc, "garbage", log)
        failed = execute(kc, "hello", timeout=60)
        assert failed.status == "error" and failed.reply["ename"] == "TurnError"
        said = failed.reply["evalue"]
        assert "wrote something that is not ACP (JSON-RPC) on its stdout during the turn" in said
        assert "'this is not JSON: a log line on the wrong stream'" in said
        assert "Partial answer, before it went wrong." in failed.final_markdown  # the cell keeps its words
        assert _gone(log)  # it did not exit by itself: the kernel stopped it
        session_id = _kernel_session(kc)
        again = execute(kc, "hello again", timeout=60)  # a new process, which fails the same way
        assert again.status == "error" and "not ACP" in again.reply["evalue"]
        assert execute(kc, "%agent local").status == "ok"
        assert execute(kc, "%%python\n6 * 7").displays[0]["text/plain"] == "42"
        assert km.is_alive()
    ours = [(t, p) for s, t, p in _events(kernel_env["AGENTCELL_DB"]) if s == session_id]
    # what it said before the garbage is kept whole: a 200,000-character piece, and the words after it
    said_before = [p["content"][0]["text"] for t, p in ours if t == "agent.message"]
    assert said_before == ["long " * 40_000 + "Partial answer, before it went wrong."] * 2
    errors = [p["error"]["message"] for t, p in ours if t == "session.error"]
    assert len(errors) == 2 and all("this is not JSON" in e for e in errors)
    assert [p["stop_reason"]["type"] for t, p in ours if t == "session.status_idle"] == ["error", "error"]
    assert log.read_text().count("session/prompt") == 2


def test_an_agent_that_never_answers_is_cancelled_by_stop_then_killed_after_a_grace(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    log = tmp_path / "deaf.log"
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        _misbehaving(kc, "deaf", log)
        msg_id = kc.execute("hello", stop_on_error=False)
        shown: list[str] = []
        while not any("Partial answer" in s for s in shown):  # its first words are in the cell: it hangs now
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id:
                shown.append(msg["content"].get("data", {}).get("text/markdown", ""))
        km.interrupt_kernel()
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
            shown.append(msg["content"].get("data", {}).get("text/markdown", ""))
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "error"
        assert "did not end its turn within 3 s of session/cancel; it was stopped" in shown[-1]
        assert "session/cancel" in log.read_text().splitlines()  # Stop reached it as session/cancel
        assert _gone(log)  # it ignores SIGTERM: the kernel killed it
        session_id = _kernel_session(kc)
        assert "answers this notebook (" in execute(kc, "%agent acp").stdout  # still chosen, starts anew
        assert execute(kc, "%%python\n6 * 7").displays[0]["text/plain"] == "42"
        assert km.is_alive()
    ours = [(t, p) for s, t, p in _events(kernel_env["AGENTCELL_DB"]) if s == session_id]
    [cut] = [p for t, p in ours if t == "agent.message"]
    assert cut["content"][0]["text"] == "Partial answer, before it went wrong." and cut["interrupted"]
    assert [p["error"]["type"] for t, p in ours if t == "session.error"] == ["external_agent_error"]
    assert [p["stop_reason"]["type"] for t, p in ours if t == "session.status_idle"] == ["interrupted"]


def test_an_agent_that_outlives_its_stdin_ends_with_a_killed_kernel(
    kernel_env: dict[str, str], notebook: Path, tmp_path: Path
) -> None:
    log = tmp_path / "lingering.log"
    with running_kernel(kernel_env, cwd=notebook) as (km, kc):
        _misbehaving(kc, "lingering", log)
        turn = execute(kc, "hello", timeout=60)
        assert turn.status == "ok" and "Partial answer, before it went wrong." in turn.final_markdown
        assert not _gone(log)
        os.kill(km.provisioner.pid, signal.SIGKILL)  # the kernel gets no chance to stop its agent
    deadline = time.monotonic() + 30
    while not _gone_or_zombie(log):  # the kernel's end reaches it as SIGTERM
        assert time.monotonic() < deadline, "the agent outlived the kernel"
        time.sleep(0.05)


def _gone_or_zombie(log: Path) -> bool:
    """Whether the agent has ended (reaped, or a zombie whose parent, the killed kernel, cannot reap it)."""
    pid = log.read_text().splitlines()[0].removeprefix("pid ")
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True
