"""``%agent acp …`` and ``%agent local``: who answers this notebook's messages.

``%agent acp NAME`` starts one of the agents agentcell knows (``claude``, ``codex``, ``gemini``,
``opencode``, ``agentcell``) at the next turn, ``%agent acp -- COMMAND [ARGS…]`` any other ACP agent; ``%agent acp``
shows which one answers and its own settings (model, mode…), ``%agent acp set ID VALUE`` changes one before
the next message; ``%agent local`` goes back to agentcell's own engine.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from ...acp_client import ExternalAgent
    from ..host import NotebookAgent

__all__ = ["EXTERNAL_HELP", "describe", "external_agent", "local_agent"]

EXTERNAL_HELP = (
    "%agent acp NAME | %agent acp -- COMMAND [ARGS…] | %agent acp [set ID VALUE] | %agent local  an ACP agent "
    "answers this notebook's messages (NAME: claude, codex, gemini, opencode or agentcell), with the same cards, "
    "approvals and budget; `%agent acp` shows it and its own settings, `set` changes one, `%agent local` returns "
    "to agentcell's own engine"
)


def external_agent(host: NotebookAgent, args: list[str]) -> None:
    """Run ``%agent acp …`` (``args`` after ``acp``) or ``%agent local`` (``args`` None)."""
    from ...acp_client import KNOWN_AGENTS, ExternalAgent

    if not args:
        _show(host)
        return
    if args[0] == "set":
        _set(host, args[1:])
        return
    if args[0] == "--":
        command = args[1:]
        if not command:
            raise UsageError("%agent acp --: give the command that starts the agent, e.g. %agent acp -- codex-acp")
        name = command[0].rsplit("/", 1)[-1]
    elif len(args) == 1 and args[0] in KNOWN_AGENTS:
        name = args[0]
        command = list(KNOWN_AGENTS[name].command)
    else:
        known = ", ".join(KNOWN_AGENTS)
        raise UsageError(f"%agent acp: unknown agent {args[0]!r}; known: {known}, or %agent acp -- COMMAND [ARGS…]")
    replays = _replays(host, name)
    if shutil.which(command[0]) is None and not replays:
        hint = KNOWN_AGENTS[name].install if name in KNOWN_AGENTS and args[0] != "--" else ""
        raise UsageError(f"%agent acp: {command[0]} is not installed (not on PATH)" + (f"; {hint}" if hint else ""))
    host.use_external(ExternalAgent(name, command))
    print(f"{name} answers this notebook's messages from the next one (`%agent local` goes back)")
    if replays and shutil.which(command[0]) is None:
        print(f"{command[0]} is not installed here: its turns are replayed from the notebook's recording")


def _replays(host: NotebookAgent, name: str) -> bool:
    """Whether the notebook's recording answers ``name``'s turns in the current replay mode."""
    replay = host.exchange_replay
    return replay is not None and replay.mode in ("replay", "auto") and replay.recording.knows(name)


def local_agent(host: NotebookAgent) -> None:
    was = host.external
    host.use_external(None)
    print(f"agentcell's own engine answers again{f' ({was.name} stopped)' if was is not None else ''}")


def _set(host: NotebookAgent, args: list[str]) -> None:
    from ...errors import ExternalAgentError

    agent = host.external
    if agent is None:
        raise UsageError("%agent acp set: no ACP agent answers this notebook; choose one with %agent acp NAME")
    if len(args) != 2:
        raise UsageError("%agent acp set ID VALUE: one of the agent's settings (`%agent acp` lists them)")
    try:
        agent.want(args[0], args[1])
    except ExternalAgentError as exc:
        raise UsageError(f"%agent acp set: {exc}") from None
    print(f"{agent.name}: {args[0]} = {args[1]} from the next message")


def _show(host: NotebookAgent) -> None:
    agent = host.external
    if agent is None:
        print("agentcell's own engine answers this notebook; `%agent acp NAME` hands it to an ACP agent")
        return
    print(describe(agent))
    for option in agent.options:
        values = ", ".join(getattr(o, "value", "?") for o in option.options)
        print(f"  {option.id} = {option.current_value}  ({values})")


def describe(agent: ExternalAgent) -> str:
    """Which external agent answers the notebook: its command, and its session (the one it runs, or the one
    it loads when it starts again after a kernel restart)."""
    if agent.running:
        state = f"running, session {agent.session_id}"
    elif agent.resume:
        state = f"starts at the next message, loading its session {agent.resume}"
    else:
        state = "starts at the next message"
    return f"{agent.agent_info} answers this notebook ({' '.join(agent.command)}; {state})"
