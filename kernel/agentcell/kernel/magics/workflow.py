"""``%%workflow`` and ``%workflows``: run a plan of steps over agents as one turn, and let plans run.

``%%workflow [max_concurrency=N] [budget=USD] [fresh] [key=value …]`` — the cell's body is a plan, as YAML
or as JSON (JSON is YAML, so one parser reads both). Options other than the three named are the run's
inputs (``topic=sea``: ``{{inputs.topic}}``). The cell runs the plan as one turn, rendered like any agent
cell (each step item is a thread of the turn), then prints the run: its status, each step's, and the
output::

    %%workflow topic=tides
    name: explain
    steps:
      - id: draft
        agent: {inline: {name: writer}}
        prompt: "Explain {{inputs.topic}} in two sentences."
      - id: title
        agent: {inline: {name: titler}}
        depends_on: [draft]
        prompt: "A title for:\\n{{steps.draft.output}}"

Running the cell again reuses the steps whose agent, prompt and options did not change (``fresh`` runs
everything live). ``%workflows on [AGENT_ID…]`` lets the notebook's agent run plans (of helpers defined
inline in the plan, or with ids, of those saved agents) and gives it the ``start_workflow_run`` tool;
``%workflows off`` takes that away; ``%workflows`` lists the session's runs. The router sends a ``%%workflow``
cell to :meth:`NotebookAgent.workflow_cell`; the cell magic itself only says so when called directly.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, line_magic, magics_class

from ...errors import AgentCellError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ... import WorkflowRun
    from ..host import NotebookAgent

__all__ = [
    "WORKFLOWS_HELP",
    "WORKFLOW_HELP",
    "WorkflowCell",
    "WorkflowMagics",
    "parse_workflow_cell",
    "run_summary",
    "run_workflow_cell",
    "workflows_line",
]

WORKFLOW_HELP = (
    "%%workflow [max_concurrency=N] [budget=USD] [fresh] [NAME=VALUE …]  run the cell's plan (YAML or JSON: name, "
    "steps with id, agent, prompt, depends_on, for_each …); NAME=VALUE are its inputs; fresh: reuse no step"
)
WORKFLOWS_HELP = (
    "%workflows [list | on [AGENT_ID…] | off]  let plans run (on: over helpers they define inline; with ids: "
    "over those saved agents) and give the agent start_workflow_run; list: the session's runs"
)

_OPTIONS = ("max_concurrency", "budget")


@magics_class
class WorkflowMagics(MagicGroup):
    TITLE: ClassVar[str] = "Within a turn"
    HELP: ClassVar[dict[str, str]] = {"workflow": WORKFLOW_HELP, "workflows": WORKFLOWS_HELP}

    @cell_magic("workflow")  # type: ignore[arg-type]
    def workflow_cell(self, line: str, cell: str) -> None:
        """Run the cell's workflow plan (routed before execution, like %%agent)."""
        del line, cell
        raise UsageError("%%workflow must start a cell of its own (it is routed before execution)")

    @line_magic
    def workflows(self, line: str) -> None:
        """Let plans run and the agent start them, or list the session's workflow runs."""
        args = self._guard("workflows", line)
        if args is None:
            return
        print(workflows_line(self.host, args))


class WorkflowCell:
    """What a ``%%workflow`` cell asks for: the plan and how to run it."""

    def __init__(self, plan: dict[str, Any], *, inputs: dict[str, str], options: dict[str, Any]) -> None:
        self.plan = plan
        self.inputs = inputs
        self.options = options


