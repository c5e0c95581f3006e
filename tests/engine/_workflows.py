"""What the workflow tests share: agents that tell their requests apart, and the plan from issue 20."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, Session
from agentcell.engine.outcomes import GRADER_SYSTEM
from agentcell.providers.base import ModelRequest, TextPart

from .conftest import engine_over, verdict

Script = Callable[[ModelRequest], ScriptedResponse]


def task_of(request: ModelRequest) -> str:
    """The text of the request's first user message: the task a step's thread was given."""
    first = request.messages[0]
    return "".join(p.text for p in first.content if isinstance(p, TextPart))


def last_text(request: ModelRequest) -> str:
    """The text of the request's last user message."""
    last = request.messages[-1]
    return "".join(p.text for p in last.content if isinstance(p, TextPart))


def say(text: str) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedText(text=text)])


def by_system(**answers: Script) -> Script:
    """A script that answers each request by its system prompt (the agent that sent it)."""

    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system == GRADER_SYSTEM:
            return answers.get("grader", lambda _: verdict("satisfied", "meets the rubric"))(request)
        key = (request.system or "").split(":")[0]
        return answers[key](request)

    return script


def workflow_engine(
    db: Path, workspace: Path, script: Script, *, inline: bool = True, **options: Any
) -> tuple[Engine, ScriptedProvider, Session, dict[str, str]]:
    """An engine with two saved agents (drafter, reviser) a run's plan may use, and a session whose agent
    may start runs (and define agents inline, unless ``inline`` is False)."""
    engine, provider, _ = engine_over(db, workspace, script, **options)
    drafter = engine.agents.create(name="drafter", model="scripted", system="drafter: you draft")
    reviser = engine.agents.create(name="reviser", model="scripted", system="reviser: you revise")
    lead = engine.agents.create(
        name="lead",
        model="scripted",
        system="lead",
        multiagent={
            "spawn_threads": False,
            "workflow_runs": True,
            "workflow_agents": [{"id": drafter.id}, {"id": reviser.id}],
            "workflow_inline_agents": inline,
        },
    )
    session = engine.sessions.create(agent=lead.id)
    return engine, provider, session, {"drafter": drafter.id, "reviser": reviser.id, "lead": lead.id}


def review_plan(agents: dict[str, str], *, topic: str = "tides") -> dict[str, Any]:
    """The plan of issue 20: draft, three reviews of the draft in parallel, then a graded revision."""
    return {
        "name": "review",
        "inputs": {"topic": topic},
        "steps": [
            {"id": "draft", "agent": {"id": agents["drafter"], "version": 1}, "prompt": "Draft {{inputs.topic}}"},
            {
                "id": "reviews",
                "agent": {"inline": {"name": "critic", "model": "scripted", "system": "critic: you review"}},
                "for_each": ["style", "facts", "tone"],
                "prompt": "Review the draft for {{item}}:\n{{steps.draft.output}}",
                "depends_on": ["draft"],
            },
            {
                "id": "final",
                "agent": {"id": agents["reviser"]},
                "prompt": "Revise:\n{{steps.reviews.outputs}}",
                "depends_on": ["reviews"],
                "outcome": {"rubric": "mentions every review", "max_iterations": 2},
            },
        ],
    }
