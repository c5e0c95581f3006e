"""Small formatting helpers shared by the transcript and the magics (kept free of heavy imports)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .usage import Usage

__all__ = ["format_cache_saving", "format_cost", "format_usd"]


def format_usd(amount: Decimal) -> str:
    """``$0``, ``$0.000123`` for fractions of a cent, ``$1.25`` above; ``-$0.0098`` below zero. What rounds
    to nothing at six places is ``$0`` (the widget's ``formatUsd`` rounds the same way)."""
    places = 6 if abs(amount) < Decimal("0.01") else 4
    text = f"{abs(amount):.{places}f}".rstrip("0").rstrip(".")
    if text == "0":
        return "$0"
    return f"{'-' if amount < 0 else ''}${text}"


def format_cost(usage: Usage) -> str:
    """A usage's list cost for people: ``cost unknown`` when a request's model has no known list price
    (never ``$0`` for it), with the known part when there is one; ``$0`` when nothing was charged."""
    amount, unpriced = usage.list_cost, usage.unpriced_requests
    if unpriced:
        known = f" beyond {format_usd(amount)}" if amount else ""
        return f"cost unknown{known} ({unpriced} request{'s' if unpriced != 1 else ''} with no list price)"
    return format_usd(amount or Decimal(0))


def format_cache_saving(usage: Usage) -> str | None:
    """What the prompt cache did to a usage's cost, for people: ``uncached $0.53, saved $0.41 by cache``;
    while writes have not yet been read back, ``uncached $0.10, $0.02 more for cache writes``. None when the
    cache changed nothing (no cache tokens, or no list price to compare)."""
    saved = usage.saved_by_cache
    if saved is None or usage.uncached_cost is None or usage.unpriced_requests or saved == 0:
        return None
    uncached = f"uncached {format_usd(usage.uncached_cost)}"
    if saved > 0:
        return f"{uncached}, saved {format_usd(saved)} by cache"
    return f"{uncached}, {format_usd(-saved)} more for cache writes"
