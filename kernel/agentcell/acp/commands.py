"""The notebook's magics that make sense in an editor, as ACP slash commands.

A prompt whose text starts with ``/name`` of one of these runs it instead of a turn; its answer is an
agent message (which the model never sees). ``/outcome`` starts a turn that works toward an outcome.
The session's skills are commands too: ``/name`` of a skill starts a turn with that skill activated
(``/skills add PATH`` attaches a skill folder; the project's own are only offered). Any other text
starting with ``/`` (a path, say) goes to the model as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from .. import ModelConfig, OutcomeSpec
from .._format import format_cost, format_usd
from ..errors import AgentCellError, InvalidInputError, SkillFormatError
from ..skills.attach import attach, detach, listing, session_pins
from ..tools.approvals import describe_rules
from .config import PERMISSIONS, model_config, model_options

if TYPE_CHECKING:
    from .. import Engine, Session

__all__ = ["COMMANDS", "CommandResult", "available_commands", "parse_command", "run_command"]

COMMANDS: dict[str, tuple[str, str | None]] = {
    "model": ("Show or set this session's model", "model id, e.g. anthropic:claude-sonnet-5-5"),
    "permissions": ("Show or set the permission preset", "read-only | workspace-write | danger-full-access"),
    "budget": ("Show or set the session's budget (maximum list cost in USD)", "USD amount, or off"),
    "usage": ("Tokens, list cost, budget and time of this session", None),
    "outcome": (
        "Work until a grader finds the description meets the rubric",
        "description --- rubric",
    ),
    "system": ("Show or set the system prompt (a new agent version)", "text, or --clear"),
    "threads": ("Let the agent spawn threads of helpers it defines (on) or of saved agents (on ID…)", "on | off"),
    "skills": ("List the agent's skills and the project's, or attach or detach one", "add PATH | remove NAME"),
    "title": ("Set the session's title", "text"),
    "session": ("This session's id (resume it in a notebook with %session resume ID)", None),
    "help": ("List these commands", None),
}


def available_commands(session: Session | None = None) -> list[AvailableCommand]:
    """The commands, then one per skill of the session (a skill named like a command is left to it)."""
    commands = [
        AvailableCommand(
            name=name,
            description=description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
        )
        for name, (description, hint) in COMMANDS.items()
    ]
    for pin in session_pins(session) if session is not None else []:
        if pin.name not in COMMANDS:
            hint = UnstructuredCommandInput(hint="what to do with the skill")
            commands.append(
                AvailableCommand(
                    name=pin.name, description=f"Skill: {pin.description}", input=AvailableCommandInput(root=hint)
                )
            )
    return commands


def parse_command(text: str) -> tuple[str, str] | None:
    """``(name, arguments)`` for a prompt that invokes one of :data:`COMMANDS`, else None."""
    if not text.startswith("/"):
        return None
    head, _, rest = text[1:].partition(" ")
    name, newline, tail = head.partition("\n")
    if name not in COMMANDS:
        return None
    return name, (tail + "\n" + rest if newline else rest).strip()


@dataclass(frozen=True, slots=True)
class CommandResult:
    reply: str = ""
    turn: OutcomeSpec | None = None
    """A turn to run instead of replying (``/outcome``)."""
    config_changed: bool = False
    commands_changed: bool = False
    """The session's skills changed: the client is told the commands again."""


def _outcome(arguments: str) -> OutcomeSpec:
    lines = arguments.splitlines()
    if "---" in (line.strip() for line in lines):
        cut = next(i for i, line in enumerate(lines) if line.strip() == "---")
        description, rubric = "\n".join(lines[:cut]), "\n".join(lines[cut + 1 :])
    else:
        description, _, rubric = arguments.partition(" --- ")
    if not description.strip() or not rubric.strip():
        raise InvalidInputError("write /outcome DESCRIPTION --- RUBRIC (or the rubric after a line ---)")
    return OutcomeSpec(description.strip(), rubric.strip())


def _usage(session: Session) -> str:
    u, stats = session.usage, session.stats
    rows = [
        ("input tokens", f"{u.input_tokens:,}"),
        ("output tokens", f"{u.output_tokens:,}"),
        ("cache read tokens", f"{u.cache_read_input_tokens:,}"),
        ("cache write tokens", f"{u.cache_creation_input_tokens:,}"),
        ("list cost", format_cost(u)),
    ]
    if session.budget is not None:
        left = session.budget.remaining(u.list_cost)
        rows.append(("budget", f"{format_usd(session.budget.max_list_cost)} ({format_usd(left)} left)"))
    rows += [("active time", f"{stats.active_seconds:.1f} s"), ("runtime", f"{stats.runtime_seconds:.1f} s")]
    rows += [("model", session.agent.model.id)]
    return f"**Usage of session `{session.id}`**\n\n| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def _threads(engine: Engine, session: Session, args: list[str]) -> str:
    action, rest = (args[0], args[1:]) if args else ("", [])
    if action == "on":
        for agent_id in rest:
            engine.agents.get(agent_id)  # an unknown id is refused now, not at the first spawn
        settings = {"agents": [{"id": a} for a in rest], "inline_agents": not rest}
        version = _set_agent(engine, session, multiagent=settings)
        who = f"the agents {', '.join(rest)}" if rest else "helpers it defines"
        return f"threads on: the agent may spawn {who} and wait for them (agent v{version})"
    if action == "off" and not rest:
        return f"threads off (agent v{_set_agent(engine, session, multiagent=None)})"
    enabled = session.agent.multiagent is not None and session.agent.multiagent.spawn_threads
    lines = [f"threads: {'on' if enabled else 'off'}; {len(session.threads)} spawned"]
    lines += [f"- `{t.id}` {t.agent_name}: {t.status}" for t in session.threads]
    return "\n".join(lines)


