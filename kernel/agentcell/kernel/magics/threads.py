"""The body of ``%threads``: let the notebook's agent coordinate other agents, and list what it spawned.

``%threads on`` gives the agent ``spawn_thread`` and ``wait_thread`` (see :mod:`agentcell.engine.threads`)
with helpers it defines itself, on its own model unless it names another; ``%threads on AGENT_ID…`` lets it
spawn those saved agents instead; ``%threads off`` takes the tools away. Each is a new agent version, like
``%system``. ``%threads`` (or ``%threads list``) lists the session's threads with their status and usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import AgentCellError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ... import ThreadInfo
    from ..host import NotebookAgent

__all__ = ["THREADS_HELP", "ThreadMagics", "threads_line"]

THREADS_HELP = (
    "%threads [list | on [AGENT_ID…] | off]  let the agent spawn threads of other agents (on: helpers it defines "
    "itself; with ids: those saved agents) and wait for their results; list: the session's threads"
)


@magics_class
class ThreadMagics(MagicGroup):
    TITLE: ClassVar[str] = "Within a turn"
    HELP: ClassVar[dict[str, str]] = {"threads": THREADS_HELP}

    @line_magic
    def threads(self, line: str) -> None:
        """Let the agent spawn threads of other agents, or list the session's threads."""
        args = self._guard("threads", line)
        if args is None:
            return
        print(threads_line(self.host, args))


def threads_line(host: NotebookAgent, args: list[str]) -> str:
    """Carry out ``%threads ARGS``; returns what to print."""
    from ...records.agent import AgentRef, MultiAgent  # loaded when a magic first needs them

    action, rest = (args[0], args[1:]) if args else ("list", [])
    try:
        if action == "list" and not rest:
            return _listing(host)
        if action == "on":
            for agent_id in rest:
                host.engine.agents.get(agent_id)  # an unknown id is refused now, not at the first spawn
            on = {"spawn_threads": True, "agents": [AgentRef(id=a) for a in rest], "inline_agents": not rest}
            current = host.session.agent.multiagent  # what %workflows set stays
            settings = MultiAgent(**on) if current is None else current.model_copy(update=on)
            agent = host.update_agent(multiagent=settings)
            who = f"the agents {', '.join(rest)}" if rest else "helpers it defines"
            return f"threads on: the agent may spawn {who} and wait for them (agent v{agent.version})"
        if action == "off" and not rest:
            current = host.session.agent.multiagent
            kept = current is not None and current.workflow_runs  # %workflows stays on
            off = {"spawn_threads": False, "agents": [], "inline_agents": False}
            agent = host.update_agent(multiagent=current.model_copy(update=off) if kept and current else None)
            return f"threads off (agent v{agent.version})"
    except AgentCellError as exc:
        raise UsageError(f"%threads: {exc}") from None
    raise UsageError(THREADS_HELP)


def _listing(host: NotebookAgent) -> str:
    settings = host.session.agent.multiagent
    enabled = settings is not None and settings.spawn_threads
    threads = host.session.threads
    head = "threads: on" if enabled else "threads: off (`%threads on` lets the agent spawn them)"
    if not threads:
        return f"{head}; none spawned yet" if enabled else head
    return "\n".join([f"{head}; {len(threads)} spawned", *(_describe(t) for t in threads)])


def _describe(thread: ThreadInfo) -> str:
    from ...events import EndTurn

    state = thread.status
    if thread.stop_reason is not None and not isinstance(thread.stop_reason, EndTurn):
        state += f" ({thread.stop_reason.type})"
    usage = thread.usage
    return (
        f"  {thread.id}  {thread.agent_name}  {state}  {usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"
    )
