"""The python tool's guard rails under workspace-write (tools/confine.py): each sentence of the preset's
promise, tried by the model's own code through the real tool, and the kernel's own threads untouched."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcell.tools import PermissionPreset, ToolRegistry, ToolResult
from agentcell.tools.builtin import python_tool

from ._support import make_call


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: Path) -> Path:
    # The home directory is the test's: its workspace and "outside" folders are both in it.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(workspace)
    return tmp_path


def _registry(registry_for: Callable[[PermissionPreset], ToolRegistry], preset: PermissionPreset) -> ToolRegistry:
    registry = registry_for(preset)
    registry.register(python_tool({}, timeout=10.0))
    return registry


async def _run(registry: ToolRegistry, code: str) -> ToolResult:
    return await registry.execute(make_call("python", code=code))


ESCAPES = {
    "write an absolute path outside": "open(OUT + '/new.txt', 'w').write('x')",
    "write through ..": "open('../outside/new.txt', 'w').write('x')",
    "append outside": "open(OUT + '/secret.txt', 'a').write('x')",
    "pathlib write_text outside": "import pathlib; pathlib.Path(OUT, 'new.txt').write_text('x')",
    "os.open for writing": "import os; os.open(OUT + '/new.txt', os.O_WRONLY | os.O_CREAT)",
    "write under ~": "open(os.path.expanduser('~/new.txt'), 'w').write('x')",
    "remove a file outside": "import os; os.remove(OUT + '/secret.txt')",
    "rename a file out": "import os; os.rename('notes.txt', OUT + '/notes.txt')",
    "rename a file in, over the workspace": "import os; os.rename(OUT + '/secret.txt', 'stolen.txt')",
    "hard-link an outside file in": "import os; os.link(OUT + '/secret.txt', 'alias.txt')",
    "write through a symlink that leads out": "import os; os.symlink(OUT, 'door'); open('door/new.txt', 'w')",
    "write a hard link made earlier": "open('hardlink.txt', 'w').write('x')",
    "make a directory outside": "import os; os.mkdir(OUT + '/dir')",
    "remove a tree outside": "import shutil; shutil.rmtree(OUT)",
    "copy a file out": "import shutil; shutil.copyfile('notes.txt', OUT + '/copy.txt')",
    "chmod outside": "import os; os.chmod(OUT + '/secret.txt', 0o777)",
    "read a file outside in the home directory": "open(OUT + '/secret.txt').read()",
    "read ~ through expanduser": "open(os.path.expanduser('~/outside/secret.txt')).read()",
    "run a shell command": "import os; os.system('touch ' + OUT + '/ran')",
    "run a subprocess": "import subprocess; subprocess.run(['touch', OUT + '/ran'])",
    "spawn": "import os; os.posix_spawn('/usr/bin/touch', ['touch', OUT + '/ran'], {})",
    "connect to the network": "import socket; socket.create_connection(('127.0.0.1', 9), timeout=1)",
    "load native code": "import ctypes; ctypes.CDLL(None)",
    # Issue 31, 2: through a thread the code starts, a pool's worker, a database file, UDP sendmsg.
    "write from a thread it starts": (
        "import threading\nbox = []\ndef go():\n    try:\n        open(OUT + '/new.txt', 'w').write('x')\n"
        "    except BaseException as exc:\n        box.append(exc)\n"
        "t = threading.Thread(target=go); t.start(); t.join()\nraise box[0]"
    ),
    "write from a thread pool": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(2) as pool:\n    pool.submit(lambda: open(OUT + '/new.txt', 'w')).result()"
    ),
    "create a database outside": "import sqlite3; sqlite3.connect(OUT + '/new.db').execute('create table t (x)')",
    "open a database outside by uri": "import sqlite3; sqlite3.connect('file:' + OUT + '/new.db?mode=rwc', uri=True)",
    "send a datagram with sendmsg": (
        "import socket\nwith socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:\n"
        "    s.sendmsg([b'x'], [], 0, ('127.0.0.1', 9))"
    ),
}


@pytest.mark.parametrize("attempt", list(ESCAPES))
async def test_the_models_python_cannot_escape_the_workspace_under_workspace_write(
    registry_for: Callable[[PermissionPreset], ToolRegistry], home: Path, outside: Path, workspace: Path, attempt: str
) -> None:
    os.link(outside / "secret.txt", workspace / "hardlink.txt")
    registry = _registry(registry_for, "workspace-write")
    before = sorted(os.listdir(outside))
    result = await _run(registry, f"import os\nOUT = {str(outside)!r}\n{ESCAPES[attempt]}")
    assert result.is_error, result.text_content
    assert "ConfinementError" in result.text_content
    assert sorted(os.listdir(outside)) == before
    assert (outside / "secret.txt").read_text() == "the secret\n"
    assert not (workspace / "stolen.txt").exists() and not (workspace / "alias.txt").exists()


async def test_inside_the_workspace_and_pythons_installation_it_works_as_before(
    registry_for: Callable[[PermissionPreset], ToolRegistry], home: Path, workspace: Path
) -> None:
    registry = _registry(registry_for, "workspace-write")
    code = (
        "import colorsys, json, os, pathlib\n"  # imports read Python's installation
        "pathlib.Path('out.json').write_text(json.dumps({'n': len(pathlib.Path('notes.txt').read_text().split())}))\n"
        "os.mkdir('sub'); os.rename('out.json', 'sub/out.json')\n"
        "os.makedirs(os.path.expanduser('~/.cache/tool'), exist_ok=True)\n"
        "with open(os.devnull, 'w') as f: f.write('discarded')\n"
        "pathlib.Path('sub/out.json').read_text()"
    )
    result = await _run(registry, code)
    assert not result.is_error, result.text_content
    assert (workspace / "sub" / "out.json").read_text() == '{"n": 3}'


async def test_full_access_confines_nothing_and_the_kernels_own_threads_are_never_confined(
    registry_for: Callable[[PermissionPreset], ToolRegistry], home: Path, outside: Path
) -> None:
    free = _registry(registry_for, "danger-full-access")
    result = await _run(free, f"with open({str(outside / 'free.txt')!r}, 'w') as f: f.write('x')")
    assert not result.is_error, result.text_content
    assert (outside / "free.txt").read_text() == "x"
    confined = _registry(registry_for, "workspace-write")
    assert (await _run(confined, f"open({str(outside / 'no.txt')!r}, 'w')")).is_error
    (outside / "mine.txt").write_text("the test's own thread writes where it likes")  # not the tool's thread


async def test_the_message_says_which_tool_asks_instead(
    registry_for: Callable[[PermissionPreset], ToolRegistry], home: Path, outside: Path
) -> None:
    registry = _registry(registry_for, "workspace-write")
    wrote: Any = await _run(registry, f"open({str(outside / 'x.txt')!r}, 'w')")
    assert "The write_file tool asks the user for such paths" in wrote.text_content
    ran = await _run(registry, "import subprocess; subprocess.run(['true'])")
    assert "use the bash tool, which asks the user" in ran.text_content
