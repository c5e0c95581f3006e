"""Python escapes: the ways round the python tool's guard rails do not happen unasked under workspace-write.

One agentcell kernel (through jupyter_client, its turns in the widget, answered as a view does) under the
default ``workspace-write``, with the python tool at its default: it asks. Each case is a turn whose model
runs, with the python tool, one way round an in-process check: a thread or a ``ThreadPoolExecutor`` it
starts, ``os.open``/``os.unlink`` with ``dir_fd``, ``multiprocessing``'s spawn, ``_posixsubprocess.fork_exec``,
``sqlite3.connect`` outside the workspace and into the session store itself, UDP ``sendmsg``, an IPython
``post_run_cell`` hook for the user's next cell. Each call asks; denied, nothing it would do happened (on
disk, in the store, on the wire, at the next cell). Under ``danger-full-access`` the same code runs unasked
and does each thing, which proves each is a real way round. "Allow always" is the session's
``python:kernel`` rule, listed and revoked by ``%permissions``; only the user's own cell lets the python
tool run unasked, not the tool's code.
"""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..kernel.conftest import Execution, execute
from ..widgets.conftest import TurnDriver
from .kernel_session import kernel, kernel_environment, logged_events

pytestmark = pytest.mark.slow

FORK_EXEC = (
    "import _posixsubprocess, os, shutil\n"
    "r, w = os.pipe()\n"
    "mkdir = os.fsencode(shutil.which('mkdir'))\n"
    "pid = _posixsubprocess.fork_exec([mkdir, os.fsencode({out!r} + '/forked')], [mkdir], True, (w,), None, None,\n"
    "    -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)\n"
    "os.close(w)\nos.read(r, 64)\nos.waitpid(pid, 0)"
)

ESCAPES: dict[str, str] = {
    # each writes, deletes or sends something under {out} / {tag} / {port}, one per mode
    "thread": (
        "import threading\nt = threading.Thread(target=lambda: open({out!r} + '/thread', 'w').write('x'))\n"
        "t.start()\nt.join()"
    ),
    "thread-pool": (
        "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(1) as pool:\n"
        "    pool.submit(lambda: open({out!r} + '/pool', 'w').write('x')).result()"
    ),
    "open-dir-fd": (
        "import os\nd = os.open({out!r}, os.O_RDONLY)\n"
        "fd = os.open('dir-fd', os.O_WRONLY | os.O_CREAT, dir_fd=d)\nos.write(fd, b'x')\nos.close(fd)"
    ),
    "unlink-dir-fd": "import os\nd = os.open({out!r}, os.O_RDONLY)\nos.unlink('victim', dir_fd=d)",
    "multiprocessing-spawn": (
        "import multiprocessing, os\n"
        "p = multiprocessing.get_context('spawn').Process(target=os.mkdir, args=({out!r} + '/spawned',))\n"
        "p.start()\np.join()"
    ),
    "fork-exec": FORK_EXEC,
    "sqlite-outside": (
        "import sqlite3\nc = sqlite3.connect({out!r} + '/made.db')\nc.execute('create table t (x)')\nc.commit()"
    ),
    "sqlite-session-store": (
        "import os, sqlite3\nc = sqlite3.connect(os.environ['AGENTCELL_DB'])\n"
        "c.execute('create table planted_{tag} (x)')\nc.commit()"
    ),
    "udp-sendmsg": (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.sendmsg([b'leak'], [], 0, ('127.0.0.1', {port}))"
    ),
    "post-run-cell-hook": (
        "get_ipython().events.register('post_run_cell', lambda *a: open({out!r} + '/hook', 'w').write('x'))"
    ),
}


@dataclass
class Mode:
    """Where one mode's cases leave their traces: a folder outside the workspace and a UDP port."""

    tag: str
    out: Path
    udp: socket.socket

    def code(self, escape: str) -> str:
        return ESCAPES[escape].format(out=str(self.out), tag=self.tag, port=self.udp.getsockname()[1])


def _exists(name: str) -> Callable[[Mode, str], bool]:
    return lambda mode, _db: (mode.out / name).exists()


def _table(mode: Mode, db: str) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (f"planted_{mode.tag}",)).fetchall()
    finally:
        conn.close()
    return bool(found)


def _received(mode: Mode, _db: str) -> bool:
    try:
        return mode.udp.recv(64) == b"leak"
    except BlockingIOError:
        return False


HAPPENED: dict[str, Callable[[Mode, str], bool]] = {
    "thread": _exists("thread"),
    "thread-pool": _exists("pool"),
    "open-dir-fd": _exists("dir-fd"),
    "unlink-dir-fd": lambda mode, _db: not (mode.out / "victim").exists(),
    "multiprocessing-spawn": _exists("spawned"),
    "fork-exec": _exists("forked"),
    "sqlite-outside": _exists("made.db"),
    "sqlite-session-store": _table,
    "udp-sendmsg": _received,
    "post-run-cell-hook": _exists("hook"),
}


@dataclass
class Turn:
    asked: dict[str, Any] | None
    """The approval request the widget showed, if the call asked."""
    result: dict[str, Any]
    """The call's logged agent.tool_result."""


