"""The parts of the widget's code the kernel sends a page once, when its loader asks (``widgets/js/src/code_parts.ts``).

A turn's widget carries only ``loader.js``; the fold and views (``turn``) and KaTeX with its fonts (``math``)
cross the wire at most once per page, and not at all where the lab extension provides them.
"""

from __future__ import annotations

from functools import cache

from ._paths import STATIC

__all__ = ["CODE_PARTS", "code_part"]

CODE_PARTS = ("turn", "math")


@cache
def code_part(name: str) -> bytes | None:
    """The part's ES module (which injects its own styles), or None for a name that is not a part."""
    return (STATIC / f"{name}.js").read_bytes() if name in CODE_PARTS else None
