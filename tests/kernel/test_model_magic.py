"""%model says at once whether a model can be used, and asks for a missing key in a hidden prompt that keeps
it in the kernel's memory only (issue 14, 5): the real kernel, its stdin channel answered as JupyterLab does."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import execute, running_kernel
from .echo_server import echo_server

pytestmark = pytest.mark.slow

KEY = "fake-key-typed-into-the-prompt-0123456789"  # not key-shaped: nothing scans it as a leak


def _execute_answering_prompt(kc: Any, code: str, answer: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run ``code`` with stdin allowed, answer its one input request; the request and the IOPub messages."""
    msg_id = kc.execute(code, allow_stdin=True)
    prompt = kc.get_stdin_msg(timeout=30)
    kc.input(answer)
    messages = []
    deadline = time.monotonic() + 30
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return prompt["content"], messages
        messages.append(msg)


def test_a_missing_key_is_asked_for_hidden_and_kept_out_of_the_notebook(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    with echo_server() as server:
        kernel_env["ANTHROPIC_BASE_URL"] = server.root
        with running_kernel(kernel_env) as (_, kc):
            prompt, messages = _execute_answering_prompt(kc, "%model claude-sonnet-4-5", KEY)
            assert prompt["password"] is True
            assert "ANTHROPIC_API_KEY" in prompt["prompt"] and "memory only" in prompt["prompt"]
            said = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
            assert "model: claude-sonnet-4-5" in said
            assert execute(kc, "Hello there", cell_id="c1").status == "ok"
            # The agent's own Python cannot read it from the environment either.
            shown = execute(kc, "%%python\nimport os\nprint(os.environ.get('ANTHROPIC_API_KEY'))")
            assert shown.stdout.strip() == "None"
            everything = str(messages) + str(shown.messages)
        assert server.headers[-1]["x-api-key"] == KEY
    assert KEY not in everything
    with sqlite3.connect(kernel_env["AGENTCELL_DB"]) as conn:
        assert not [row for row in conn.execute("SELECT body FROM events") if KEY in row[0]]


def test_without_a_prompt_a_missing_key_is_one_line_and_the_model_is_unchanged(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env) as (_, kc):
        kc.allow_stdin = False  # as nbclient runs a notebook: no one to answer a prompt
        refused = execute(kc, "%model claude-sonnet-4-5")
        assert refused.status == "error"
        assert refused.reply["evalue"].startswith("no Anthropic API key: set the ANTHROPIC_API_KEY")
        assert "model: scripted" in execute(kc, "%model").stdout


def test_a_model_no_provider_serves_is_refused_when_named(kernel_env: dict[str, str], tmp_path: Path) -> None:
    with running_kernel(kernel_env) as (_, kc):
        unknown = execute(kc, "%model gpt-unheard-of")
        assert unknown.status == "error" and "no provider serves the model" in unknown.reply["evalue"]
        missing = execute(kc, f"%model scripted:{tmp_path / 'nonexistent.json'}")
        assert missing.status == "error" and "cannot read the script" in missing.reply["evalue"]
        assert "model: scripted" in execute(kc, "%model").stdout


def test_config_refuses_a_model_no_provider_serves_as_model_does(kernel_env: dict[str, str], tmp_path: Path) -> None:
    """``%config AgentCell.model = …`` is refused the moment it is given, with %model's own message; before,
    IPython printed the error on stderr, the cell succeeded, and the model failed at the next turn."""
    with running_kernel(kernel_env) as (_, kc):
        by_magic = execute(kc, "%model gpt-unheard-of")
        by_config = execute(kc, "%config AgentCell.model = 'gpt-unheard-of'")
        assert by_config.status == "error" and by_config.reply["ename"] == "UsageError"
        assert by_config.reply["evalue"] == by_magic.reply["evalue"]
        assert "no provider serves the model" in by_config.reply["evalue"]
        script = tmp_path / "nonexistent.json"
        missing = execute(kc, f"%config AgentCell.model = 'scripted:{script}'")
        assert missing.status == "error" and "cannot read the script" in missing.reply["evalue"]
        assert execute(kc, "%config AgentCell.model").displays[-1]["text/plain"] == "''"
        assert "model: scripted" in execute(kc, "%model").stdout
        # A model a provider serves is taken, and %config still does everything else it did.
        taken = execute(kc, "%config AgentCell.model = 'scripted'")
        assert taken.status == "ok" and "Error" not in taken.stderr
        assert execute(kc, "%config AgentCell.model").displays[-1]["text/plain"] == "'scripted'"
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, "%config AgentCell.renderer").displays[-1]["text/plain"] == "'markdown'"
