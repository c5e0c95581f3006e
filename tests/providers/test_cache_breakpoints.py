"""Where the Anthropic provider puts prompt-cache breakpoints, by default, and what that lets it bill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcell.events import TextBlock
from agentcell.providers._anthropic_cache import CHARS_PER_TOKEN_ESTIMATE, minimum_cacheable_tokens
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.anthropic import build_body as anthropic_body
from agentcell.providers.base import (
    Message,
    ModelRequest,
    ModelSettings,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)

FIVE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}
LONG_SYSTEM = "You are a careful analyst. " * 150  # ~4,000 characters: cacheable at Sonnet's 1,024 tokens
TOOLS = [
    ToolSchema(name="python", description="Run Python code in the notebook.", input_schema={"type": "object"}),
    ToolSchema(name="read_file", description="Read a file.", input_schema={"type": "object"}),
]


def conversation(
    *, system: str | None = LONG_SYSTEM, model: str = "claude-sonnet-4-5", **settings: Any
) -> ModelRequest:
    """Two user turns and a tool call: the previous request ended at the first tool result."""
    return ModelRequest(
        model=model,
        system=system,
        tools=TOOLS,
        messages=[
            Message(role="user", content=[TextPart(text="Load the data and plot it.")]),
            Message(role="assistant", content=[ToolCallPart(id="toolu_1", name="python", input={"code": "1"})]),
            Message(role="user", content=[ToolResultPart(call_id="toolu_1", content=[TextBlock(text="1")])]),
            Message(role="assistant", content=[ToolCallPart(id="toolu_2", name="python", input={"code": "2"})]),
            Message(role="user", content=[ToolResultPart(call_id="toolu_2", content=[TextBlock(text="2")])]),
        ],
        settings=ModelSettings(**settings),
    )


def marked(body: dict[str, Any]) -> list[tuple[str, int | None, dict[str, str]]]:
    """Every breakpoint as (where, message index, control)."""
    found: list[tuple[str, int | None, dict[str, str]]] = []
    found += [("tools", None, t["cache_control"]) for t in body.get("tools", []) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [("system", None, b["cache_control"]) for b in system if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        found += [("messages", i, b["cache_control"]) for b in message["content"] if "cache_control" in b]
    return found


def test_caching_is_on_by_default_on_the_stable_prefix_and_the_previous_and_latest_turns() -> None:
    request = conversation()
    body, _ = anthropic_body(request)
    # tools + system (one breakpoint at the end of the system prompt), where the previous request put its
    # rolling breakpoint (the first tool result), and the latest turn.
    assert marked(body) == [("system", None, FIVE), ("messages", 2, FIVE), ("messages", 4, FIVE)]
    assert body["system"] == [{"type": "text", "text": LONG_SYSTEM, "cache_control": FIVE}]
    assert body["messages"][4]["content"][-1]["type"] == "tool_result"
    assert "cache" not in body
    assert AnthropicProvider(api_key="k").input_billing(request) == "5m"


def test_without_a_system_prompt_the_stable_breakpoint_ends_the_tools() -> None:
    request = conversation(system=None).model_copy(
        update={"tools": [*TOOLS, ToolSchema(name="doc", description="x" * 4000)]}
    )
    body, _ = anthropic_body(request)
    assert marked(body)[0] == ("tools", None, FIVE)
    assert "cache_control" in body["tools"][-1] and "cache_control" not in body["tools"][0]
    assert "system" not in body


def test_one_hour_entries_mark_every_breakpoint_and_may_bill_the_dearest_write() -> None:
    request = conversation(extra={"cache": "1h"})
    body, _ = anthropic_body(request)
    assert [control for *_, control in marked(body)] == [HOUR, HOUR, HOUR]
    assert AnthropicProvider(api_key="k").input_billing(request) == "any"


@pytest.mark.parametrize("off", ["off", False, None])
def test_off_sends_no_breakpoint_and_bills_plain_input(off: object) -> None:
    request = conversation(extra={"cache": off})
    body, _ = anthropic_body(request)
    assert marked(body) == []
    assert body["system"] == LONG_SYSTEM  # a plain string, as before caching
    assert AnthropicProvider(api_key="k").input_billing(request) == "plain"


def test_a_request_too_short_to_cache_carries_no_breakpoint_and_no_write_premium() -> None:
    request = conversation(system="Be brief.")
    body, _ = anthropic_body(request)
    assert marked(body) == []
    assert body["system"] == "Be brief."
    assert AnthropicProvider(api_key="k").input_billing(request) == "plain"


def test_only_the_breakpoints_whose_prefix_is_long_enough_are_placed() -> None:
    # A short system prompt, but the conversation grew long: the turns are cached, the prefix alone not.
    request = conversation(system="Be brief.")
    long_result = ToolResultPart(call_id="toolu_1", content=[TextBlock(text="row\n" * 1000)])
    messages = list(request.messages)
    messages[2] = Message(role="user", content=[long_result])
    body, _ = anthropic_body(request.model_copy(update={"messages": messages}))
    assert [(where, i) for where, i, _ in marked(body)] == [("messages", 2), ("messages", 4)]


def test_the_minimum_depends_on_the_model() -> None:
    assert minimum_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024
    assert minimum_cacheable_tokens("claude-haiku-4-5") == 4096
    assert minimum_cacheable_tokens("claude-3-5-haiku-latest") == 2048
    # ~1,400 estimated tokens: enough for Sonnet, too short for Haiku 4.5.
    system = "x" * (1400 * CHARS_PER_TOKEN_ESTIMATE)
    assert marked(anthropic_body(conversation(system=system))[0])
    assert marked(anthropic_body(conversation(system=system, model="claude-haiku-4-5"))[0]) == []


def test_thinking_and_empty_text_never_carry_a_breakpoint() -> None:
    # After pause_turn the latest message is the model's own, which may end in thinking.
    request = conversation().model_copy(
        update={
            "messages": [
                Message(role="user", content=[TextPart(text="Search the web."), TextPart(text="")]),
                Message(
                    role="assistant",
                    content=[TextPart(text="Looking."), ThinkingPart(thinking="hmm", signature="sig")],
                ),
            ]
        }
    )
    body, _ = anthropic_body(request)
    user, assistant = body["messages"]
    assert user["content"][0]["cache_control"] == FIVE and "cache_control" not in user["content"][1]
    assert assistant["content"][0]["cache_control"] == FIVE
    assert "cache_control" not in assistant["content"][1]


def test_a_bad_cache_option_says_what_is_allowed() -> None:
    from agentcell.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="'5m', '1h' or 'off'"):
        anthropic_body(conversation(extra={"cache": "forever"}))


def test_a_bad_cache_option_on_an_agents_model_is_refused_when_the_agent_is_made(tmp_path: Path) -> None:
    from agentcell import Engine
    from agentcell.errors import InvalidInputError

    with Engine(tmp_path / "db.sqlite") as engine:
        with pytest.raises(InvalidInputError, match="'5m', '1h' or 'off', not 'forever'"):
            engine.agents.create(name="a", model={"id": "claude-sonnet-4-5", "extra": {"cache": "forever"}})
        made = engine.agents.create(name="b", model={"id": "claude-sonnet-4-5", "extra": {"cache": "1h"}})
        assert made.model.extra == {"cache": "1h"}


_PART = st.one_of(
    st.builds(TextPart, text=st.sampled_from(["", "short", "y" * 2000])),
    st.builds(ThinkingPart, thinking=st.just("t"), signature=st.just("s")),
    st.builds(ToolResultPart, call_id=st.just("toolu_x"), content=st.just([TextBlock(text="r" * 500)])),
)


@settings(deadline=None)  # a shared, loaded CI machine: the examples are checked, not timed
@given(
    turns=st.lists(st.lists(_PART, min_size=1, max_size=4), min_size=1, max_size=12),
    system=st.sampled_from([None, "", "Be brief.", LONG_SYSTEM]),
    ttl=st.sampled_from([None, "5m", "1h"]),
)
def test_never_more_than_the_apis_four_breakpoints_and_never_on_thinking(
    turns: list[list[Part]], system: str | None, ttl: str | None
) -> None:
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=parts) for i, parts in enumerate(turns)]
    extra = {} if ttl is None else {"cache": ttl}
    settings = ModelSettings(extra=extra)
    request = ModelRequest(model="claude-sonnet-4-5", system=system, tools=TOOLS, messages=messages, settings=settings)
    body, _ = anthropic_body(request)
    marks = marked(body)
    assert len(marks) <= 4
    for message in body["messages"]:
        for block in message["content"]:
            if block["type"] == "thinking" or (block["type"] == "text" and not block["text"]):
                assert "cache_control" not in block
    billing = AnthropicProvider(api_key="k").input_billing(request)
    assert billing == ("plain" if not marks else ("any" if ttl == "1h" else "5m"))
