"""The notebook's session and its money: ``%session``, ``%budget``, ``%usage``."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ..._format import format_cache_saving, format_cost, format_usd
from ...errors import AgentCellError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ...sessions import Session

__all__ = ["SessionMagics"]


@magics_class
class SessionMagics(MagicGroup):
    TITLE: ClassVar[str] = "The session"
    HELP: ClassVar[dict[str, str]] = {
        "budget": "%budget [USD | off]  the session's maximum list cost",
        "session": "%session [show | new | list | resume ID | title TEXT | follow ID | follow stop]  the notebook's "
        "session; follow: a read-only live view of a session another kernel drives",
        "usage": "%usage  tokens, list cost, budget and time of this session",
    }

    @line_magic
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

    @line_magic
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
        rows += _cache_rows(session)
        rows.append(("context window", _window_row(session)))
        if session.budget is not None:
            remaining = session.budget.remaining(u.list_cost)
            rows.append(("budget", f"{format_usd(session.budget.max_list_cost)} ({format_usd(remaining)} left)"))
        rows += [
            ("active time", f"{stats.active_seconds:.1f} s"),
            ("session age", f"{stats.duration_seconds:.0f} s"),
            ("model", session.agent.model.id),
        ]
        from IPython.display import display

        from ...render.markdown import escape_prose, not_math

        # Money kept from every viewer's math; text/plain for consoles, nbconvert and `agentcell run`.
        table = "| | |\n|---|---|\n" + "\n".join(f"| {k} | {escape_prose(v)} |" for k, v in rows)
        width = max(len(k) for k, _ in rows)
        plain = "\n".join([f"Usage of session {session.id}", *(f"  {k:<{width}}  {v}" for k, v in rows)])
        markdown = f"**Usage of session `{session.id}`**\n\n{table}"
        display({"text/markdown": not_math(markdown), "text/plain": plain}, raw=True)

    @line_magic
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
                from ...errors import SessionNotFoundError

                try:
                    s = host.resume(args[1])
                except SessionNotFoundError:
                    raise UsageError(
                        f"%session resume: no session with id {args[1]!r} in this database; `%session list` shows "
                        "the ones there are"
                    ) from None
                print(f"resumed session {s.id} ({host.engine.store.count_events(s.id)} events)")
            elif action == "follow" and len(args) == 2:
                from ...render.follow_view import follow_session

                if said := follow_session(host, args[1]):
                    print(said)
            elif action == "title" and len(args) >= 2:
                host.session.update(title=" ".join(args[1:]))
                print(f"title: {host.session.title}")
            else:
                raise UsageError(self.HELP["session"])
        except AgentCellError as exc:
            raise self._fail(exc) from None


def _window_row(session: Session) -> str:
    """How full the model's context window was at the latest request (the conversation compacts past
    the model's ``compact_at`` share)."""
    from ...engine.compaction import GAUGE_EVENT_TYPES, window_gauge

    gauge = window_gauge(session.events(types=GAUGE_EVENT_TYPES))
    if gauge is None:
        return "unknown (no request yet, or the model's window is not known: set context_window)"
    return f"{gauge.describe()}, at the latest request or compaction (compacts at {session.agent.model.compact_at:.0%})"


def _cache_rows(session: Session) -> list[tuple[str, str]]:
    """What the prompt cache saved, for the session and its latest turn (none when it changed nothing)."""
    from ...events import SpanModelRequestEnd, UserMessage
    from ...usage import Usage

    latest = Usage()
    for event in session.events(types=("user.message", "span.model_request_end")):
        if isinstance(event, UserMessage):
            latest = Usage()
        elif isinstance(event, SpanModelRequestEnd):
            latest = latest + event.model_usage
    rows: list[tuple[str, str]] = []
    for label, usage in (("prompt cache, session", session.usage), ("prompt cache, latest turn", latest)):
        saving = format_cache_saving(usage)
        if saving:
            rows.append((label, f"{format_cost(usage)} ({saving})"))
    return rows