@dataclass
class Notebook:
    kc: Any
    root: Path
    db: str
    modes: dict[str, Mode] = field(default_factory=dict)
    scripts: int = 0

    def cell(self, code: str) -> Execution:
        run = execute(self.kc, code, timeout=60)
        assert run.status == "ok", run.reply
        return run

    def turn(self, code: str, answer: str | None = None, remember: str = "once") -> Turn:
        """A turn whose model runs ``code`` once with the python tool; ``answer`` the approval it is asked
        (None: it must run unasked)."""
        self.scripts += 1
        path = self.root / f"script-{self.scripts}.json"
        call = {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": code}}]}
        path.write_text(json.dumps([call, {"steps": [{"kind": "text", "text": f"done {self.scripts}"}]}]))
        self.cell(f"%model scripted:{path}")
        driver = TurnDriver(self.kc)
        driver.execute(f"Run the code, turn {self.scripts}.")
        asked = None
        if answer is not None:
            driver.until(lambda _m: driver.comm_id is not None, 60)
            driver.announce()
            asked = driver.until_item("widget.approval_request", 60)
            answered = {"tool_use_id": asked["tool_use_id"], "result": answer, "remember": remember}
            driver.send({"type": "approval", **answered})
        driver.until_idle(60)
        if answer is None:
            items = [i for b in driver.batches for i in b.get("items", [])]
            assert all(i["type"] != "widget.approval_request" for i in items), "the call asked"
        result = [e for e in logged_events(self.db) if e["type"] == "agent.tool_result"][-1]
        return Turn(asked, result)

    def python_tool_line(self) -> str:
        return next(line for line in self.cell("%permissions").stdout.splitlines() if line.startswith("python tool:"))


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    root = tmp_path_factory.mktemp("python-escapes")
    workspace = root / "workspace"
    workspace.mkdir()
    env = kernel_environment(root)
    del env["AGENTCELL_PYTHON_TOOL"]  # the default: the python tool asks
    sockets: list[socket.socket] = []
    with kernel(env, cwd=workspace) as (_km, kc):
        nb = Notebook(kc, root, env["AGENTCELL_DB"])
        for tag in ("denied", "allowed"):
            out = root / "outside" / tag
            out.mkdir(parents=True)
            (out / "victim").write_text("keep me")
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp.bind(("127.0.0.1", 0))
            udp.setblocking(False)
            sockets.append(udp)
            nb.modes[tag] = Mode(tag, out, udp)
        yield nb
    for udp in sockets:
        udp.close()


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_denied_the_escape_does_not_happen(notebook: Notebook, escape: str) -> None:
    notebook.cell("%permissions workspace-write")
    mode = notebook.modes["denied"]
    turn = notebook.turn(mode.code(escape), answer="deny")
    assert turn.asked is not None and "python would run code in the notebook's kernel" in turn.asked["reason"]
    assert turn.result["is_error"] and "declined" in json.dumps(turn.result["content"])
    notebook.cell("%%python\n1")  # the user's next cell: a hook the code had registered would run now
    assert not HAPPENED[escape](mode, notebook.db), f"{escape} happened though the user said no"


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_full_access_runs_the_same_code_and_it_gets_out(notebook: Notebook, escape: str) -> None:
    notebook.cell("%permissions danger-full-access")
    try:
        mode = notebook.modes["allowed"]
        turn = notebook.turn(mode.code(escape))
        assert not turn.result["is_error"], turn.result
        notebook.cell("%%python\n1")
        assert HAPPENED[escape](mode, notebook.db), f"{escape} is no way out: it did nothing even unconfined"
    finally:
        notebook.cell("%permissions workspace-write")


def test_allow_always_is_the_python_rule_listed_and_revoked(notebook: Notebook) -> None:
    notebook.cell("%permissions workspace-write")
    assert notebook.turn("n = 41", answer="allow", remember="always").asked is not None
    listed = notebook.cell("%permissions").stdout
    assert "python:kernel: allow  (every run of the python tool, this session)" in listed
    assert not notebook.turn("n += 1").result["is_error"], "the rule let the next call run unasked"
    assert notebook.cell("%%python\nprint(n)").stdout.strip() == "42"
    assert "revoked: python:kernel" in notebook.cell("%permissions revoke python").stdout
    assert notebook.turn("n += 1", answer="deny").asked is not None, "revoked, the call asks again"
    assert notebook.cell("%%python\nprint(n)").stdout.strip() == "42"


def test_the_tools_code_cannot_let_the_python_tool_run_unasked(notebook: Notebook) -> None:
    notebook.cell("%permissions workspace-write")
    attempt = "get_ipython().run_line_magic('config', 'AgentCell.python_tool = \"allow\"')"
    turn = notebook.turn(attempt, answer="allow")
    said = json.dumps(turn.result["content"])  # %config prints the error it meets rather than raising it
    assert "refused:" in said and "only by the user's hand" in said, said
    shown = notebook.cell("%config AgentCell.python_tool").of("execute_result")
    assert shown[0]["content"]["data"]["text/plain"] == "'ask'"
    assert notebook.python_tool_line().startswith("python tool: asked before each run")
    assert notebook.turn("1", answer="deny").asked is not None, "the next call still asks"


def test_the_users_own_setting_lets_it_run_unasked(notebook: Notebook) -> None:
    notebook.cell("%permissions workspace-write")
    notebook.cell('%config AgentCell.python_tool = "allow"')
    try:
        assert notebook.python_tool_line().startswith("python tool: runs unasked")
        assert not notebook.turn("m = 7").result["is_error"]
    finally:
        notebook.cell('%config AgentCell.python_tool = "ask"')
    assert notebook.turn("m = 8", answer="deny").asked is not None
    assert notebook.cell("%%python\nprint(m)").stdout.strip() == "7"
