"""The ``agentcell`` command: ``run`` a notebook headless, ``install`` the kernelspec, ``demo`` the engine,
``acp`` serve it to an editor over the Agent Client Protocol, ``follow`` a session live, ``migrate`` a store
into another.

``agentcell run NOTEBOOK`` replays the notebook's recording (``NAME.agentcell.jsonl``) when it has one, so
it needs no key and gives the recorded transcript; ``--record`` runs live and re-records, ``--model`` runs
live on another model, ``--html`` also writes an HTML page of the result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from .kernel.headless_proposals import ProposalApplier

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from . import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedThinking
    from .usage import flat_pricing

    script = [
        ScriptedResponse(
            steps=[
                ScriptedThinking(thinking="The user wants a greeting."),
                ScriptedText(text="Hello! I am the scripted test double, not a model.", delay=0.01),
            ]
        )
    ]
    provider = ScriptedProvider(script, pricing=flat_pricing(3, 15))
    db = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="agentcell-demo-")) / "demo.db"
    with Engine(db, providers={"scripted": provider}) as engine:
        agent = engine.agents.create(name="demo", model="scripted", system="Be brief.")
        session = engine.sessions.create(agent=agent.id, title="demo", budget="0.50")
        print(f"session {session.id} (agent {agent.name} v{agent.version}, budget $0.50) in {db}")
        print("> hello")
        result = session.send_sync("hello")
        print(result.text)
        print(
            f"stop: {result.stop_reason.type}; usage: {session.usage.input_tokens} in / "
            f"{session.usage.output_tokens} out, list cost ${session.usage.list_cost:.6f}"
        )
        print("events:", ", ".join(e.type for e in session.events()))
    with Engine(db) as engine:
        reopened = engine.sessions.get(session.id)
        print(f"reopened from the store: {len(reopened.events())} events, list cost ${reopened.usage.list_cost:.6f}")
    return 0


def _install(args: argparse.Namespace) -> int:
    from .kernel.kernelspec import install

    prefix = sys.prefix if args.sys_prefix else args.prefix
    where = install(user=args.user, prefix=prefix)
    print(f"installed the agentcell kernelspec in {where}")
    return 0


def _first_line(source: str) -> str:
    line = next((ln for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= 60 else line[:57] + "…"


def _readable_notebook(path: Path) -> NotebookNode | None:
    """The notebook at ``path``, if it can be run here; else ``None``, having said why on stderr."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    if not path.is_file():
        print(f"agentcell run: no notebook at {path}", file=sys.stderr)
        return None
    try:
        nb: NotebookNode = nbformat.read(path, as_version=4)
    except (ValueError, nbformat.ValidationError) as exc:
        # JSONDecodeError, UnicodeDecodeError and nbformat's NotJSONError are ValueErrors; a traceback
        # would only bury this one line.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"agentcell run: {path.name} is not a readable notebook (nbformat 4): {reason}", file=sys.stderr)
        return None
    try:
        KernelSpecManager().get_kernel_spec("agentcell")
    except NoSuchKernel:
        print(
            "agentcell run: Jupyter has no 'agentcell' kernel here; register it with "
            "`agentcell install --sys-prefix` (or `--user`) and run again",
            file=sys.stderr,
        )
        return None
    return nb


