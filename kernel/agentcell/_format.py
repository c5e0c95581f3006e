"""Small formatting helpers shared by the transcript and the magics (kept free of heavy imports)."""

from __future__ import annotations

from decimal import Decimal

__all__ = ["format_usd"]


def format_usd(amount: Decimal) -> str:
    """``$0``, ``$0.000123`` for fractions of a cent, ``$1.25`` above."""
    if amount == 0:
        return "$0"
    if amount < Decimal("0.01"):
        return f"${amount:.6f}".rstrip("0")
    return f"${amount:.4f}".rstrip("0").rstrip(".")
