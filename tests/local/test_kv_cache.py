"""The embedded model keeps its KV cache across the requests of a conversation: the next turn evaluates only
the tokens it adds, and usage counts the rest as cache reads (on the real SmolLM2-135M weights)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentcell.providers.base import Message, ModelRequest, ModelResponse, ModelSettings, TextPart
from agentcell.providers.local import LocalProvider

from .conftest import SEED, collect

SYSTEM = "You are a helpful assistant who answers in one short sentence. " * 6


@pytest.fixture
async def model() -> AsyncIterator[LocalProvider]:
    local = LocalProvider("smollm2", n_ctx=2048)
    yield local
    await local.aclose()


class Conversation:
    def __init__(self, provider: LocalProvider, topic: str, max_tokens: int = 12, **extra: object) -> None:
        self.provider, self.topic, self.extra, self.max_tokens = provider, topic, extra, max_tokens
        self.messages: list[Message] = []

    async def turn(self, n: int) -> ModelResponse:
        self.messages.append(Message(role="user", content=[TextPart(text=f"Question {n} about {self.topic}?")]))
        settings = ModelSettings(max_tokens=self.max_tokens, temperature=0, extra={"seed": SEED, **self.extra})
        request = ModelRequest(model="smollm2", system=SYSTEM, messages=self.messages, settings=settings)
        _, response = await collect(self.provider, request)
        self.messages.append(Message(role="assistant", content=[TextPart(text=response.text)]))
        return response


async def test_the_next_turn_evaluates_only_its_new_tokens(model: LocalProvider) -> None:
    chat = Conversation(model, "the sea")
    first = await chat.turn(1)
    second = await chat.turn(2)
    assert first.usage.cache_read_input_tokens == 0
    # The second prompt starts with the whole first one (and most of the reply): those tokens are reused.
    assert second.usage.cache_read_input_tokens >= first.usage.total_input_tokens
    assert second.usage.input_tokens < 40
    assert second.usage.total_input_tokens > first.usage.total_input_tokens + second.usage.input_tokens // 2


async def test_conversations_taking_turns_each_resume_their_own_cache(model: LocalProvider) -> None:
    # Long enough that its cache is worth saving when the other takes a turn.
    sea = Conversation(model, "the sea, its tides, its storms and the old ships that cross it", max_tokens=48)
    cats = Conversation(model, "cats", max_tokens=48)
    first = await sea.turn(1)
    await cats.turn(1)  # overwrites the live cache with another conversation
    again = await sea.turn(2)
    # Its own first turn is reused, not only the system prompt the two conversations share.
    assert again.usage.cache_read_input_tokens >= first.usage.total_input_tokens
    assert again.usage.input_tokens < 40


async def test_cache_off_evaluates_every_prompt_from_the_start(model: LocalProvider) -> None:
    chat = Conversation(model, "the sea", cache="off")
    await chat.turn(1)
    second = await chat.turn(2)
    assert second.usage.cache_read_input_tokens == 0
    assert second.usage.input_tokens == second.usage.total_input_tokens > 60
