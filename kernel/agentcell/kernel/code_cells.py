"""The code cells a notebook runs between turns, with what the front end was shown of them.

A :class:`CellRecorder` listens to IPython's ``pre_run_cell``/``post_run_cell`` events. While a code cell runs
(a ``%%python`` cell in the agentcell kernel; any cell but the agent's own in another IPython kernel) it keeps
what the cell writes to stdout and stderr, what it displays (through the display publisher, as the front
end gets it: what the python tool captures for its card never passes here), its result (``Out[n]``) and
its traceback. The next turn takes the cells run since the previous one (:meth:`CellRecorder.take`), each
capped, and the whole capped per turn, the middle cut with a note. A cell run again before that turn
replaces its earlier run (the cell's id from the execute request, as JupyterLab, Notebook 7 and nbclient
send it); one run again after it replaces it in the conversation (``engine/history.py``).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import count
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..records.notebook_context import CellOutput, CodeCell

__all__ = ["ANSI", "Caps", "CellRecorder", "cap_text"]

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True, slots=True)
class Caps:
    """The context's bounds (``AgentCell.context_cell_chars`` and friends)."""

    cell_chars: int = 10_000
    turn_chars: int = 60_000
    images: int = 4


def cap_text(text: str, limit: int, setting: str) -> str:
    """``text`` with its middle cut to ``limit`` characters and a note saying so (and which setting)."""
    if len(text) <= limit:
        return text
    longest = f"\n[... {len(text):,} of {len(text):,} characters cut here ({setting}) ...]\n"
    kept = max(0, limit - len(longest))
    head = kept // 2
    tail = kept - head
    note = f"\n[... {len(text) - kept:,} of {len(text):,} characters cut here ({setting}) ...]\n"
    return text[:head] + note + text[len(text) - tail :]


class _Kept:
    """Text that arrives in pieces, kept within ``limit`` characters: its start and its end (a 5 MB print
    costs the kernel no more than that), with how much there was in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = ""
        self.tail = ""
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail = (self.tail + text)[-(self.limit - self.limit // 2) :]

    def text(self, setting: str) -> str:
        """The text, or its ends with a note on what was cut between them, within ``limit`` in all."""
        left_out = self.total - len(self.head) - len(self.tail)
        if left_out <= 0:
            return self.head + self.tail
        note = f"\n[... {self.total:,} of {self.total:,} characters cut here ({setting}) ...]\n"
        room = max(0, self.limit - len(note))
        head, tail = self.head[: room // 2], self.tail[len(self.tail) - (room - room // 2) :] if room else ""
        note = note.replace(f"{self.total:,} of", f"{self.total - len(head) - len(tail):,} of", 1)
        return head + note + tail


@dataclass
class _Running:
    key: str
    cell_id: str | None
    source: str
    caps: Caps
    outputs: list[tuple[str, Any]] = field(default_factory=list)
    """(kind, _Kept for a stream | a MIME bundle | a traceback), in the order they were shown."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    muted: bool = False
    """While a result or a traceback is shown: a shell that prints them (a terminal) is not heard twice."""

    def write(self, kind: str, text: str) -> None:
        if self.muted:
            return
        with self.lock:
            if self.outputs and self.outputs[-1][0] == kind:
                self.outputs[-1][1].add(text)
            else:  # the source shares the cell's cap
                kept = _Kept(max(200, self.caps.cell_chars - len(self.source)))
                kept.add(text)
                self.outputs.append((kind, kept))


