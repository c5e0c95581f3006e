"""Two users' kernels on one PostgreSQL store: a session is never attached to another user's notebook unless
that user asks (``%session resume ID``). The loopback Anthropic server's request log says what history the
model got."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..kernel.conftest import execute, running_kernel
from ..kernel.echo_server import EchoServer, echo_server
from ..kernel.notebook_files import identify, save_notebook

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]  # several kernels one after another

SHARED_ID = "2d1c0b9a-8e7f-4a6b-9c5d-4e3f2a1b0c9d"


@pytest.fixture
def server() -> Iterator[EchoServer]:
    with echo_server() as instance:
        yield instance


def _env(
    kernel_env: dict[str, str],
    url: str,
    server: EchoServer,
    user: str,
    notebook: Path,
    *,
    named_by: str = "JUPYTERHUB_USER",
) -> dict[str, str]:
    """A kernel of ``user``'s: a JupyterHub server's (``JUPYTERHUB_USER``), or one started under their login
    (``LOGNAME``, the first name ``getpass`` reads, as on a machine two people share)."""
    env = {k: v for k, v in kernel_env.items() if k != "JUPYTERHUB_USER"}
    return {
        **env,
        "AGENTCELL_DB": url,
        "AGENTCELL_MODEL": "claude-sonnet-4-5",
        "ANTHROPIC_BASE_URL": server.root,
        "ANTHROPIC_API_KEY": "x",
        named_by: user,
        "JPY_SESSION_NAME": str(notebook),
    }


def _users(server: EchoServer) -> list[str]:
    return [text for role, text in server.conversations()[-1] if role == "user"]


def _session_id(kc: object) -> str:
    return execute(kc, "%session").stdout.split()[1]  # type: ignore[arg-type]


@pytest.mark.parametrize("named_by", ["JUPYTERHUB_USER", "LOGNAME"])
def test_another_users_copy_of_a_notebook_forks_unless_they_resume_on_purpose(
    kernel_env: dict[str, str], tmp_path: Path, pg_url: str, server: EchoServer, named_by: str
) -> None:
    shared = tmp_path / "shared.ipynb"  # one file both see (a shared folder, or the same path on each server)
    save_notebook(shared, SHARED_ID, [])
    alice_env = _env(kernel_env, pg_url, server, "alice", shared, named_by=named_by)
    bob_env = _env(kernel_env, pg_url, server, "bob", shared, named_by=named_by)
    with running_kernel(alice_env, cwd=tmp_path) as (_, alice):
        assert identify(alice, SHARED_ID) == {"notebook_id": SHARED_ID, "notices": []}
        first = execute(alice, "alice one", cell_id="cell-0")
        alice_session = _session_id(alice)
        save_notebook(shared, SHARED_ID, [("alice one", first)])
        with running_kernel(bob_env, cwd=tmp_path) as (_, bob):
            answer = identify(bob, SHARED_ID)
            bob_id = answer["notebook_id"]
            assert bob_id not in (None, SHARED_ID)
            assert len(answer["notices"]) == 1 and "a notebook of alice's" in answer["notices"][0]
            execute(bob, "bob one")
            assert _users(server) == ["alice one", "bob one"]  # what the notebook shows, in bob's own session
            assert _session_id(bob) != alice_session
            execute(alice, "alice two")
            assert _users(server) == ["alice one", "alice two"]  # alice's conversation has none of bob's turns
            resumed = execute(bob, f"%session resume {alice_session}")  # bob asks for alice's session
            assert resumed.status == "ok" and alice_session in resumed.stdout
        with running_kernel(bob_env, cwd=tmp_path) as (_, bob):  # and keeps it across a restart
            assert identify(bob, bob_id) == {"notebook_id": bob_id, "notices": []}
            execute(bob, "bob in alice's session")
            assert _users(server) == ["alice one", "alice two", "bob in alice's session"]


def test_a_notebook_without_an_id_never_finds_another_users_session_by_its_path(
    kernel_env: dict[str, str], tmp_path: Path, pg_url: str, server: EchoServer
) -> None:
    home = tmp_path / "home" / "jovyan" / "analysis.ipynb"  # every hub server has this path
    home.parent.mkdir(parents=True)
    with running_kernel(_env(kernel_env, pg_url, server, "alice", home), cwd=home.parent) as (_, alice):
        execute(alice, "alice's question")
    with running_kernel(_env(kernel_env, pg_url, server, "bob", home), cwd=home.parent) as (_, bob):
        execute(bob, "bob's question")
    assert _users(server) == ["bob's question"]
    with running_kernel(_env(kernel_env, pg_url, server, "alice", home), cwd=home.parent) as (_, alice):
        execute(alice, "alice again")
    assert _users(server) == ["alice's question", "alice again"]  # alice's own, by path: bob took nothing
