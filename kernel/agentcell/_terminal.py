"""Text for a terminal: what a model or a tool wrote, without the control characters a terminal obeys.

Model text and tool output are data, but a terminal reads an escape sequence in them as an order: an OSC 52
sequence writes the user's clipboard, others retitle the window, move the cursor over what was printed or,
in some terminals, answer back as if typed. ``agentcell run`` and ``agentcell follow`` print such text, so
every C0 and C1 control character but the newline and the tab is taken out (the ESC of a sequence with
them: what is left of it shows as plain text).
"""

from __future__ import annotations

import re

__all__ = ["for_terminal"]

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def for_terminal(text: str) -> str:
    """``text`` with the control characters a terminal would act on removed (newlines and tabs stay)."""
    return _CONTROLS.sub("", text)
