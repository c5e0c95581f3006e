"""The notebook's context: what 200 executed code cells add to a turn (issue 32).

A notebook of 200 ``%%python`` cells with typical outputs (a print, a dict's repr as ``Out[n]``, a long
listing, every tenth a traceback) runs in an IPython shell with agentcell loaded, so the kernel's recorder
sees each cell as the kernel's would. Then a turn's context is built and folded into the request the model
gets, and the same turn's request is built without code cells; the difference is what the context adds.

1. Recording: the 200 cells with the recorder against the same cells with it removed (per cell).
2. Per turn: building the context (caps and the namespace summary) and folding the turn's message into
   the history (target: <= 5 ms added), and the request's size against the caps (bounded by them).

Run: ``.venv/bin/python bench/notebook_context.py``
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

CELLS = 200
ROUNDS = 30


def _cell(n: int) -> str:
    if n % 10 == 9:
        return f"%%python\nrow_{n} = {{'region': 'north', 'sales': {n}}}\nrow_{n}['missing']"
    return (
        f"%%python\nrow_{n} = {{'region': 'north', 'sales': {n}, 'items': list(range({n % 40}))}}\n"
        f"print('processed row', {n}, 'of {CELLS}:', sorted(row_{n}))\nrow_{n}"
    )


def _run_cells(shell: object) -> float:
    start = time.perf_counter()
    for n in range(CELLS):
        shell.run_cell(_cell(n), store_history=True)  # type: ignore[attr-defined]
    return (time.perf_counter() - start) / CELLS * 1000


def _record(shell: object, source: Any) -> tuple[float, float]:
    """The cells run with the recorder and without it (ms a cell); the recorder keeps the last run's."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        _run_cells(shell)  # warm up
        source.recorder.take()
        source.recorder.uninstall()
        bare_ms = _run_cells(shell)
        source.recorder.install()
        recorded_ms = _run_cells(shell)  # the cells the turn takes
    return recorded_ms, bare_ms


def main() -> None:
    os.environ["AGENTCELL_MODEL"] = "scripted"
    os.environ["AGENTCELL_DB"] = str(Path(tempfile.mkdtemp()) / "bench.db")
    from IPython.core.interactiveshell import InteractiveShell

    from agentcell import Engine, ScriptedProvider
    from agentcell.engine.history import History
    from agentcell.events import TextBlock, UserMessage
    from agentcell.kernel.extension import load

    shell = InteractiveShell.instance()
    host = load(shell, prose_is_agent=True)
    source = host.context_source
    assert source is not None
    recorded_ms, bare_ms = _record(shell, source)
    pending = source.recorder.pending

    engine = Engine(Path(tempfile.mkdtemp()) / "e.db", providers={"scripted": ScriptedProvider()})
    session = engine.sessions.create(agent=engine.agents.create(name="b", model="scripted").id)
    content = [TextBlock(text="What happened in the cells above?")]

    split: list[float] = []

    def turn(with_context: bool) -> tuple[float, int]:
        start = time.perf_counter()
        context = source.build(take=False) if with_context else None
        built = time.perf_counter()
        message = session.make(UserMessage, content=content, context=context)
        history = History()
        history.apply(message)
        messages = history.messages()
        end = time.perf_counter()
        if with_context:
            split.append((built - start) * 1000)
        return (end - start) * 1000, len(json.dumps([m.model_dump(mode="json") for m in messages]))

    for _ in range(5):  # warm up
        turn(True)
        turn(False)
    with_times, without_times = [], []
    for _ in range(ROUNDS):
        with_times.append(turn(True)[0])
        without_times.append(turn(False)[0])
    with_ms, without_ms = statistics.median(with_times), statistics.median(without_times)
    build_ms = statistics.median(split)
    _, size = turn(True)
    _, bare_size = turn(False)
    context = source.build(take=False)
    assert context is not None
    caps = source.caps()
    print(f"{CELLS} code cells: recording {recorded_ms:.3f} ms a cell, without the recorder {bare_ms:.3f} ms "
          f"({recorded_ms - bare_ms:+.3f} ms a cell)")  # fmt: skip
    print(f"pending cells: {len(pending)}; sent: {len(context.cells)} ({context.describe()}); notes: {context.notes}")
    print(f"per turn, median of {ROUNDS}: with the context {with_ms:.2f} ms, without {without_ms:.3f} ms: "
          f"{with_ms - without_ms:+.2f} ms added (target <= 5 ms); of it the kernel's build {build_ms:.2f} ms, the "
          f"history's fold {with_ms - build_ms:.2f} ms")  # fmt: skip
    print(f"request messages: {size:,} bytes with the context, {bare_size:,} without; the turn's cap "
          f"{caps.turn_chars:,} characters of cells + the variables' summary")  # fmt: skip
    engine.close()


if __name__ == "__main__":
    if os.environ.get("PROFILE"):
        import cProfile

        cProfile.run("main()", sort="cumtime")
    else:
        main()
