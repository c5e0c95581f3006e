"""Cell routing: one IPython input transformer decides what a cell is.

It runs first among ``input_transformers_cleanup`` so it sees the cell as typed (by the time the post
transformers run, ``%magic`` lines are already rewritten into Python calls):

- ``%%agent`` cells become an awaited turn, and ``%%outcome`` cells an awaited outcome loop, in any IPython
  kernel where the extension is loaded;
- ``%%python`` cells run their body as ordinary Python, through IPython;
- other ``%%magic`` cells, and cells of only ``%``/``!`` lines, pass through unchanged;
- in the agentcell kernel, any other cell is prose: leading ``%``/``!`` lines run first, the rest becomes
  ``await __agentcell__.ask(<text>)``, so IPython owns execution counts, history, tracebacks and interrupts.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["HOST_NAME", "make_router"]

HOST_NAME = "__agentcell__"
"""The user-namespace name of the notebook's agent host (hidden from ``%who``)."""


def _turn(text: str) -> list[str]:
    return [f"await {HOST_NAME}.ask({text!r})\n"]


def _is_magic_line(line: str) -> bool:
    stripped = line.lstrip()
    return not stripped or stripped.startswith(("%", "!"))


def make_router(*, prose_is_agent: bool) -> Callable[[list[str]], list[str]]:
    """The transformer; ``prose_is_agent`` is True in the agentcell kernel, False for ``%load_ext``."""

    def route(lines: list[str]) -> list[str]:
        first_index = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first_index is None:
            return lines
        first = lines[first_index].strip()
        body = "".join(lines[first_index + 1 :])
        if first.split()[0] == "%%agent":
            return _turn(body) if body.strip() else lines
        if first.split()[0] == "%%python":
            return lines[first_index + 1 :]
        if first.split()[0] == "%%outcome":
            options = first[len("%%outcome") :].strip()
            return [f"await {HOST_NAME}.outcome({options!r}, {body!r})\n"]
        if first.startswith("%%") or not prose_is_agent:
            return lines
        split = first_index
        while split < len(lines) and _is_magic_line(lines[split]):
            split += 1
        prose = "".join(lines[split:])
        if not prose.strip():
            return lines
        return lines[:split] + _turn(prose)

    # No ``has_side_effects`` flag: is_complete must route too, so that prose reads as complete input.
    return route
