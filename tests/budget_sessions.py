"""A session whose scripted server reports whatever usage a test chooses: the budget properties' harness.

Shared by tests/unit/test_budget.py and tests/hardening/test_budget_properties.py, which throw different
adversarial usage at the same setup.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

from agentcell import (
    Engine,
    ModelRequest,
    ScriptedProvider,
    ScriptedResponse,
    ScriptedText,
    ScriptedToolCall,
    Session,
)
from agentcell.tools.simple import SimpleTools
from agentcell.usage import Pricing, Usage

UsageOf = Callable[[int, int], Usage]
"""The usage a response reports, from the request's input-token bound and its ``max_tokens``."""


@contextmanager
def reported_usage_session(
    usage_of: UsageOf,
    *,
    pricing: Pricing,
    budget: Decimal,
    max_tokens: int,
    tool_loop: bool,
    max_turns: int,
    text: str = "x" * 50,
) -> Iterator[Session]:
    """A session on a scripted provider answering each request with ``usage_of``'s usage: a call of the
    ``noop`` tool when ``tool_loop`` (so the turn loops until something stops it), else ``text``."""
    box: list[ScriptedProvider] = []

    def respond(request: ModelRequest) -> ScriptedResponse:
        usage = usage_of(box[0].input_token_bound(request), request.settings.max_tokens)
        step = ScriptedToolCall(name="noop") if tool_loop else ScriptedText(text=text)
        return ScriptedResponse(steps=[step], usage=usage)

    provider = ScriptedProvider(respond, pricing=pricing)
    box.append(provider)
    tools = SimpleTools()
    tools.add(lambda: "ok", name="noop")
    with (
        tempfile.TemporaryDirectory() as tmp,
        Engine(Path(tmp) / "db", providers={"scripted": provider}, tools=tools) as engine,
    ):
        agent = engine.agents.create(name="a", model={"id": "scripted", "max_tokens": max_tokens})
        yield engine.sessions.create(agent=agent.id, budget=budget, max_turns=max_turns)
