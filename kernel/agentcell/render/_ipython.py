"""IPython's ``display``, typed, imported when first called (IPython ships no annotations for it)."""

from __future__ import annotations

from typing import Any

__all__ = ["display"]


def display(obj: object, **options: Any) -> Any:
    """``IPython.display.display``; with ``display_id=True`` it returns the handle that updates the output."""
    from IPython.display import display as show

    return show(obj, **options)  # type: ignore[no-untyped-call]