def parse_workflow_cell(line: str, body: str) -> WorkflowCell:
    """The run a ``%%workflow`` cell asks for; UsageError says what is wrong with it (nothing has run)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%%workflow: {exc}") from None
    options: dict[str, Any] = {}
    inputs: dict[str, str] = {}
    for word in words:
        if word == "fresh":
            options["resume"] = False
            continue
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(f"%%workflow: expected fresh or key=value, got {word!r}; {WORKFLOW_HELP}")
        if key == "max_concurrency":
            try:
                options[key] = int(value)
            except ValueError:
                raise UsageError(f"%%workflow: max_concurrency is a whole number, not {value!r}") from None
        elif key in _OPTIONS:
            options[key] = value
        else:
            inputs[key] = value
    if not body.strip():
        raise UsageError(f"%%workflow: write the plan (YAML or JSON) in the cell; {WORKFLOW_HELP}")
    import yaml  # loaded with the first %%workflow cell, not with the kernel

    from ... import _yaml  # with limits on size, depth and aliases

    try:
        plan = _yaml.load(body)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise UsageError(f"%%workflow: the plan is not valid YAML or JSON{at}: {problem}") from None
    if not isinstance(plan, dict):
        raise UsageError(f"%%workflow: the plan is a mapping with name and steps, not {type(plan).__name__}")
    return WorkflowCell(plan, inputs=inputs, options=options)


async def run_workflow_cell(host: NotebookAgent, line: str, body: str) -> None:
    """Run a ``%%workflow`` cell as one turn, rendered like any agent cell, then print how the run ended; a
    run that failed fails the cell (after the summary says which step and why)."""
    from ...errors import TurnError
    from ...events import ErrorStop

    cell = parse_workflow_cell(line, body)
    run = await host.workflow(cell)
    if run is not None:
        print(run_summary(run))
    turn = host.session.last_turn
    if run is not None and turn is not None and isinstance(turn.stop_reason, ErrorStop):
        raise TurnError(turn.stop_reason.message)  # a failed run fails its cell, as a failed turn does


def run_summary(run: WorkflowRun) -> str:
    """The run in a few lines: its status, each step's (items, tokens, reused), and its output."""
    lines = [f"workflow {run.name!r} {run.status}: {run.ran} step items ran, {run.reused} reused ({run.id})"]
    for step in run.steps:
        items = f" ({len(step.items)} items)" if step.info.for_each else ""
        usage = step.usage
        state = "reused" if step.reused else step.status
        lines.append(
            f"  {step.id}{items}  {state}  {usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"
            + (f"  {step.error}" if step.error else "")
        )
    if run.error:
        lines.append(f"error: {run.error}")
    if run.status == "completed":
        output = run.output if isinstance(run.output, str) else json.dumps(run.output, ensure_ascii=False, indent=1)
        lines.append(f"output: {output}")
    if run.outcome is not None:
        lines.append(
            f"outcome {run.outcome.status}" + (f": {run.outcome.explanation}" if run.outcome.explanation else "")
        )
    return "\n".join(lines)


def workflows_line(host: NotebookAgent, args: list[str]) -> str:
    """Carry out ``%workflows ARGS``; returns what to print."""
    from ...records.agent import AgentRef, MultiAgent  # loaded when a magic first needs them

    action, rest = (args[0], args[1:]) if args else ("list", [])
    try:
        if action == "list" and not rest:
            return _listing(host)
        if action in ("on", "off") and (action == "on" or not rest):
            for agent_id in rest:
                host.engine.agents.get(agent_id)  # an unknown id is refused now, not when a plan names it
            current = host.session.agent.multiagent
            base = current if current is not None else MultiAgent(spawn_threads=False)
            settings = base.model_copy(
                update={
                    "workflow_runs": action == "on",
                    "workflow_agents": [AgentRef(id=a) for a in rest],
                    "workflow_inline_agents": action == "on" and not rest,
                }
            )
            agent = host.update_agent(multiagent=settings)
            if action == "off":
                return f"workflows off (agent v{agent.version})"
            who = f"the agents {', '.join(rest)}" if rest else "helpers the plan defines"
            return f"workflows on: plans may run {who}; the agent may start runs too (agent v{agent.version})"
    except AgentCellError as exc:
        raise UsageError(f"%workflows: {exc}") from None
    raise UsageError(WORKFLOWS_HELP)


def _listing(host: NotebookAgent) -> str:
    settings = host.session.agent.multiagent
    head = (
        "workflows: on"
        if settings is not None and settings.workflow_runs
        else "workflows: off (`%workflows on` lets plans run)"
    )
    runs = host.session.workflow_runs
    if not runs:
        return f"{head}; no runs yet"
    described = (
        f"  {r.id}  {r.name}  {r.status}  {r.ran} ran, {r.reused} reused  "
        f"{r.usage.input_tokens:,} in / {r.usage.output_tokens:,} out tokens"
        for r in runs
    )
    return "\n".join([f"{head}; {len(runs)} runs", *described])
