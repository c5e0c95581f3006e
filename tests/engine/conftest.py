"""Fixtures for the engine feature tests: a workspace the session's tools work in, an engine over it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedToolCall, TextBlock
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, TextPart, ToolResultPart
from agentcell.providers.replay import Replayer
from agentcell.providers.scripted import ScriptSource
from agentcell.tools import PermissionPolicy, ToolRegistry
from agentcell.usage import Pricing, flat_pricing

SONNET_LIKE: Pricing = flat_pricing(3, 15)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


def engine_over(
    db: Path,
    workspace: Path,
    script: ScriptSource | None = None,
    *,
    pricing: Pricing = SONNET_LIKE,
    **options: object,
) -> tuple[Engine, ScriptedProvider, ToolRegistry]:
    """An engine whose tools are a fresh registry working in ``workspace`` (no temp dirs), the file tools
    registered, and ``scripted`` answered by a provider playing ``script``."""
    from agentcell.tools.builtin import file_tools

    registry = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))
    for definition in file_tools():
        registry.register(definition)
    provider = ScriptedProvider(script, pricing=pricing)
    engine = Engine(db, providers={"scripted": provider}, tools=registry, **options)  # type: ignore[arg-type]
    return engine, provider, registry


def engine_replaying(db: Path, workspace: Path, replayer: Replayer, provider: ScriptedProvider | None) -> Engine:
    """:func:`engine_over` with ``scripted`` served through ``replayer``: live from ``provider``, or, for None,
    from a provider that cannot be built (what a replay answers, it answers from the recording alone)."""
    engine, _, _ = engine_over(db, workspace, replay=replayer)
    if provider is not None:
        engine.providers.register("scripted", provider)
    else:
        engine.providers.register("scripted", lambda _config: (_ for _ in ()).throw(RuntimeError("no model")))
    return engine


def verdict(result: str, explanation: str) -> ScriptedResponse:
    """What a grader answers: a call of submit_verdict."""
    return ScriptedResponse(
        steps=[ScriptedToolCall(name="submit_verdict", input={"result": result, "explanation": explanation})]
    )


def prompt_text(request: ModelRequest) -> str:
    """Every text the request carries (user text and tool results), joined."""
    parts: list[str] = [request.system or ""]
    for message in request.messages:
        for part in message.content:
            if isinstance(part, TextPart):
                parts.append(part.text)
            elif isinstance(part, ToolResultPart):
                parts.extend(b.text for b in part.content if isinstance(b, TextBlock))
    return "\n".join(parts)


def text_of(event: ev.Event) -> str:
    content: Sequence[object] = getattr(event, "content", [])
    return "".join(b.text for b in content if isinstance(b, TextBlock))
