"""The password in a PostgreSQL URL never reaches a log, an event, an error message or a notebook.

The test server trusts connections over its socket but asks a password over TCP (SCRAM), so these tests
connect as a role of their own with a password that needs escaping in a URL.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import traceback
import uuid
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel

from agentcell import Engine, StoreError
from agentcell.store.pg_scratch import ScratchPostgres

from ..kernel.conftest import execute

PASSWORD = "hunter2@team:S3cret/pw"
WRONG = "guess@wrong:Pa55/pw"


def _forms(password: str) -> list[str]:
    return [password, quote(password, safe="")]


def _assert_clean(text: str, *passwords: str) -> None:
    for password in passwords or (PASSWORD, WRONG):
        for form in _forms(password):
            assert form not in text, f"{form!r} leaked"


@pytest.fixture
def secret_url(pg_server: ScratchPostgres, pg_url: str) -> str:
    """A URL over TCP with a password, for a role that owns the test's database."""
    role = f"alice_{uuid.uuid4().hex[:8]}"
    dbname = pg_url.split("/")[3].split("?", maxsplit=1)[0]
    pg_server.sql(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
    pg_server.sql(f'ALTER DATABASE "{dbname}" OWNER TO {role}')
    return pg_server.tcp_url(dbname, user=role, password=quote(PASSWORD, safe=""))


def test_what_the_store_shows_and_logs_never_holds_the_password(
    secret_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with Engine(secret_url) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
        session.send_sync("hello")
        shown = [engine.store.location, repr(engine.store), *(e.model_dump_json() for e in session.events())]
        assert "postgresql://alice_" in engine.store.location and "127.0.0.1" in engine.store.location
    _assert_clean("\n".join(shown))
    for url, reason in [
        (secret_url.replace(quote(PASSWORD, safe=""), quote(WRONG, safe="")), "password authentication failed"),
        (re.sub(r"@127\.0\.0\.1:\d+/", "@127.0.0.1:1/", secret_url), "is the server running"),  # nothing listens
    ]:
        with pytest.raises(StoreError, match=reason) as failed:
            Engine(url)
        _assert_clean("".join(traceback.format_exception(failed.value)))
    # libpq quotes a URL it cannot parse, password and all: the message is scrubbed of it.
    garbled = secret_url.replace(quote(PASSWORD, safe=""), "Bad%zzSecret")
    with pytest.raises(StoreError, match="invalid percent-encoded token") as failed:
        Engine(garbled)
    assert "Bad%zzSecret" not in "".join(traceback.format_exception(failed.value))
    _assert_clean(caplog.text)


def test_a_kernel_and_a_notebook_run_never_show_the_password(
    kernel_env: dict[str, str], tmp_path: Path, secret_url: str
) -> None:
    env = {**kernel_env, "AGENTCELL_DB": secret_url}
    notebook = tmp_path / "team.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "Agent (agentcell)", "language": "markdown"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in ("What is in the data?", "%session", "%session list", "%usage")]
    nbformat.write(nb, notebook)
    html = tmp_path / "team.html"
    run = subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", str(notebook), "--model", "scripted", "--html", str(html)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    executed = (tmp_path / "team.executed.ipynb").read_text()
    assert "You said: What is in the data?" in executed
    _assert_clean(executed + html.read_text() + run.stdout + run.stderr)

    wrong = {**env, "AGENTCELL_DB": secret_url.replace(quote(PASSWORD, safe=""), quote(WRONG, safe=""))}
    log = tmp_path / "kernel.log"
    with log.open("w") as output:  # the kernel's own stdout and stderr: what a server would log
        km, kc = start_new_kernel(kernel_name="agentcell", env=wrong, stdout=output, stderr=output, startup_timeout=60)
        try:
            failed = execute(kc, "hello")
            shown = failed.of("error")[0]["content"]
            assert failed.status == "error" and "password authentication failed" in shown["evalue"]
            assert shown["traceback"] == [f"StoreError: {shown['evalue']}"]  # one line, no frames
            _assert_clean(repr(failed.messages) + repr(failed.reply))
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    assert log.read_text()  # it did log something
    _assert_clean(log.read_text())
