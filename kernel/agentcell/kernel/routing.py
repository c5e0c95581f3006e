"""Cell routing: one IPython input transformer decides what a cell is.

It runs first among ``input_transformers_cleanup`` so it sees the cell as typed (by the time the post
transformers run, ``%magic`` lines are already rewritten into Python calls):

- ``%%agent`` cells become an awaited turn, ``%%outcome`` cells an awaited outcome loop, and ``%%workflow``
  cells an awaited workflow run, in any IPython kernel where the extension is loaded;
- a cell of only ``%compact [instructions]`` becomes an awaited compaction (a model request);
- a cell of only ``%fix [words]`` becomes an awaited turn about the last failing cell;
- ``%%python`` cells run their body as ordinary Python, through IPython;
- other ``%%magic`` cells, and cells of only ``%``/``!`` lines, pass through unchanged;
- a ``%name`` that is no magic fails at once, one line, with the nearest name ("did you mean %model?");
- in the agentcell kernel, any other cell is prose: leading ``%``/``!`` lines run first, the rest becomes
  ``await __agentcell__.ask(<text>)``, so IPython owns execution counts, history, tracebacks and interrupts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

__all__ = ["HOST_NAME", "code_cell_source", "make_router"]

HOST_NAME = "__agentcell__"
"""The user-namespace name of the notebook's agent host (hidden from ``%who``)."""


def _turn(text: str) -> list[str]:
    return [f"await {HOST_NAME}.ask({text!r})\n"]


def _is_magic_line(line: str) -> bool:
    stripped = line.lstrip()
    return not stripped or stripped.startswith(("%", "!"))


ROUTED_CELL_MAGICS = ("agent", "python", "outcome")
"""Cell magics the router handles itself."""

MagicNames = Callable[[], Mapping[str, Iterable[str]]]
"""The shell's magics by kind: ``{"line": names, "cell": names}`` (IPython's ``magics_manager.magics``)."""


def _unknown_magic(line: str, magic_names: MagicNames, preferred: Iterable[str]) -> list[str] | None:
    """The replacement cell for a line naming no magic: a one-line UsageError with the nearest name."""
    stripped = line.strip()
    if not stripped.startswith("%"):
        return None
    kind = "cell" if stripped.startswith("%%") else "line"
    name = stripped.lstrip("%").split(maxsplit=1)[0] if stripped.lstrip("%") else ""
    if not name or (kind == "cell" and name in ROUTED_CELL_MAGICS):
        return None
    known = set(magic_names().get(kind, ()))
    if kind == "cell":
        known.update(ROUTED_CELL_MAGICS)
    if name in known:
        return None
    import difflib

    prefix = "%" * (2 if kind == "cell" else 1)
    ours = [n for n in preferred if n in known]
    nearest = difflib.get_close_matches(name, ours, n=1, cutoff=0.6) or difflib.get_close_matches(
        name, sorted(known), n=1, cutoff=0.6
    )
    hint = f"did you mean {prefix}{nearest[0]}?" if nearest else "%help lists agentcell's magics, %lsmagic all of them"
    message = f"{prefix}{name} is not a magic: {hint}"
    return [f"raise __import__('IPython.core.error', fromlist=['UsageError']).UsageError({message!r})\n"]


AGENT_CELL_MAGICS = ("%%agent", "%%outcome", "%%workflow")
"""Cells that are the agent's turns, never code the notebook ran."""


def code_cell_source(cell: str, *, prose_is_agent: bool, own_magics: Iterable[str] = ()) -> str | None:
    """The Python of ``cell`` when it is a code cell the agent should see (None otherwise): a ``%%python``
    cell's body; in another IPython kernel (``prose_is_agent`` False), any cell but a turn and but a cell of
    agentcell's own ``%`` lines (``own_magics``: their names)."""
    lines = cell.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if not first:
        return None
    word = first.split()[0]
    if word == "%%python":
        body = cell[cell.index("%%python") + len("%%python") :].partition("\n")[2]
        return body if body.strip() else None
    if prose_is_agent or word in AGENT_CELL_MAGICS:
        return None
    own = set(own_magics)
    if all(_names_one_of(line.strip(), own) for line in lines if line.strip()):
        return None  # `%context`, `%model ...`: talking to agentcell, not running code
    return cell


def _names_one_of(line: str, magics: set[str]) -> bool:
    words = line[1:].split(maxsplit=1) if line.startswith("%") and not line.startswith("%%") else []
    name = words[0] if words else ""
    return name in magics


def make_router(
    *, prose_is_agent: bool, magic_names: MagicNames | None = None, preferred: Iterable[str] = ()
) -> Callable[[list[str]], list[str]]:
    """The transformer; ``prose_is_agent`` is True in the agentcell kernel, False for ``%load_ext``.
    With ``magic_names``, a leading ``%`` line naming no magic is refused at once, suggesting the nearest
    name (``preferred`` first: agentcell's own)."""
    preferred = tuple(preferred)

    def route(lines: list[str]) -> list[str]:
        first_index = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first_index is None:
            return lines
        if magic_names is not None:
            for line in lines[first_index:]:
                if not _is_magic_line(line):
                    break
                if (refusal := _unknown_magic(line, magic_names, preferred)) is not None:
                    return refusal
                if line.lstrip().startswith("%%"):
                    break  # a cell magic owns the rest of the cell
        first = lines[first_index].strip()
        body = "".join(lines[first_index + 1 :])
        if first.split()[0] == "%%agent":
            return _turn(body) if body.strip() else lines
        if first.split()[0] == "%%python":
            return lines[first_index + 1 :]
        if first.split()[0] == "%%outcome":
            options = first[len("%%outcome") :].strip()
            return [f"await {HOST_NAME}.outcome({options!r}, {body!r})\n"]
        if first.split()[0] == "%%workflow":
            options = first[len("%%workflow") :].strip()
            return [f"await {HOST_NAME}.workflow_cell({options!r}, {body!r})\n"]
        if first.split()[0] == "%compact" and not body.strip():  # a model request: awaited like a turn
            line = first[len("%compact") :].strip()
            module = "agentcell.kernel.magics.compact"
            return [f"await __import__({module!r}, fromlist=['run_compact']).run_compact({HOST_NAME}, {line!r})\n"]
        if first.split()[0] == "%fix" and not body.strip():  # a turn: awaited like one
            line = first[len("%fix") :].strip()
            module = "agentcell.kernel.magics.proposals"
            return [f"await __import__({module!r}, fromlist=['run_fix']).run_fix({HOST_NAME}, {line!r})\n"]
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
