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


def test_all_is_sorted_and_names_every_lazy_export() -> None:
    """As httpx's test_exported_members: nothing exported by accident, nothing public left out."""
    from agentcell import _LAZY

    def kind(name: str) -> tuple[int, str]:  # ruff's isort-style order: CONSTANTS, Classes, functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert agentcell.__all__ == sorted(agentcell.__all__, key=kind)
    assert set(agentcell.__all__) == set(_LAZY) | {"__version__", "load_ipython_extension", "unload_ipython_extension"}
    error_classes = {n for n, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__}
    assert error_classes <= set(agentcell.__all__) | {"AgentCellError"}
    assert set(errors.__all__) == error_classes


def _sample(cls: type[BaseException]) -> BaseException:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if [p.name for p in parameters] == ["args", "kwargs"]:
        return cls("a message that says what to do")
    values = {"agent_id": "agent_1", "session_id": "sesn_1", "version": 3, "latest": 2, "path": "/x.db"}
    values |= {"found": 9, "supported": 2, "message": "it failed", "key_env": "ANTHROPIC_API_KEY", "step_id": "draft"}
    values |= {"diagnostics": ["SKILL.md:2: error: no name"]}
    args = [values[p.name] for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    kwargs: dict[str, object] = {}
    if issubclass(cls, errors.ProviderError) and not issubclass(cls, errors.ReplayMissError):
        kwargs = {"status_code": 429, "retryable": True, "retry_after": 1.5}
    return cls(*args, **kwargs)


def test_every_error_survives_a_pickle_round_trip() -> None:
    import pickle

    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    for cls in classes:
        error = _sample(cls)
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is cls
        assert str(back) == str(error), cls
        assert vars(back) == vars(error), cls
