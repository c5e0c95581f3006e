"""Token usage, list cost and budgets.

Money is :class:`~decimal.Decimal` in US dollars, tokens are ints. ``input_tokens`` follows the Anthropic
convention: it excludes tokens read from or written to the prompt cache, which are counted apart.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

__all__ = [
    "FREE",
    "Budget",
    "CacheCreation",
    "InputBilling",
    "Money",
    "Pricing",
    "ServerToolUse",
    "Usage",
    "flat_pricing",
    "price_usage",
    "uncached_usage",
    "worst_case_cost",
]

# Decimals travel as strings so no float ever touches money.
Money = Annotated[Decimal, PlainSerializer(str, return_type=str, when_used="json")]
Count = Annotated[int, Field(ge=0)]
_ZERO = Decimal(0)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CacheCreation(_Frozen):
    """Tokens written to the prompt cache, by time to live."""

    ephemeral_5m_input_tokens: Count = 0
    ephemeral_1h_input_tokens: Count = 0

    def __add__(self, other: CacheCreation) -> CacheCreation:
        return CacheCreation(
            ephemeral_5m_input_tokens=self.ephemeral_5m_input_tokens + other.ephemeral_5m_input_tokens,
            ephemeral_1h_input_tokens=self.ephemeral_1h_input_tokens + other.ephemeral_1h_input_tokens,
        )

    def __sub__(self, other: CacheCreation) -> CacheCreation:
        return CacheCreation(
            ephemeral_5m_input_tokens=_less(self.ephemeral_5m_input_tokens, other.ephemeral_5m_input_tokens),
            ephemeral_1h_input_tokens=_less(self.ephemeral_1h_input_tokens, other.ephemeral_1h_input_tokens),
        )


class ServerToolUse(_Frozen):
    """Tools the provider ran on its side."""

    web_search_requests: Count = 0
    web_fetch_requests: Count = 0

    def __add__(self, other: ServerToolUse) -> ServerToolUse:
        return ServerToolUse(
            web_search_requests=self.web_search_requests + other.web_search_requests,
            web_fetch_requests=self.web_fetch_requests + other.web_fetch_requests,
        )

    def __sub__(self, other: ServerToolUse) -> ServerToolUse:
        return ServerToolUse(
            web_search_requests=_less(self.web_search_requests, other.web_search_requests),
            web_fetch_requests=_less(self.web_fetch_requests, other.web_fetch_requests),
        )


def _omit_none(value: object) -> bool:
    return value is None


def _omit_zero(value: object) -> bool:
    return value == 0


class Usage(_Frozen):
    """Usage of one model request, or the sum over many (``a + b``)."""

    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_input_tokens: Count = 0
    cache_creation: CacheCreation = CacheCreation()
    server_tool_use: Annotated[ServerToolUse | None, Field(exclude_if=_omit_none)] = None
    """Server-executed tool use; absent until the provider reported some tracking of it (seed 002)."""
    list_cost: Annotated[Money | None, Field(exclude_if=_omit_none)] = None
    """List cost in USD at public list prices, whatever discount the account has. Absent until a request
    with a known list price was counted (a model with no known price has no cost, not a cost of $0)."""
    unpriced_requests: Annotated[Count, Field(exclude_if=_omit_zero)] = 0
    """Requests counted here whose model has no known list price: the cost is then incomplete, "unknown"."""
    uncached_cost: Annotated[Money | None, Field(exclude_if=_omit_none)] = None
    """What the same tokens would have cost at list price without the prompt cache (cache reads and writes
    priced as plain input): present whenever ``list_cost`` is, so ``uncached_cost - list_cost`` is what the
    cache saved (negative while writes have not yet been read back)."""

    @property
    def spent(self) -> Decimal:
        """The list cost known so far (0 when none is tracked), for arithmetic."""
        return self.list_cost if self.list_cost is not None else _ZERO

    @property
    def saved_by_cache(self) -> Decimal | None:
        """``uncached_cost - list_cost``: what the prompt cache saved (None when no cost is tracked)."""
        if self.list_cost is None or self.uncached_cost is None:
            return None
        return self.uncached_cost - self.list_cost

    @property
    def cost_known(self) -> bool:
        """Whether ``list_cost`` is the whole cost: every request counted had a list price."""
        return self.unpriced_requests == 0

    @property
    def cache_creation_input_tokens(self) -> int:
        return self.cache_creation.ephemeral_5m_input_tokens + self.cache_creation.ephemeral_1h_input_tokens

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation=self.cache_creation + other.cache_creation,
            server_tool_use=_add_optional(self.server_tool_use, other.server_tool_use),
            list_cost=_add_optional(self.list_cost, other.list_cost),
            unpriced_requests=self.unpriced_requests + other.unpriced_requests,
            uncached_cost=_add_optional(self._uncached_or_list, other._uncached_or_list)
            if self.uncached_cost is not None or other.uncached_cost is not None
            else None,
        )

    def __sub__(self, other: Usage) -> Usage:
        """This sum with ``other``, a part of it, taken out (what leaves the ledger when replayed turns leave
        the conversation)."""
        return Usage(
            input_tokens=_less(self.input_tokens, other.input_tokens),
            output_tokens=_less(self.output_tokens, other.output_tokens),
            cache_read_input_tokens=_less(self.cache_read_input_tokens, other.cache_read_input_tokens),
            cache_creation=self.cache_creation - other.cache_creation,
            server_tool_use=self.server_tool_use - other.server_tool_use
            if self.server_tool_use is not None and other.server_tool_use is not None
            else self.server_tool_use,
            list_cost=_less_optional(self.list_cost, other.list_cost),
            unpriced_requests=_less(self.unpriced_requests, other.unpriced_requests),
            uncached_cost=_less_optional(self.uncached_cost, other._uncached_or_list),
        )

    @property
    def _uncached_or_list(self) -> Decimal | None:
        # Usage priced before uncached_cost existed (an older log) had no cache discount to report: its
        # uncached cost is its list cost, so a sum across old and new requests never shows a false saving.
        return self.uncached_cost if self.uncached_cost is not None else self.list_cost


def _add_optional(a: Any, b: Any) -> Any:
    """Sum two figures either of which may be untracked (None): the tracked one, or their sum."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _less(a: int, b: int) -> int:
    return max(0, a - b)