def _run(args: argparse.Namespace) -> int:
    from .kernel.headless import CellIdNotebookClient

    path = Path(args.notebook).resolve()
    nb = _readable_notebook(path)
    if nb is None:
        return 2
    out = Path(args.output).resolve() if args.output else path.with_name(f"{path.stem}.executed.ipynb")
    # The kernel finds the notebook's session by its id (by its path when it has none; a copy forks); a
    # headless run starts a fresh conversation (the notebook's, so opening it later continues it) unless
    # --continue is given.
    os.environ["JPY_SESSION_NAME"] = str(path)
    if not args.continue_session:
        os.environ["AGENTCELL_NEW_SESSION"] = "1"
    if args.model:
        os.environ["AGENTCELL_MODEL"] = args.model
    _follow_recording(path)
    mode = _replay_mode(path, record=args.record, live=bool(args.model))
    os.environ["AGENTCELL_REPLAY"] = mode
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    total = len(code_cells)
    started: dict[str, float] = {}

    def on_start(cell: Any, cell_index: int, **_: Any) -> None:
        if cell.cell_type != "code":
            return
        started[cell.id] = time.perf_counter()
        position = code_cells.index(cell) + 1 if cell in code_cells else cell_index + 1
        print(f"[{position}/{total}] {_first_line(cell.source)}", file=sys.stderr, flush=True)

    def on_done(cell: Any, **_: Any) -> None:
        if cell.cell_type != "code":
            return
        elapsed = time.perf_counter() - started.get(cell.id, time.perf_counter())
        failed = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
        print(f"      {'failed' if failed else 'done'} in {elapsed:.1f} s", file=sys.stderr, flush=True)

    from .kernel.headless_proposals import ProposalApplier

    proposals = ProposalApplier(accept=args.accept_cells)
    client = _printing_client(CellIdNotebookClient, proposals)(
        nb,
        kernel_name="agentcell",
        timeout=args.timeout,
        store_widget_state=True,  # the user's own widgets; the turns' closed widgets are dropped below
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_start=on_start,
        on_cell_executed=on_done,
        # ipykernel warns at start that TCP on 127.0.0.1 is unencrypted: true of every local kernel, and
        # noise in a terminal run. Errors still show.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    status = _execute(client, nb, out, code_cells, proposals)
    print(f"wrote {out}\n  open it with: jupyter lab {_shown_path(out)}", file=sys.stderr)
    status = _report_replay(nb, path, mode, failed=status != 0) or status
    if args.html is not None:
        from .render.notebook_html import write_html

        html = Path(args.html).resolve() if args.html else out.with_suffix(".html")
        if html.suffix == ".ipynb":  # never overwrite a notebook with a page
            html = html.with_suffix(".html")
        write_html(nb, html)
        print(f"wrote {html}", file=sys.stderr)
    return status


def _execute(client: Any, nb: Any, out: Path, code_cells: list[Any], proposals: ProposalApplier) -> int:
    """Run every cell, then write the notebook however the run ended; 1 when a cell failed."""
    import nbformat
    from nbclient.exceptions import CellExecutionError

    status = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        _say_failed(exc, code_cells)
        status = 1
    finally:
        proposals.finish(nb)
        _drop_turn_widgets(nb)
        nbformat.write(nb, out)
    _say_proposals(proposals)
    return status


def _say_failed(exc: Any, code_cells: list[Any]) -> None:
    """One line naming the failed cell (the run stops there) and what it said."""
    from .providers.replay import NOT_RECORDED

    failed = [i for i, c in enumerate(code_cells, 1) if any(o.get("output_type") == "error" for o in c.outputs)]
    # A failed turn prints no error output (its own output shows the error): the run stopped at the last cell run.
    failed = failed or [i for i, c in enumerate(code_cells, 1) if c.get("execution_count") is not None][-1:]
    total = len(code_cells)
    where = f"cell {failed[0]} of {total} ({_first_line(code_cells[failed[0] - 1].source)})" if failed else "a cell"
    said = f"{exc.ename}: {exc.evalue}" if exc.evalue else str(exc).strip()[-2000:]
    # A turn missing from the recording is said once, with the others, by _report_replay.
    detail = "" if exc.evalue.startswith(NOT_RECORDED) else f":\n  {said}"
    print(f"agentcell run: {where} failed, so the run stopped there{detail}", file=sys.stderr)


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _drop_turn_widgets(nb: Any) -> None:
    """Remove the turn widgets' saved state (and their layouts'): each finished turn's output became its
    bundle and its widget closed, but nbclient keeps the state of every widget it saw opened."""
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {})
    state: dict[str, Any] = saved.get("state", {})
    turns = {
        model_id
        for model_id, model in state.items()
        if model.get("model_module") == "anywidget"
        and str(model.get("state", {}).get("_esm", "")).startswith("/* agentcell-widgets")
    }
    layouts = {str(state[t]["state"].get("layout", "")).removeprefix("IPY_MODEL_") for t in turns}
    others = json.dumps([m for model_id, m in state.items() if model_id not in turns])
    for model_id in turns | {layout for layout in layouts if layout and f"IPY_MODEL_{layout}" not in others}:
        state.pop(model_id, None)
    if saved and not state:
        del nb.metadata["widgets"][WIDGET_STATE]
        if not nb.metadata["widgets"]:
            del nb.metadata["widgets"]


