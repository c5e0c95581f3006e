"""The local model's tool calls finish inside their token budget: bounded strings in the grammar, a
closing path near the end of the budget, and a guard against loops."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass

import jsonschema
import numpy as np
import pytest

from agentcell.errors import IncompleteToolCallError
from agentcell.providers._local_decode import ReplyDecoder
from agentcell.providers._local_grammar import (
    CLOSING_RESERVE,
    ClosingGuard,
    bounded,
    reply_grammar,
    string_share,
)
from agentcell.providers.base import ToolSchema
from agentcell.providers.local import LocalProvider

from .conftest import WEATHER_TOOL, collect, request

ESSAY_TOOL = ToolSchema(
    name="write_essay",
    description="Write an essay and save it.",
    input_schema={
        "type": "object",
        "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
        "required": ["title", "text"],
        "additionalProperties": False,
    },
)
RAMBLE = "Write a very long essay about the whole history of Rome, in great detail, at least ten thousand words."


# ------------------------------------------------------------------------------------------ the real model


@pytest.mark.slow
@pytest.mark.parametrize("max_tokens", [40, 96])
async def test_a_forced_call_on_a_rambling_prompt_ends_inside_the_budget_with_valid_json(
    provider: LocalProvider, max_tokens: int
) -> None:
    req = request(RAMBLE, max_tokens=max_tokens, tools=[ESSAY_TOOL], tool_choice="write_essay")
    _, response = await collect(provider, req)
    assert response.stop_reason == "tool_use"
    assert response.usage.output_tokens <= max_tokens
    (call,) = response.tool_calls
    jsonschema.validate(call.input, ESSAY_TOOL.input_schema)
    assert call.input["text"]  # the model wrote something before the budget closed it


@pytest.mark.slow
async def test_a_call_with_nested_arguments_fits_a_small_budget(provider: LocalProvider) -> None:
    prompt = "Will it rain in Lyon over the next three days? Describe the whole region in great detail."
    _, response = await collect(provider, request(prompt, max_tokens=60, tools=[WEATHER_TOOL], tool_choice="any"))
    assert response.stop_reason == "tool_use" and response.usage.output_tokens <= 60
    jsonschema.validate(response.tool_calls[0].input, WEATHER_TOOL.input_schema)


@pytest.mark.slow
async def test_an_answer_closed_by_the_budget_says_max_tokens(provider: LocalProvider) -> None:
    # Tools named but not forced: the model may answer in text; a long answer is closed by the budget.
    req = request(f"{RAMBLE} Do not use write_essay, answer here.", max_tokens=24, tools=[ESSAY_TOOL])
    _, response = await collect(provider, req)
    assert response.usage.output_tokens <= 24
    if response.tool_calls:
        jsonschema.validate(response.tool_calls[0].input, ESSAY_TOOL.input_schema)
    else:
        assert response.stop_reason == "max_tokens" and response.text


# ------------------------------------------------------------------------------------------ the bounds


def test_free_strings_get_a_bound_and_constrained_ones_keep_their_shape() -> None:
    schema = bounded(WEATHER_TOOL.input_schema, 40)
    props = schema["properties"]
    assert props["city"]["maxLength"] == 40
    assert "maxLength" not in props["unit"]  # an enum is already bounded
    assert props["place"]["properties"]["country"]["maxLength"] == 40
    assert props["fields"]["maxItems"] == 3  # its own, smaller bound stays
    assert bounded({"type": "string", "maxLength": 5}, 40)["maxLength"] == 5
    assert bounded({"type": "array", "items": {"type": "string"}}, 40)["maxItems"] == 8
    assert WEATHER_TOOL.input_schema["properties"]["city"] == {"type": "string"}  # the tool's own is untouched


def test_the_string_share_leaves_room_for_the_call_and_shrinks_with_more_strings() -> None:
    one = string_share("python", {"properties": {"code": {"type": "string"}}}, 256)
    two = string_share("write_essay", ESSAY_TOOL.input_schema, 256)
    assert 150 < one < 256 - CLOSING_RESERVE
    assert two < one / 1.8
    assert string_share("python", {"properties": {"code": {"type": "string"}}}, 10) == 16  # a floor


def test_the_grammar_takes_no_raw_control_characters_or_unicode_escapes() -> None:
    grammar = reply_grammar(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}))
    char_rule = next(line for line in grammar._grammar.splitlines() if line.startswith("char ::="))
    assert "\\x00-\\x1F" in char_rule and '"u"' not in char_rule


# ------------------------------------------------------------------------------------------ the guard


@dataclass
class _Letters:
    """Stands in for llama.cpp's detokenizer: token i is the i-th character of ``alphabet``."""

    alphabet: str

    def detokenize(self, tokens: list[int]) -> bytes:
        return "".join(self.alphabet[int(t)] for t in tokens).encode()


def _step(guard: ClosingGuard, ids: list[int], vocab: int) -> np.ndarray:
    return guard(np.array(ids, dtype=np.intc), np.zeros(vocab, dtype=np.single))


def test_the_guard_pushes_the_closers_only_in_the_last_tokens_of_the_budget() -> None:
    letters = _Letters('ab"}')
    guard = ClosingGuard(letters, prompt_tokens=2, max_tokens=12, closers=[2, 3])  # type: ignore[arg-type]
    early = _step(guard, [0, 1, 0, 1], 4)  # 2 generated, 10 left
    assert not early.any() and not guard.closing
    late = _step(guard, [0, 1] + [0, 1] * 2, 4)  # 4 generated, 8 left: the reserve
    assert late[2] > 0 and late[3] > 0 and late[0] == 0 and guard.cut_by_budget


def test_the_guard_closes_a_loop_before_the_budget() -> None:
    letters = _Letters('xyz"')
    guard = ClosingGuard(letters, prompt_tokens=1, max_tokens=500, closers=[3])  # type: ignore[arg-type]
    varied = [0, 1, 2, 1, 0, 2, 2, 0, 1]
    assert not _step(guard, [0, *varied], 4).any()
    looping = [0, *varied] + [0, 1, 2] * 12
    assert _step(guard, looping, 4)[3] > 0
    assert guard.closing and not guard.cut_by_budget


# ------------------------------------------------------------------------------------------ what is left


def test_a_call_that_still_cannot_complete_is_a_typed_error_showing_what_the_model_wrote() -> None:
    decoder = ReplyDecoder(forced=True)
    decoder.feed('{"name": "python", "arguments": {"code": "print(1)')
    with pytest.raises(IncompleteToolCallError) as caught:
        decoder.tool_call({"python"}, 256)
    error = caught.value
    assert error.produced == '{"name": "python", "arguments": {"code": "print(1)'
    assert "print(1)" in str(error) and "max_tokens=256" in str(error)
    assert pickle.loads(pickle.dumps(error)).produced == error.produced


def test_a_long_incomplete_call_shows_its_start_and_end() -> None:
    decoder = ReplyDecoder(forced=True)
    decoder.feed('{"name": "python", "arguments": {"code": "' + "x = 1; " * 400 + "END")
    with pytest.raises(IncompleteToolCallError) as caught:
        decoder.tool_call({"python"}, 64)
    message = str(caught.value)
    assert '{"name": "python"' in message and "END" in message and len(message) < 700