def _set_agent(engine: Engine, session: Session, **changes: object) -> int:
    agent = engine.agents.update(session.agent.id, **changes)  # type: ignore[arg-type]
    if agent.version != session.agent.version:
        session.update(agent_version=agent.version)
    return agent.version


def _skills(engine: Engine, session: Session, arguments: str) -> CommandResult:
    action, _, rest = arguments.partition(" ")
    rest = rest.strip()
    workspace = session.workspace
    if not action:
        lines = listing(engine, session, workspace, add="/skills add PATH", place="the workspace")
        return CommandResult("\n".join(lines))
    if action == "add" and rest:
        target = Path(rest).expanduser()
        try:
            skill, version = attach(engine, session, target if target.is_absolute() else workspace / target)
        except SkillFormatError as exc:
            return CommandResult("/skills: the folder cannot be loaded as a skill:\n" + "\n".join(exc.diagnostics))
        said = f"skill {skill.name} v{skill.version} attached (agent v{version}): /{skill.name} activates it"
        return CommandResult("\n".join([said, *(str(d) for d in skill.diagnostics)]), commands_changed=True)
    if action == "remove" and rest:
        version = detach(engine, session, rest)
        return CommandResult(f"skill {rest.lstrip('/$')} removed (agent v{version})", commands_changed=True)
    raise InvalidInputError("write /skills, /skills add PATH or /skills remove NAME")


def run_command(engine: Engine, session: Session, name: str, arguments: str) -> CommandResult:
    """Run ``/name arguments``; a mistake is the reply (one line saying what to write), never an error."""
    try:
        return _run(engine, session, name, arguments)
    except AgentCellError as exc:
        return CommandResult(f"/{name}: {exc}")


def _run(engine: Engine, session: Session, name: str, arguments: str) -> CommandResult:
    match name:
        case "model":
            if not arguments:
                listed = ", ".join(o.value for o in model_options(session.agent.model.id))
                return CommandResult(f"model: {session.agent.model.id} (configured: {listed})")
            engine.providers.resolve(ModelConfig(id=arguments))  # an unknown provider fails here, clearly
            version = _set_agent(engine, session, model=model_config(arguments))
            return CommandResult(f"model: {arguments} (agent v{version})", config_changed=True)
        case "permissions":
            if not arguments:
                rules = describe_rules(session.approvals.remembered, "for this session")
                return CommandResult(f"permissions: {session.record.permissions}\n{rules}")
            if arguments not in PERMISSIONS:
                raise InvalidInputError(f"unknown preset {arguments!r}; use one of {', '.join(PERMISSIONS)}")
            session.update(permissions=arguments)
            return CommandResult(f"permissions: {arguments}", config_changed=True)
        case "budget":
            if arguments:
                value = arguments.lstrip("$")
                session.update(budget=None if value.lower() in ("off", "none") else value)
            budget = session.budget
            shown = format_usd(budget.max_list_cost) if budget else "none"
            return CommandResult(f"budget: {shown}", config_changed=bool(arguments))
        case "usage":
            return CommandResult(_usage(session))
        case "outcome":
            return CommandResult(turn=_outcome(arguments))
        case "system":
            if not arguments:
                return CommandResult(session.agent.system or "(no system prompt)")
            text = None if arguments == "--clear" else arguments
            version = _set_agent(engine, session, system=text)
            return CommandResult(f"system prompt {'set' if text else 'cleared'} (agent v{version})")
        case "threads":
            return CommandResult(_threads(engine, session, arguments.split()))
        case "skills":
            return _skills(engine, session, arguments)
        case "title":
            session.update(title=arguments or None)
            return CommandResult(f"title: {session.title or '(none)'}")
        case "session":
            spent = format_cost(session.usage)
            return CommandResult(
                f"session `{session.id}`: agent {session.agent.name} v{session.agent.version}, "
                f"{len(session.events())} events, {spent}. In a notebook: `%session resume {session.id}`"
            )
    lines = [f"- `/{n}`{' ' + h if h else ''}: {d}" for n, (d, h) in COMMANDS.items()]
    return CommandResult("agentcell commands:\n" + "\n".join(lines))
