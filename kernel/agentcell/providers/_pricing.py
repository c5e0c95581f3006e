"""List prices from the ``genai-prices`` data.

A model genai-prices does not know has **no** list price (seed 002: its cost is absent, "cost unknown",
never "$0"), and a budget is refused on it, since the cap could not fire at or before the charge. Give
prices with the model's ``prices`` (``{"id": ..., "prices": {"input_mtok": "3", "output_mtok": "15"}}``)
or ``pricing=`` on the provider.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from functools import lru_cache

import genai_prices

from ..usage import Pricing, Usage

__all__ = ["genai_context_window", "genai_pricing", "to_genai_usage"]

log = logging.getLogger("agentcell.providers")


def to_genai_usage(usage: Usage) -> genai_prices.Usage:
    """genai-prices counts ``input_tokens`` as ALL input, cache reads and writes included; ours excludes
    them (the Anthropic convention), so the total goes in and the cache counts ride along."""
    writes = usage.cache_creation_input_tokens
    values: dict[str, int] = {
        "input_tokens": usage.total_input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_input_tokens,
    }
    if writes:
        # genai-prices requires the total whenever the TTL split is given.
        values["cache_write_tokens"] = writes
        values["cache_write_5m_tokens"] = usage.cache_creation.ephemeral_5m_input_tokens
        values["cache_write_1h_tokens"] = usage.cache_creation.ephemeral_1h_input_tokens
    if usage.server_tool_use is not None and usage.server_tool_use.web_search_requests:
        values["web_searches"] = usage.server_tool_use.web_search_requests
    return genai_prices.Usage(**values)


@lru_cache(maxsize=256)
def _locate(model: str, provider_id: str, api_url: str | None) -> tuple[str, str] | None:
    """Which genai-prices lookup knows ``model``: by the server's URL first (another vendor behind an
    OpenAI-compatible API), then by provider id. ``None`` when neither does."""
    probe = genai_prices.Usage(input_tokens=1)
    if api_url:
        try:
            genai_prices.calc_price(probe, model, provider_api_url=api_url)
        except LookupError:
            pass
        else:
            return "provider_api_url", api_url
    try:
        genai_prices.calc_price(probe, model, provider_id=provider_id)
    except LookupError:
        return None
    return "provider_id", provider_id


def genai_pricing(
    provider_id: str, model: str, *, api_url: str | None = None, unknown: Pricing | None = None
) -> Pricing | None:
    """The list-price function for ``model`` as sold by ``provider_id`` (``anthropic``, ``openai``), or by
    whoever serves ``api_url`` when genai-prices knows that host. A model it does not know costs
    ``unknown`` when given (a self-hosted model is free), else it has no list price (None)."""
    where = _locate(model, provider_id, api_url)
    if where is None:
        if unknown is None:
            log.info("genai-prices has no list price for %s model %r: its cost is unknown", provider_id, model)
        return unknown
    key, value = where

    def price(usage: Usage) -> Decimal:
        result = genai_prices.calc_price(to_genai_usage(usage), model, **{key: value})  # type: ignore[call-overload]
        return Decimal(result.total_price)

    return price


def genai_context_window(provider_id: str, model: str, *, api_url: str | None = None) -> int | None:
    """The context window genai-prices gives for ``model`` (in tokens); None when it does not know."""
    where = _locate(model, provider_id, api_url)
    if where is None:
        return None
    key, value = where
    result = genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model, **{key: value})  # type: ignore[call-overload]
    window = result.model.context_window
    return int(window) if window else None
