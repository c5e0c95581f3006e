"""The layers of ARCHITECTURE.md, checked: each room imports only the rooms beneath it.

Every import in the package (module level or inside a function) is resolved to an ``agentcell`` module and
checked against the rules below; a new import that breaks one fails here, naming the file and the line.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import agentcell

PACKAGE = Path(agentcell.__file__).parent

RECORDS = ("records", "events", "usage", "errors", "ids", "_validation", "_format", "_version", "_secrets")
"""The bottom layer: data and its validation."""

ALLOWED: dict[str, tuple[str, ...]] = {
    "records": RECORDS,
    "events": RECORDS,
    "usage": RECORDS,
    "errors": RECORDS,
    "ids": RECORDS,
    "_validation": RECORDS,
    "store": (*RECORDS, "store"),
    "providers": (*RECORDS, "providers"),
    "tools": (*RECORDS, "tools", "providers.base"),
    "engine": (*RECORDS, "engine", "store", "providers", "tools"),
    "acp_client": (*RECORDS, "engine", "store", "providers", "tools", "acp_client", "_version"),
}
"""Room -> the rooms (module prefixes under ``agentcell``) it may import. Rooms not listed (the services,
the Session handle, the composition root, the kernel, the CLI) sit above and may import what is beneath."""

JUPYTER = ("IPython", "ipykernel", "jupyter_client", "jupyter_core", "traitlets", "nbformat", "nbclient", "zmq")


def _imports(module: str, source: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the source of ``module`` (``agentcell.x.y``)."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # `from . import x` and `from .pkg import mod` name modules too
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def _room(relative: str) -> str | None:
    for room in sorted(ALLOWED, key=len, reverse=True):
        if relative == room or relative.startswith(room + "."):
            return room
    return None


def _check(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """The rules ``module`` breaks, one line each."""
    problems: list[str] = []
    room = _room(module.removeprefix("agentcell."))
    for line, target in _imports(module, source, is_package=is_package):
        where = f"{module}:{line} imports {target}"
        if room is not None and target.split(".")[0] in JUPYTER:
            problems.append(f"{where}: the engine's rooms import nothing from Jupyter")
        if room is None or not target.startswith("agentcell."):
            continue
        inner = target.removeprefix("agentcell.")
        if not any(inner == r or inner.startswith(r + ".") for r in ALLOWED[room]):
            problems.append(f"{where}: {room} may import only {', '.join(ALLOWED[room])}")
    return problems


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return found


def test_each_room_imports_only_the_rooms_beneath_it() -> None:
    problems = [
        problem
        for module, path in _modules()
        for problem in _check(module, path.read_text(), is_package=path.name == "__init__.py")
    ]
    assert problems == []


def test_the_checker_catches_each_kind_of_violation() -> None:
    assert _check("agentcell.engine.turn", "from ..sessions import Session\n")  # the engine reaching up
    assert _check("agentcell.engine.turn", "def f():\n    from ..kernel.host import NotebookAgent\n")  # lazily
    assert _check("agentcell.store.sqlite", "from ..engine.log import SessionLog\n")
    assert _check("agentcell.records.agent", "from ..tools.base import ToolCall\n")
    assert _check("agentcell.tools.registry", "import IPython\n")
    assert _check("agentcell.records.agent", "from .. import engine\n")
    assert _check("agentcell.engine.turn", "from ..records import agent\nfrom .log import SessionLog\n") == []
    assert _check("agentcell.engine.turn", "from ..acp_client import ExternalAgent\n")  # the engine knows no client
    assert _check("agentcell.engine.turn", "from ..acp.agent import AgentCellAcpAgent\n")
    assert _check("agentcell.acp_client.driver", "from ..acp.wire import x\n")  # the client is not the server
    assert _check("agentcell.acp_client.driver", "from ..sessions import Session\n")
    assert _check("agentcell.acp_client.driver", "import IPython\n")
    assert _check("agentcell.acp_client.driver", "from ..engine.drivers import TurnScope\n") == []


def test_nothing_under_engine_mentions_the_session_handle() -> None:
    for module, path in _modules():
        if module.startswith("agentcell.engine"):
            for _, target in _imports(module, path.read_text(), is_package=path.name == "__init__.py"):
                assert target not in ("agentcell.sessions", "agentcell.sessions_api", "agentcell.core"), path


def test_a_first_turn_imports_no_json_schema_library() -> None:
    """jsonschema compiles ~40 grammars when it is imported (rfc3987-syntax, which Jupyter's format checks
    bring): seconds of a first prose cell. Only a workflow step with an output schema needs it."""
    code = (
        "import sys, agentcell, agentcell.core, agentcell.kernel.host, agentcell.engine.workflows\n"
        "print(sorted(m for m in ('jsonschema', 'lark') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "[]"


def test_a_scripted_turn_loads_no_http_stack_prices_or_yaml() -> None:
    """A notebook on the scripted or local model never speaks HTTP: httpx, h11 and genai-prices (~90 ms of a
    first prose cell) load with the first HTTP provider, and PyYAML with the first skill or workflow plan."""
    code = (
        "import sys, tempfile\n"
        "from agentcell import Engine\n"
        "engine = Engine(tempfile.mkdtemp() + '/t.db')\n"
        "session = engine.sessions.create(agent=engine.agents.create(name='a', model='scripted').id)\n"
        "assert session.send_sync('hello').text\n"
        "print(sorted(m for m in ('httpx', 'h11', 'genai_prices', 'yaml', 'jsonschema') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
