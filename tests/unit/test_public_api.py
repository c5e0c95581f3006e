"""The public API: complete, lazy, one error tree, and an engine that imports nothing from Jupyter."""

from __future__ import annotations

import inspect
import subprocess
import sys

import agentcell
from agentcell import errors


def test_every_exported_name_resolves_and_nothing_is_exported_twice() -> None:
    assert len(set(agentcell.__all__)) == len(agentcell.__all__)
    for name in agentcell.__all__:
        assert getattr(agentcell, name) is not None, name


def test_every_error_derives_from_the_one_root() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    assert len(classes) >= 15
    assert all(issubclass(c, errors.AgentCellError) for c in classes)
    assert issubclass(errors.InvalidInputError, errors.UserError)
    assert not issubclass(errors.ProviderError, errors.UserError)


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_the_engine_imports_nothing_from_jupyter() -> None:
    loaded = _modules_after(
        "import tempfile\n"
        "from agentcell import Engine\n"
        "e = Engine(tempfile.mkdtemp() + '/a.db')\n"
        "a = e.agents.create(name='a', model='scripted')\n"
        "e.sessions.create(agent=a.id).send_sync('hi')"
    )
    jupyter = {m for m in loaded if m.split(".")[0] in {"IPython", "ipykernel", "jupyter_client", "traitlets", "zmq"}}
    assert jupyter == set()
    assert "llama_cpp" not in loaded  # the local model loads only when used


def test_importing_the_package_is_cheap() -> None:
    loaded = _modules_after("import agentcell.kernel.kernel")
    assert "pydantic" not in loaded and "httpx" not in loaded  # the kernel starts without the engine
