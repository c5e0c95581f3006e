"""List prices from the ``genai-prices`` data, with a conservative fallback for models it does not know.

Unknown models are priced at :data:`FALLBACK_MTOK` for their provider: the list price of the dearest model
that provider has in genai-prices (a test checks the figures stay at or above every model there). A
budget therefore still fires at or before the real charge; the reported cost is an upper bound, and a
warning is logged once per model. Pass ``pricing=`` to a provider to override.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from functools import lru_cache

import genai_prices

from ..usage import FREE, Pricing, Usage, flat_pricing

__all__ = ["FALLBACK_MTOK", "fallback_pricing", "genai_pricing", "to_genai_usage"]

log = logging.getLogger("agentcell.providers")

FALLBACK_MTOK: dict[str, tuple[str, str]] = {
    # provider id: (input, output) USD per million tokens
    "anthropic": ("15", "75"),  # Claude Opus 4.0/4.1 and Claude 3 Opus
    "openai": ("150", "600"),  # o1-pro
}


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
    if usage.server_tool_use.web_search_requests:
        values["web_searches"] = usage.server_tool_use.web_search_requests
    return genai_prices.Usage(**values)


def fallback_pricing(provider_id: str) -> Pricing:
    prices = FALLBACK_MTOK.get(provider_id)
    if prices is None:
        return FREE
    return flat_pricing(*prices, web_search_k=10)


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


@lru_cache(maxsize=256)
def _warn_unknown(provider_id: str, model: str) -> None:
    log.warning(
        "genai-prices has no list price for %s model %r; costing it as the dearest %s model (pass pricing= "
        "to the provider to set one)",
        provider_id,
        model,
        provider_id,
    )


def genai_pricing(
    provider_id: str, model: str, *, api_url: str | None = None, unknown: Pricing | None = None
) -> Pricing:
    """The list-price function for ``model`` as sold by ``provider_id`` (``anthropic``, ``openai``), or by
    whoever serves ``api_url`` when genai-prices knows that host. A model it does not know costs
    ``unknown`` when given, else the provider's fallback (with a warning)."""
    where = _locate(model, provider_id, api_url)
    if where is None:
        if unknown is not None:
            return unknown
        _warn_unknown(provider_id, model)
        return fallback_pricing(provider_id)
    key, value = where

    def price(usage: Usage) -> Decimal:
        result = genai_prices.calc_price(to_genai_usage(usage), model, **{key: value})  # type: ignore[call-overload]
        return Decimal(result.total_price)

    return price