def _printing_client(base: type[Any], proposals: ProposalApplier) -> type[Any]:
    """``base`` (nbclient's NotebookClient) printing each turn's answer and tool calls as they stream, and
    applying the agent's proposed cells after the cell whose turn proposed them (``--accept-cells``)."""
    from .run_output import TurnPrinter

    class PrintingClient(base):  # type: ignore[misc]
        printer = TurnPrinter()

        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            self.printer.on_message(msg)
            proposals.on_message(msg)
            return super().process_message(msg, cell, cell_index)

        async def async_execute_cell(self, cell: Any, cell_index: int, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().async_execute_cell(cell, cell_index, *args, **kwargs)
            finally:
                for answer in proposals.apply(self.nb, cell_index):
                    call = (
                        f"__agentcell__.answer_proposal({answer.number}, {answer.outcome!r}, "
                        f"cell_id={answer.cell_id!r}, run={answer.outcome == 'accepted'}, message={answer.message!r})"
                    )
                    recorded = await self.evaluate(self.kc, call) is not None
                    said = f"{answer.outcome}{f' ({answer.message})' if answer.message else ''}"
                    kept = "" if recorded else " (the kernel could not record it: the agent will not be told)"
                    print(f"  📝 proposal {answer.number}: {said}{kept}", file=sys.stderr)

    return PrintingClient


def _say_proposals(proposals: ProposalApplier) -> None:
    waiting = [p for p in proposals.seen if not proposals.accept]
    if waiting:
        numbers = ", ".join(str(p.get("number")) for p in waiting)
        print(
            f"agentcell run: the agent proposed cells ({numbers}); none was applied. Run with --accept-cells to "
            "apply them, or open the notebook to review them.",
            file=sys.stderr,
        )


def _shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _report_replay(nb: Any, notebook: Path, mode: str, *, failed: bool) -> int:
    """Say which turns were not in the recording (1), or where the run was recorded or replayed from (0)."""
    if misses := _not_recorded(nb):
        print("agentcell run: not everything was in the recording:", file=sys.stderr)
        for message in misses:
            print(f"  {message}", file=sys.stderr)
        return 1
    if mode in ("record", "replay") and not failed:
        action = "recorded into" if mode == "record" else "replayed from"
        print(f"{action} {_recording(notebook)}", file=sys.stderr)
    return 0


def _recording(notebook: Path) -> Path:
    from .providers.replay import recording_path

    return recording_path(notebook)


def _follow_recording(notebook: Path) -> None:
    """A notebook renamed or moved since it last ran finds its recording before the mode is chosen (the
    kernel would too, but only after this run had decided there was none)."""
    from .kernel.notebook_id import follow_recording, saved_notebook_id

    if saved_notebook_id(str(notebook)) is None:
        return  # no id, nothing to follow: leave the store unopened
    from .store import open_store

    store = open_store(None)
    try:
        moved_from = follow_recording(str(notebook), _recording(notebook), store)
    finally:
        store.close()
    if moved_from is not None:
        print(f"the recording {moved_from} follows the notebook: now {_recording(notebook).name}", file=sys.stderr)


def _replay_mode(notebook: Path, *, record: bool, live: bool) -> str:
    """--record records; --model runs live; otherwise a recording is replayed (and a notebook without one
    runs live), unless $AGENTCELL_REPLAY says otherwise."""
    if record:
        return "record"
    if live:
        return "off"
    if explicit := os.environ.get("AGENTCELL_REPLAY", "").strip():
        return explicit
    return "replay" if _recording(notebook).exists() else "off"


def _not_recorded(nb: Any) -> list[str]:
    """The "not recorded" errors of the executed notebook's turns (each names its cell)."""
    from .providers.replay import NOT_RECORDED
    from .render.renderer import TURN_MIMETYPE

    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            for event in output.get("data", {}).get(TURN_MIMETYPE, {}).get("events", []):
                message = event.get("error", {}).get("message", "") if event.get("type") == "session.error" else ""
                if message.startswith(NOT_RECORDED):
                    found.append(message)
    return found


def _acp(args: argparse.Namespace) -> int:
    from .acp import main as serve

    return serve(model=args.model, db=args.db)


def _follow(args: argparse.Namespace) -> int:
    import asyncio

    from . import Engine
    from .errors import AgentCellError
    from .following import print_follow

    try:
        with Engine(args.db or None) as engine:
            if engine.store.get_session(args.session_id) is None:
                print(f"agentcell follow: no session {args.session_id} in {engine.store.location}", file=sys.stderr)
                return 2
            print(f"following session {args.session_id} in {engine.store.location} (Ctrl-C stops)", file=sys.stderr)
            follow = print_follow(
                engine,
                args.session_id,
                everything=args.all,
                until_idle=args.until_idle,
                jsonl=args.jsonl,
                out=sys.stdout,
            )
            asyncio.run(follow)
    except KeyboardInterrupt:
        return 0
    except AgentCellError as exc:
        print(f"agentcell follow: {exc}", file=sys.stderr)
        return 2
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from . import Engine
    from .errors import AgentCellError
    from .migrate import migrate
    from .store.pg_url import is_postgres_url

    if not is_postgres_url(args.src) and not Path(args.src).is_file():
        print(f"agentcell migrate: no database at {args.src}", file=sys.stderr)
        return 2
    try:
        with Engine(args.src) as src, Engine(args.dst) as dst:
            report = migrate(src, dst)
    except AgentCellError as exc:
        print(f"agentcell migrate: {exc}", file=sys.stderr)
        return 2
    for copy in report.sessions:
        state = "copied" if copy.copied else "already there"
        print(f"{copy.session_id}  {copy.events:>8,} events  sha256 {copy.checksum[:16]}  {state}")
    copied = {
        "agent versions": report.agent_versions,
        "skill versions": report.skill_versions,
        "sessions": sum(c.copied for c in report.sessions),
        "events": report.events,
        "memory stores": report.memory_stores,
        "notes": report.notes,
        "uploads": report.uploads,
        "settings": report.settings,
    }
    print(f"copied from {report.source} to {report.destination}:", file=sys.stderr)
    print("  " + ", ".join(f"{what}: {count:,}" for what, count in copied.items()), file=sys.stderr)
    print(
        f"  checked: all {len(report.sessions)} sessions there have the same event ids, counts and checksums",
        file=sys.stderr,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agentcell", description="A Jupyter kernel where every cell is an agent turn."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="execute a notebook headless on the agentcell kernel")
    run.add_argument("notebook")
    run.add_argument("-o", "--output", help="where to write the executed notebook (default NAME.executed.ipynb)")
    run.add_argument("--model", help="run live on this model (e.g. local:smollm2, claude-…, scripted)")
    run.add_argument("--record", action="store_true",
                     help="run live and re-record the notebook's recording (NAME.agentcell.jsonl)")  # fmt: skip
    run.add_argument("--html", nargs="?", const="", metavar="PATH",
                     help="also write an HTML page, keeping widget state and static fallbacks")  # fmt: skip
    run.add_argument("--accept-cells", action="store_true",
                     help="apply the cells the agent proposes (a new cell runs in turn; else only listed)")  # fmt: skip
    run.add_argument("--timeout", type=int, default=600, help="seconds each cell may take (default 600)")
    run.add_argument("--continue", dest="continue_session", action="store_true",
                     help="continue the notebook's existing session instead of starting a fresh one")  # fmt: skip
    run.set_defaults(run=_run)

    install = commands.add_parser("install", help="install the agentcell kernelspec")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="into the user's Jupyter data directory")
    where.add_argument("--sys-prefix", action="store_true", help="into this environment (sys.prefix)")
    where.add_argument("--prefix", help="under this prefix")
    install.set_defaults(run=_install)

    demo = commands.add_parser("demo", help="run one turn of the engine on the scripted provider")
    demo.add_argument("--db", help="database file (default: a temporary one)")
    demo.set_defaults(run=_demo)

    acp = commands.add_parser("acp", help="serve the engine as an Agent Client Protocol agent on stdio (editors)")
    acp.add_argument("--model", help="model of new sessions (default: $AGENTCELL_MODEL, a key that is set, local)")
    acp.add_argument("--db", help="database file (default: $AGENTCELL_DB, else the one the kernel uses)")
    acp.set_defaults(run=_acp)

    follow = commands.add_parser("follow", help="print a session's live transcript as its events commit")
    follow.add_argument("session_id")
    follow.add_argument("--db", help="database file or postgresql:// URL (default: $AGENTCELL_DB)")
    follow.add_argument("--all", action="store_true", help="from the session's start, not its latest turn")
    follow.add_argument("--until-idle", action="store_true", help="stop when the running turn ends")
    follow.add_argument("--jsonl", action="store_true", help="print each event as one line of JSON")
    follow.set_defaults(run=_follow)

    copy = commands.add_parser("migrate", help="copy a whole store into another (SQLite <-> PostgreSQL)")
    copy.add_argument("src", help="database file or postgresql:// URL to copy from")
    copy.add_argument("dst", help="database file or postgresql:// URL to copy into")
    copy.set_defaults(run=_migrate)

    args = parser.parse_args(_html_flag_alone(sys.argv[1:] if argv is None else argv))
    return int(args.run(args))


def _html_flag_alone(argv: list[str]) -> list[str]:
    """``--html NOTEBOOK.ipynb`` means the flag without a path, then the notebook (argparse would take the
    notebook for the page's path)."""
    out = list(argv)
    for index, value in enumerate(out[:-1]):
        if value == "--html" and out[index + 1].endswith(".ipynb"):
            out[index] = "--html="
    return out


if __name__ == "__main__":
    sys.exit(main())
