"""Small formatting helpers shared by the transcript and the magics (kept free of heavy imports)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .usage import Usage

__all__ = ["format_cost", "format_usd"]


def format_usd(amount: Decimal) -> str:
    """``$0``, ``$0.000123`` for fractions of a cent, ``$1.25`` above."""
    if amount == 0:
        return "$0"
    if amount < Decimal("0.01"):
        return f"${amount:.6f}".rstrip("0")
    return f"${amount:.4f}".rstrip("0").rstrip(".")


def format_cost(usage: Usage) -> str:
    """A usage's list cost for people: ``cost unknown`` when a request's model has no known list price
    (never ``$0`` for it), with the known part when there is one; ``$0`` when nothing was charged."""
    amount, unpriced = usage.list_cost, usage.unpriced_requests
    if unpriced:
        known = f" beyond {format_usd(amount)}" if amount else ""
        return f"cost unknown{known} ({unpriced} request{'s' if unpriced != 1 else ''} with no list price)"
    return format_usd(amount or Decimal(0))