class CellRecorder:
    """Records the code cells ``shell`` runs until a turn takes them. ``is_code`` says which cells are code
    (given the cell as typed); ``caps`` is read when a cell starts and when a turn takes the cells."""

    def __init__(self, shell: InteractiveShell, is_code: Callable[[str], str | None], caps: Callable[[], Caps]) -> None:
        self.shell = shell
        self._is_code = is_code
        self._caps = caps
        self._pending: dict[str, CodeCell] = {}
        self._running: _Running | None = None
        self._keys = count(1)
        self._restore: list[Callable[[], None]] = []

    def install(self) -> None:
        """Listen to the shell's cells."""
        self.shell.events.register("pre_run_cell", self._pre_run_cell)
        self.shell.events.register("post_run_cell", self._post_run_cell)
        self._wrap_displays()

    def uninstall(self) -> None:
        """Stop listening (``%unload_ext``); the wrapped publishers pass everything through from now on."""
        self._running = None
        for name, callback in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
            if callback in self.shell.events.callbacks[name]:
                self.shell.events.unregister(name, callback)

    # ------------------------------------------------------------------------------------------ a cell

    def _pre_run_cell(self, info: Any) -> None:
        self._running = None
        source = self._is_code(getattr(info, "raw_cell", "") or "")
        if source is None:
            return
        from .replay_mode import current_cell

        cell_id = current_cell(self.shell).id
        key = cell_id if cell_id is not None else f"#{next(self._keys)}"
        self._running = running = _Running(key, cell_id, source, self._caps())
        for name in ("stdout", "stderr"):
            self._tee(name, running)

    def _tee(self, name: str, running: _Running) -> None:
        stream = getattr(sys, name)
        write = stream.write

        def tee(text: str) -> int:
            if isinstance(text, str):
                running.write(name, text)
            written: int = write(text)
            return written

        try:
            stream.write = tee
        except (AttributeError, TypeError):  # a terminal's file: its output is not recorded
            return
        self._restore.append(lambda: _untee(stream, tee))

    def _post_run_cell(self, result: Any) -> None:
        running, self._running = self._running, None
        for restore in self._restore:
            restore()
        self._restore.clear()
        if running is None:
            return
        from ..records.notebook_context import CodeCell

        outputs = [output for output in map(self._output, running.outputs) if output is not None]
        number = getattr(result, "execution_count", None)
        cell = CodeCell(
            cell_id=running.cell_id,
            execution_count=number if isinstance(number, int) else None,
            source=running.source,
            outputs=outputs,
        )
        cell = capped_cell(cell, running.caps.cell_chars)  # a 5 MB output is kept as its ends only
        self._pending.pop(running.key, None)  # a cell run again goes where it ran last
        self._pending[running.key] = cell

    def _output(self, shown: tuple[str, Any]) -> CellOutput | None:
        from ..records.notebook_context import CellOutput

        kind, value = shown
        if isinstance(value, _Kept):
            return CellOutput(kind=kind, text=value.text("AgentCell.context_cell_chars"))
        if kind == "error":
            return CellOutput(kind="error", text=ANSI.sub("", value))
        return bundle_output(kind, value)

    def _wrap_displays(self) -> None:
        publisher = self.shell.display_pub
        publish = publisher.publish

        def recorded(data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            if (running := self._running) is not None:
                with running.lock:
                    running.outputs.append(("display", dict(data)))
            publish(data, *args, **kwargs)

        publisher.publish = recorded  # type: ignore[method-assign]
        hook = self.shell.displayhook
        write_format_data = hook.write_format_data

        def result_shown(format_dict: dict[str, Any], md_dict: Any = None) -> None:
            if (running := self._running) is None:
                write_format_data(format_dict, md_dict)
                return
            running.outputs.append(("result", dict(format_dict)))
            running.muted = True
            try:
                write_format_data(format_dict, md_dict)
            finally:
                running.muted = False

        hook.write_format_data = result_shown  # type: ignore[method-assign]
        show = self.shell._showtraceback

        def traceback_shown(etype: Any, evalue: Any, stb: Any) -> Any:
            if (running := self._running) is None:
                return show(etype, evalue, stb)
            running.outputs.append(("error", "\n".join(stb) if isinstance(stb, list) else str(stb)))
            running.muted = True
            try:
                return show(etype, evalue, stb)
            finally:
                running.muted = False

        self.shell._showtraceback = traceback_shown  # type: ignore[method-assign]

    # ------------------------------------------------------------------------------------------ a turn

    @property
    def pending(self) -> list[CodeCell]:
        """The code cells run since the last turn took them, oldest first (uncapped per turn)."""
        return list(self._pending.values())

    def take(self) -> list[CodeCell]:
        """The cells run since the last turn, and none from now on."""
        cells, self._pending = list(self._pending.values()), {}
        return cells


def _untee(stream: Any, tee: Any) -> None:
    if stream.__dict__.get("write") is tee:
        del stream.write


def bundle_output(kind: str, bundle: dict[str, Any]) -> CellOutput | None:
    """A displayed MIME bundle as the model reads it: an image, and its richest text (Markdown, the text/plain
    repr, HTML as text). None for a bundle with neither (a widget's view)."""
    from ..records.content import ImageSource
    from ..records.notebook_context import CellOutput

    image = None
    for mime in IMAGE_TYPES:
        data = bundle.get(mime)
        if isinstance(data, str) and data:
            image = ImageSource(media_type=mime, data=data.replace("\n", ""))
            break
    text = bundle.get("text/markdown") if image is None else None
    if not isinstance(text, str):
        text = bundle.get("text/plain")
    if not isinstance(text, str) or not text:
        html = bundle.get("text/html")
        text = html_text(html) if isinstance(html, str) else ""
    if image is None and not text:
        return None
    return CellOutput(kind=kind, text=text, image=image)


class _TextOf(HTMLParser):
    _SKIP = frozenset({"script", "style"})
    _BREAKS = frozenset({"br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BREAKS:
            self.chunks.append("\n")
        elif tag in ("td", "th"):
            self.chunks.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.chunks.append(data)


def html_text(html: str) -> str:
    """HTML as the text a reader sees (tags dropped, scripts and styles left out, rows on lines)."""
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.chunks).splitlines())
    return "\n".join(line for line in lines if line)


# ---------------------------------------------------------------------------------------------- the caps


def capped_cell(cell: CodeCell, limit: int) -> CodeCell:
    """``cell`` within ``limit`` characters of text: its source and outputs share them, each cut in its
    middle only as far as it must be (a short output stays whole beside a long one)."""
    if cell_chars(cell) <= limit:
        return cell
    texts = [cell.source, *(output.text for output in cell.outputs)]
    shares = _shares([len(text) for text in texts], limit)
    if all(len(text) <= share for text, share in zip(texts, shares, strict=True)):
        return cell
    setting = "AgentCell.context_cell_chars"
    outputs = [
        output.model_copy(update={"text": cap_text(output.text, share, setting)})
        for output, share in zip(cell.outputs, shares[1:], strict=True)
    ]
    return cell.model_copy(update={"source": cap_text(cell.source, shares[0], setting), "outputs": outputs})


def _shares(lengths: list[int], budget: int) -> list[int]:
    """Water-filling: each gets what it needs up to an equal share of what the shorter ones left."""
    shares = [0] * len(lengths)
    left, remaining = budget, len(lengths)
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        shares[index] = min(lengths[index], left // remaining)
        left -= shares[index]
        remaining -= 1
    return shares


def cell_chars(cell: CodeCell) -> int:
    return len(cell.source) + sum(len(output.text) for output in cell.outputs)


def capped_cells(cells: list[CodeCell], caps: Caps) -> tuple[list[CodeCell], list[str]]:
    """``cells`` within the turn's caps, and the notes saying what was left out: each cell within its own cap
    (the recorder caps them as they run; capping again costs nothing then), cells from the middle of the run
    left out until the rest fit the turn's characters (the first and the latest stay), and images beyond the
    turn's count kept as their text only. Only the cells kept are looked at closely."""
    notes: list[str] = []
    kept: dict[int, CodeCell] = {}
    used = 0
    for index in _from_both_ends(len(cells)):
        cell = cells[index]
        size = cell_chars(cell)
        if size > caps.cell_chars:  # recorded under a larger cap than the turn's
            cell = capped_cell(cell, caps.cell_chars)
            size = cell_chars(cell)
        if used + size > caps.turn_chars:
            break
        kept[index] = cell
        used += size
    if left_out := len(cells) - len(kept):
        notes.append(
            f"{left_out} code cell{'s' if left_out != 1 else ''} run in between left out: over "
            f"{caps.turn_chars:,} characters in one turn (AgentCell.context_turn_chars)"
        )
    cells = [kept[i] for i in sorted(kept)]
    images = 0
    for position, cell in enumerate(cells):
        if not any(output.image is not None for output in cell.outputs):
            continue
        outputs = []
        for output in cell.outputs:
            if output.image is not None:
                images += 1
                if images > caps.images:
                    outputs.append(output.model_copy(update={"image": None, "text": output.text or "[an image]"}))
                    continue
            outputs.append(output)
        cells[position] = cell.model_copy(update={"outputs": outputs})
    if images > caps.images:
        notes.append(
            f"{images - caps.images} image(s) left out: over {caps.images} in one turn (AgentCell.context_images)"
        )
    return cells, notes


def _from_both_ends(n: int) -> list[int]:
    """0, n-1, 1, n-2, ...: the order in which cells keep their place when a turn's cells are too many."""
    order: list[int] = []
    low, high = 0, n - 1
    while low <= high:
        order.append(low)
        if high != low:
            order.append(high)
        low, high = low + 1, high - 1
    return order
