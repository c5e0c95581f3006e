"""A workflow run's plan: data (JSON-compatible) naming steps over agents, with their prompts and options.

::

    {"name": "review", "inputs": {"topic": "tides"},
     "steps": [
       {"id": "draft", "agent": {"id": "agent_…", "version": 2}, "prompt": "Draft {{inputs.topic}}"},
       {"id": "reviews", "agent": {"inline": {"name": "critic", "system": "…"}},
        "for_each": ["style", "facts"], "prompt": "Review for {{item}}:\\n{{steps.draft.output}}",
        "depends_on": ["draft"], "on_error": "continue"},
       {"id": "final", "agent": {"id": "agent_…"}, "prompt": "Revise:\\n{{steps.reviews.outputs}}",
        "depends_on": ["reviews"], "outcome": {"rubric": "…", "max_iterations": 2}}]}

These models check each field's shape; what needs the whole plan and the session (the graph, the templates,
which agents the session allows) is checked by ``engine/workflows/validate.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .agent import MAX_SYSTEM_CHARS

__all__ = [
    "MAX_ITEMS",
    "MAX_STEPS",
    "STEP_ID_PATTERN",
    "InlineAgentSpec",
    "StepAgent",
    "StepOutcome",
    "WorkflowPlan",
    "WorkflowStep",
]

MAX_STEPS = 500
MAX_ITEMS = 1000
"""The most items one ``for_each`` step may have."""
STEP_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InlineAgentSpec(_Model):
    """An agent the plan defines for itself, not saved: allowed only when the session's agent may."""

    name: str = Field(min_length=1, max_length=256)
    model: str | None = Field(default=None, min_length=1)
    """A model id; the session's agent's model when omitted."""
    system: str | None = Field(default=None, max_length=MAX_SYSTEM_CHARS)
    description: str | None = Field(default=None, max_length=2048)


class StepAgent(_Model):
    """Which agent runs a step: a predefined (saved) one by id, or one defined inline."""

    id: str | None = Field(default=None, min_length=1)
    version: int | None = Field(default=None, ge=1)
    """The saved version; the one the session allows when omitted."""
    inline: InlineAgentSpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> StepAgent:
        if (self.id is None) == (self.inline is None):
            raise ValueError('give either "id" (a saved agent) or "inline" (an agent defined here)')
        if self.inline is not None and self.version is not None:
            raise ValueError('"version" names a saved agent\'s version; an inline agent has none')
        return self


class StepOutcome(_Model):
    """Grade the step's work against a rubric, revising until the grader is satisfied (the outcome loop)."""

    rubric: str = Field(min_length=1)
    max_iterations: int = Field(default=3, ge=1, le=20)
    grader_model: str | None = Field(default=None, min_length=1)


class WorkflowStep(_Model):
    id: str = Field(pattern=STEP_ID_PATTERN)
    agent: StepAgent
    prompt: str = Field(min_length=1)
    """A template: ``{{inputs.NAME}}``, ``{{item}}``, ``{{steps.ID.output}}``, ``{{steps.ID.outputs}}``
    (with ``.field`` or ``.0`` after any of them to reach inside a JSON value)."""
    depends_on: list[str] = []
    for_each: list[Any] | str | None = None
    """The items the step runs once for each (concurrently): a list, or one template naming a list
    (``{{inputs.files}}``, ``{{steps.ID.output}}``)."""
    output_schema: dict[str, Any] | None = None
    """A JSON schema: the step's output is then the JSON value its final message holds, validated."""
    max_turns: int | None = Field(default=None, ge=1, le=1000)
    """The most model requests each of its items may make; the session's limit when omitted."""
    outcome: StepOutcome | None = None
    on_error: Literal["fail", "continue"] = "fail"
    """``fail``: a failing item fails the run; ``continue``: its output is an explicit error value."""


class WorkflowPlan(_Model):
    name: str = Field(min_length=1, max_length=256)
    inputs: dict[str, Any] = {}
    steps: list[WorkflowStep] = Field(min_length=1, max_length=MAX_STEPS)
    max_concurrency: int | None = Field(default=None, ge=1, le=64)
    """The most step items running at the same time; the engine's default when omitted."""
    budget: str | int | float | None = None
    """The run's own ceiling on list cost in USD (the session's budget holds too)."""
