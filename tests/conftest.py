"""Fixtures shared by every test: an isolated engine on a fresh database, and a scripted-provider helper."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, Session
from agentcell.tools.python_access import PYTHON_TOOL_ENV, set_python_tool
from agentcell.usage import Pricing, flat_pricing

SONNET_LIKE: Pricing = flat_pricing(3, 15)
"""$3 / $15 per million input / output tokens: enough to make budgets bite in tests."""


def pytest_configure(config: pytest.Config) -> None:
    # The python tool asks under workspace-write unless the user allows it. Most tests run it as a notebook
    # whose user allowed it does (kernels and servers they start inherit this); those about the asking
    # take the python_tool_asks fixture.
    os.environ[PYTHON_TOOL_ENV] = "allow"


@pytest.fixture(autouse=True)
def _python_tool_allowed() -> None:
    set_python_tool("allow")  # whatever a test before set


@pytest.fixture
def python_tool_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The python tool as it is by default: it asks under workspace-write (in this process and in the
    kernels and servers the test starts)."""
    monkeypatch.delenv(PYTHON_TOOL_ENV)
    set_python_tool("ask")


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may touch the developer's real database or pick up their model settings.
    data = tmp_path_factory.mktemp("jupyter-data")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.delenv("AGENTCELL_DB", raising=False)
    monkeypatch.delenv("AGENTCELL_MODEL", raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agentcell.db"


@pytest.fixture
def engine(db_path: Path) -> Iterator[Engine]:
    with Engine(db_path) as engine:
        yield engine


@pytest.fixture
def kernel_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a real kernel under test: its own database, the scripted model, a notebook path,
    and no provider keys of the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(
        AGENTCELL_DB=str(tmp_path / "kernel.db"),
        AGENTCELL_MODEL="scripted",
        JPY_SESSION_NAME=str(tmp_path / "notebook.ipynb"),
        PYTHONUNBUFFERED="1",
    )
    return env


def scripted_engine(
    db_path: Path, script: Sequence[ScriptedResponse] | None = None, *, pricing: Pricing = SONNET_LIKE
) -> tuple[Engine, ScriptedProvider]:
    provider = ScriptedProvider(script, pricing=pricing)
    return Engine(db_path, providers={"scripted": provider}), provider


def event_seen(session: Session, event_type: str) -> asyncio.Event:
    """An asyncio.Event set when ``session`` next emits an item of ``event_type``; call it before starting
    the turn so the item cannot be missed."""
    seen = asyncio.Event()

    def listener(item: object) -> None:
        if getattr(item, "type", None) == event_type:
            seen.set()

    session.subscribe(listener)
    return seen
