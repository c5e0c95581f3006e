"""The ``%`` magics. Each takes ``--help``; a mistake prints one clear line (IPython's UsageError), never a
traceback."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class

from .._format import format_cost, format_usd
from ..errors import AgentCellError

if TYPE_CHECKING:
    from ..providers.replay import Replayer
    from .host import NotebookAgent

__all__ = ["HELP", "AgentCellMagics"]

OUTCOME_HELP = (
    "%%outcome [max_iterations=N] [grader=MODEL] [rubric=PATH]  work until a grader finds the cell's "
    "description meets its rubric (after a line ---, or in the file PATH)"
)
STEER_HELP = "%steer TEXT  guidance for the running turn, given to the model at its next request"
THREADS_HELP = (
    "%threads [list | on [AGENT_ID…] | off]  let the agent spawn threads of other agents (on: helpers it defines "
    "itself; with ids: those saved agents) and wait for their results; list: the session's threads"
)

HELP: dict[str, str] = {
    "model": "%model [NAME [key=value …]]  show or set the model, e.g. %model claude-sonnet-4-5 max_tokens=2048",
    "system": "%system [TEXT | --clear]  show or set the system prompt (a new agent version); %%system for a cell",
    "tools": "%tools [list | enable NAME… | disable NAME… | force NAME…]  the agent's tools; force: the next "
    "turn's first requests call these tools, one each, in order (helps small models)",
    "permissions": "%permissions [read-only | workspace-write | danger-full-access]  what tools may do unasked",
    "budget": "%budget [USD | off]  the session's maximum list cost",
    "session": "%session [show | new | list | resume ID | title TEXT | follow ID | follow stop]  the notebook's "
    "session; follow: a read-only live view of a session another kernel drives",
    "agent": "%agent [show | pin VERSION | versions]  the agent and its pinned version",
    "mcp": "%mcp [list | add NAME -- COMMAND … | add NAME --url URL | remove NAME]  MCP servers",
    "usage": "%usage  tokens, list cost, budget and time of this session",
    "record": "%record  re-record the notebook: a fresh conversation whose requests run live and replace its "
    "recording (NAME.agentcell.jsonl); run the cells from the top, and do not keep %record in the notebook",
    "replay": "%replay [auto | off | status]  replay the notebook from its recording in a fresh conversation "
    "(auto: run unrecorded requests live); off: everything live; status: mode and counts",
    "python": "%%python  run the cell as Python in the notebook's namespace",
    "agent_cell": "%%agent  send the cell to the agent (in any IPython kernel)",
    "threads": THREADS_HELP,
    "outcome": OUTCOME_HELP,
    "steer": STEER_HELP,
    "help": "%help  this list",
}

_SETTINGS = {"max_tokens": int, "temperature": float, "thinking_budget": int, "base_url": str}


def _wants_help(args: list[str]) -> bool:
    return any(a in ("-h", "--help") for a in args)


@magics_class
class AgentCellMagics(Magics):  # type: ignore[misc]  # IPython is untyped
    def __init__(self, shell: Any, host: NotebookAgent) -> None:
        super().__init__(shell)
        self.host = host

    def _guard(self, name: str, line: str) -> list[str] | None:
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%{name}: {exc}") from None
        if _wants_help(args):
            print(HELP[name])
            return None
        return args

    @staticmethod
    def _fail(exc: AgentCellError) -> UsageError:
        return UsageError(str(exc))

    # ------------------------------------------------------------------------------------------ model

    @line_magic  # type: ignore[untyped-decorator]
    def model(self, line: str) -> None:
        """Show or set the model: %model NAME [max_tokens=N temperature=T thinking_budget=N base_url=U]."""
        args = self._guard("model", line)
        if args is None:
            return
        try:
            if not args:
                current = self.host.session.agent.model
                settings = json.dumps(current.model_dump(exclude_defaults=True, exclude={"id"}))
                print(f"model: {current.id}  {settings}")
                return
            config: dict[str, Any] = {"id": args[0]}
            for pair in args[1:]:
                key, sep, value = pair.partition("=")
                if not sep or key not in _SETTINGS:
                    raise UsageError(f"%model: expected key=value with key in {', '.join(_SETTINGS)}; got {pair!r}")
                try:
                    config[key] = _SETTINGS[key](value)
                except ValueError:
                    raise UsageError(f"%model: {key} must be {_SETTINGS[key].__name__}, not {value!r}") from None
            agent = self.host.set_model(config)
            print(f"model: {agent.model.id} (agent v{agent.version})")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_cell_magic  # type: ignore[untyped-decorator]
    def system(self, line: str, cell: str | None = None) -> None:
        """Show or set the system prompt; %%system takes the whole cell."""
        if cell is None:
            args = self._guard("system", line)
            if args is None:
                return
            text: str | None = line.strip()
            if not text:
                print(self.host.session.agent.system or "(no system prompt)")
                return
            if text == "--clear":
                text = None
        else:
            text = cell.strip() or None
        try:
            agent = self.host.set_system(text)
        except AgentCellError as exc:
            raise self._fail(exc) from None
        print(f"system prompt {'set' if text else 'cleared'} (agent v{agent.version})")

    # ------------------------------------------------------------------------------------------ tools

    @line_magic  # type: ignore[untyped-decorator]
    def tools(self, line: str) -> None:
        """List, enable or disable the agent's tools."""
        args = self._guard("tools", line)
        if args is None:
            return
        from ..records.agent import ToolFilter

        try:
            session = self.host.session
            agent = session.agent
            current = next((t for t in agent.tools if isinstance(t, ToolFilter)), ToolFilter())
            available = [s.name for s in self.host.engine.tools.schemas(agent.id)]
            if not args or args[0] == "list":
                for name in available:
                    off = name in current.deny or (current.allow is not None and name not in current.allow)
                    print(f"{'  ' if off else '✓ '}{name}{'  (disabled)' if off else ''}")
                for custom in agent.custom_tools:
                    print(f"✓ {custom.name}  (answered by the client)")
                return
            action, names = args[0], args[1:]
            if action == "force" and names:
                offered = session.offered_tool_names()
                if unknown := [n for n in names if n not in offered]:
                    raise UsageError(f"%tools: unknown tool {unknown[0]}; available: {', '.join(offered)}")
                self.host.next_tool_choice = tuple(names)
                print(f"the next turn starts by calling {', then '.join(names)}")
                return
            if action not in ("enable", "disable") or not names:
                raise UsageError(
                    "%tools: use `%tools list`, `%tools enable NAME…`, `%tools disable NAME…` or `%tools force NAME…`"
                )
            unknown = sorted(set(names) - set(available))
            if unknown:
                raise UsageError(f"%tools: unknown tool {', '.join(unknown)}; available: {', '.join(available)}")
            deny = set(current.deny)
            deny = deny - set(names) if action == "enable" else deny | set(names)
            others = [t for t in agent.tools if not isinstance(t, ToolFilter)]
            new_filter = [ToolFilter(allow=current.allow, deny=sorted(deny))] if deny or current.allow else []
            updated = self.host.update_agent(tools=[*others, *new_filter])
            print(f"tools {action}d: {', '.join(names)} (agent v{updated.version})")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_magic  # type: ignore[untyped-decorator]
    def permissions(self, line: str) -> None:
        """Show or set the permission preset."""
        args = self._guard("permissions", line)
        if args is None:
            return
        try:
            if not args:
                print(f"permissions: {self.host.session.record.permissions}")
                return
            self.host.session.update(permissions=args[0])  # type: ignore[arg-type]
            print(f"permissions: {args[0]}")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    # ------------------------------------------------------------------------------------------ money

    @line_magic  # type: ignore[untyped-decorator]
    def budget(self, line: str) -> None:
        """Show, set or remove the session's budget (maximum list cost in USD)."""
        args = self._guard("budget", line)
        if args is None:
            return
        try:
            session = self.host.session
            if not args:
                budget = session.budget
                print(f"budget: {format_usd(budget.max_list_cost)}" if budget else "budget: none")
                return
            value = args[0].lstrip("$")
            session.update(budget=None if value.lower() in ("off", "none") else value)
            print(f"budget: {format_usd(session.budget.max_list_cost)}" if session.budget else "budget: none")
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_magic  # type: ignore[untyped-decorator]
    def usage(self, line: str) -> None:
        """Tokens, list cost, budget and time of this session."""
        if self._guard("usage", line) is None:
            return
        session = self.host.session
        u, stats = session.usage, session.stats
        rows = [
            ("input tokens", f"{u.input_tokens:,}"),
            ("output tokens", f"{u.output_tokens:,}"),
            ("cache read tokens", f"{u.cache_read_input_tokens:,}"),
            ("cache write tokens (5m / 1h)", f"{u.cache_creation.ephemeral_5m_input_tokens:,} / "
             f"{u.cache_creation.ephemeral_1h_input_tokens:,}"),
            ("web searches / fetches", f"{u.server_tool_use.web_search_requests} / "
             f"{u.server_tool_use.web_fetch_requests}" if u.server_tool_use else "not tracked"),
            ("list cost", format_cost(u)),
        ]  # fmt: skip
        if session.budget is not None:
            remaining = session.budget.remaining(u.list_cost)
            rows.append(("budget", f"{format_usd(session.budget.max_list_cost)} ({format_usd(remaining)} left)"))
        rows += [
            ("active time", f"{stats.active_seconds:.1f} s"),
            ("session age", f"{stats.duration_seconds:.0f} s"),
            ("model", session.agent.model.id),
        ]
        from IPython.display import Markdown, display

        table = "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
        display(Markdown(f"**Usage of session `{session.id}`**\n\n{table}"))

    # ------------------------------------------------------------------------------------------ session

    @line_magic  # type: ignore[untyped-decorator]
    def session(self, line: str) -> None:
        """Show, start, list or resume sessions, or set the title."""
        args = self._guard("session", line)
        if args is None:
            return
        host = self.host
        try:
            action = args[0] if args else "show"
            if action == "show":
                s = host.session
                print(f"session {s.id}  {s.status}  title={s.title!r}  agent {s.agent.name} v{s.agent.version}")
                print(f"events: {host.engine.store.count_events(s.id)}  list cost: {format_cost(s.usage)}")
            elif action == "new":
                s = host.new_session()
                print(f"new session {s.id}")
            elif action == "list":
                for s in host.engine.sessions.list():
                    mark = "*" if host.has_session and s.id == host.session.id else " "
                    print(f"{mark} {s.id}  {s.status:10}  {s.title or ''}")
            elif action == "resume" and len(args) == 2:
                s = host.resume(args[1])
                print(f"resumed session {s.id} ({host.engine.store.count_events(s.id)} events)")
            elif action == "follow" and len(args) == 2:
                from .follow_view import follow_session

                if said := follow_session(host, args[1]):
                    print(said)
            elif action == "title" and len(args) >= 2:
                host.session.update(title=" ".join(args[1:]))
                print(f"title: {host.session.title}")
            else:
                raise UsageError(HELP["session"])
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_magic  # type: ignore[untyped-decorator]
    def agent(self, line: str) -> None:
        """Show the agent and its pinned version, list versions, or pin one."""
        args = self._guard("agent", line)
        if args is None:
            return
        try:
            session = self.host.session
            action = args[0] if args else "show"
            if action == "show":
                a = session.agent
                latest = self.host.engine.agents.get(a.id).version
                print(f"agent {a.name} ({a.id}) v{a.version} of {latest}; model {a.model.id}")
                print(f"system: {(a.system or '(none)')[:200]}")
            elif action == "versions":
                for a in self.host.engine.agents.versions(session.agent.id):
                    print(f"v{a.version}  {a.updated_at:%Y-%m-%d %H:%M:%S}  model={a.model.id}")
            elif action == "pin" and len(args) == 2:
                try:
                    version = int(args[1])
                except ValueError:
                    raise UsageError(f"%agent pin: a version is a number, not {args[1]!r}") from None
                session.update(agent_version=version)
                print(f"pinned agent v{session.agent.version}")
            else:
                raise UsageError(HELP["agent"])
        except AgentCellError as exc:
            raise self._fail(exc) from None

    @line_magic  # type: ignore[untyped-decorator]
    def mcp(self, line: str) -> None:
        """List, add or remove the agent's MCP servers."""
        args = self._guard("mcp", line)
        if args is None:
            return
        from ..records.agent import McpServer

        try:
            agent = self.host.session.agent
            action = args[0] if args else "list"
            if action == "list":
                if not agent.mcp_servers:
                    print("no MCP servers; add one with %mcp add NAME -- COMMAND …")
                for server in agent.mcp_servers:
                    where = " ".join(server.command) if server.type == "stdio" else server.url
                    print(f"{server.name}  ({server.type})  {where}")
            elif action == "add" and len(args) >= 3:
                name = args[1]
                if args[2] == "--" and len(args) > 3:
                    server = McpServer(name=name, type="stdio", command=args[3:])
                elif args[2] == "--url" and len(args) == 4:
                    server = McpServer(name=name, type="http", url=args[3])
                else:
                    raise UsageError(HELP["mcp"])
                kept = [s for s in agent.mcp_servers if s.name != name]
                updated = self.host.update_agent(mcp_servers=[*kept, server])
                print(f"MCP server {name} added (agent v{updated.version})")
            elif action == "remove" and len(args) == 2:
                kept = [s for s in agent.mcp_servers if s.name != args[1]]
                if len(kept) == len(agent.mcp_servers):
                    raise UsageError(f"%mcp: no server named {args[1]!r}")
                updated = self.host.update_agent(mcp_servers=kept)
                print(f"MCP server {args[1]} removed (agent v{updated.version})")
            else:
                raise UsageError(HELP["mcp"])
        except ValueError as exc:  # pydantic validation of the server
            raise UsageError(f"%mcp: {exc}") from None
        except AgentCellError as exc:
            raise self._fail(exc) from None

    # ------------------------------------------------------------------------------------------ replay

    def _replayer(self, name: str) -> Replayer:
        replayer = self.host.engine.replay
        if replayer is None:
            raise UsageError(f"%{name}: this kernel runs no notebook (no JPY_SESSION_NAME), so it has no recording")
        return replayer

    @line_magic  # type: ignore[untyped-decorator]
    def record(self, line: str) -> None:
        """Re-record: a new conversation whose requests run live and replace the notebook's recording."""
        args = self._guard("record", line)
        if args is None:
            return
        if args:
            raise UsageError(HELP["record"])
        try:
            replayer = self._replayer("record")
            session = self.host.new_session()
        except AgentCellError as exc:
            raise self._fail(exc) from None
        replayer.mode = "record"
        print(f"recording into {replayer.path.name} (new session {session.id}); run the cells from the top")

    @line_magic  # type: ignore[untyped-decorator]
    def replay(self, line: str) -> None:
        """Replay the notebook from its recording (auto: unrecorded requests live), go live (off), or show
        the status."""
        args = self._guard("replay", line)
        if args is None:
            return
        action = args[0] if args else "replay"
        if len(args) > 1 or action not in ("replay", "auto", "off", "status"):
            raise UsageError(HELP["replay"])
        try:
            replayer = self._replayer("replay")
            if action == "status":
                print(replayer.status())
                return
            if action == "off":
                replayer.mode = "off"
                print("replay off: every request runs live")
                return
            replayer.mode = "replay" if action == "replay" else "auto"
            # The recording holds one conversation from its start: replay it again from its first answer.
            replayer.recording.rewind()
            session = self.host.new_session()
            entries = len(replayer.recording.entries)
        except AgentCellError as exc:
            raise self._fail(exc) from None
        print(
            f"replay mode {replayer.mode}: {entries} recorded requests in {replayer.path.name} (new session "
            f"{session.id}); run the cells from the top"
        )

    # ------------------------------------------------------------------------------------------ cells

    @cell_magic("python")  # type: ignore[arg-type]
    def python_cell(self, line: str, cell: str) -> None:
        """Run the cell as Python in the notebook's namespace (the kernel routes it before this is reached)."""
        del line
        assert self.shell is not None
        self.shell.run_cell(cell, store_history=False)

    @cell_magic("agent")  # type: ignore[arg-type]
    def agent_cell(self, line: str, cell: str) -> None:
        """Send the cell to the agent. The input transformer turns %%agent cells into an awaited turn; this
        body runs only when something calls the magic directly."""
        del line, cell
        raise UsageError("%%agent must start a cell of its own (it is routed before execution)")

    @cell_magic("outcome")  # type: ignore[arg-type]
    def outcome_cell(self, line: str, cell: str) -> None:
        """Define an outcome and work toward it (routed before execution, like %%agent)."""
        del line, cell
        raise UsageError("%%outcome must start a cell of its own (it is routed before execution)")

    @line_magic  # type: ignore[untyped-decorator]
    def steer(self, line: str) -> None:
        """Add guidance to the running turn, delivered at its next model request."""
        if self._guard("steer", line) is None:
            return
        from .outcome_magics import steer_line

        print(steer_line(self.host, line))

    @line_magic  # type: ignore[untyped-decorator]
    def threads(self, line: str) -> None:
        """Let the agent spawn threads of other agents, or list the session's threads."""
        args = self._guard("threads", line)
        if args is None:
            return
        from .thread_magics import threads_line

        print(threads_line(self.host, args))

    @line_magic("help")  # type: ignore[arg-type]
    def help_(self, line: str) -> None:
        """List agentcell's magics."""
        del line
        print("agentcell — every cell is a turn of the agent; these magics configure it:")
        for text in HELP.values():
            print("  " + text)