def _less_optional(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    """``a`` with ``b`` (a part of it, either maybe untracked) taken out, never below zero."""
    if a is None or b is None:
        return a
    return max(_ZERO, a - b)


Pricing = Callable[[Usage], Decimal]
"""Maps the tokens of a usage to its list cost in USD (the ``list_cost`` field of the input is ignored)."""

_PER_MTOK = Decimal(1_000_000)


def flat_pricing(
    input_mtok: Decimal | str | int,
    output_mtok: Decimal | str | int,
    *,
    cache_read_mtok: Decimal | str | int | None = None,
    cache_write_5m_mtok: Decimal | str | int | None = None,
    cache_write_1h_mtok: Decimal | str | int | None = None,
    web_search_k: Decimal | str | int = 0,
) -> Pricing:
    """Prices per million tokens, without tiers.

    Cache prices default to Anthropic's ratios of the input price (read 0.1x, 5-minute write 1.25x, 1-hour
    write 2x)."""
    p_in = Decimal(input_mtok)
    p_out = Decimal(output_mtok)
    p_read = Decimal(cache_read_mtok) if cache_read_mtok is not None else p_in / 10
    p_5m = Decimal(cache_write_5m_mtok) if cache_write_5m_mtok is not None else p_in * Decimal("1.25")
    p_1h = Decimal(cache_write_1h_mtok) if cache_write_1h_mtok is not None else p_in * 2
    p_search = Decimal(web_search_k) / 1000

    def price(usage: Usage) -> Decimal:
        tokens = (
            usage.input_tokens * p_in
            + usage.output_tokens * p_out
            + usage.cache_read_input_tokens * p_read
            + usage.cache_creation.ephemeral_5m_input_tokens * p_5m
            + usage.cache_creation.ephemeral_1h_input_tokens * p_1h
        )
        searches = usage.server_tool_use.web_search_requests if usage.server_tool_use else 0
        return tokens / _PER_MTOK + searches * p_search

    return price


FREE: Pricing = flat_pricing(0, 0)


def uncached_usage(usage: Usage) -> Usage:
    """The same tokens with the prompt cache left out: every cache read and write as plain input."""
    return Usage(
        input_tokens=usage.total_input_tokens,
        output_tokens=usage.output_tokens,
        server_tool_use=usage.server_tool_use,
    )


def price_usage(pricing: Pricing, usage: Usage, *, ceiling: Decimal | None = None) -> Usage:
    """``usage`` with its ``list_cost`` and ``uncached_cost``. A cost past ``ceiling`` (the request's worst
    case) is counted at the ceiling, and then claims no saving."""
    cost = pricing(usage)
    if ceiling is not None and cost > ceiling:
        return usage.model_copy(update={"list_cost": ceiling, "uncached_cost": ceiling})
    cached = usage.cache_read_input_tokens or usage.cache_creation_input_tokens
    uncached = pricing(uncached_usage(usage)) if cached else cost
    return usage.model_copy(update={"list_cost": cost, "uncached_cost": uncached})


InputBilling = Literal["plain", "5m", "any"]
"""How a request's input may be billed: never as cache writes, perhaps as 5-minute writes, or any way."""


def worst_case_cost(
    pricing: Pricing, input_tokens: int, max_output_tokens: int, billing: InputBilling = "any"
) -> Decimal:
    """The most a request can cost when its input is at most ``input_tokens`` and its output at most
    ``max_output_tokens``: every input token is priced at the dearest way ``billing`` allows (plain, or
    as a 5-minute or 1-hour cache write; a cache read is always cheaper than plain input)."""
    shapes = [Usage(input_tokens=input_tokens, output_tokens=max_output_tokens)]
    if billing != "plain":
        written = CacheCreation(ephemeral_5m_input_tokens=input_tokens)
        shapes.append(Usage(output_tokens=max_output_tokens, cache_creation=written))
    if billing == "any":
        written = CacheCreation(ephemeral_1h_input_tokens=input_tokens)
        shapes.append(Usage(output_tokens=max_output_tokens, cache_creation=written))
    return max(pricing(shape) for shape in shapes)


class Budget(_Frozen):
    """The most a session may spend, as list cost in USD. It fires at or before the real charge."""

    type: Literal["limit"] = "limit"
    max_list_cost: Money = Field(gt=0)
    currency: Literal["USD"] = "USD"

    def remaining(self, spent: Decimal | None) -> Decimal:
        return max(_ZERO, self.max_list_cost - (spent or _ZERO))
