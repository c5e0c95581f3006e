"""Why a turn (or a thread) stopped: the ``stop_reason`` of ``session.status_idle``, seed 002's union.

Apart from ``events.py`` to keep that module within its size; re-exported from there.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BudgetReached", "EndTurn", "ErrorStop", "Interrupted", "MaxTurns", "RequiresAction", "StopReason"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EndTurn(_Model):
    type: Literal["end_turn"] = "end_turn"


class RequiresAction(_Model):
    type: Literal["requires_action"] = "requires_action"
    event_ids: list[str]
    """The events waiting for an answer (``agent.custom_tool_use`` or tool uses awaiting confirmation)."""


class BudgetReached(_Model):
    type: Literal["budget_reached"] = "budget_reached"


class MaxTurns(_Model):
    type: Literal["max_turns"] = "max_turns"


class Interrupted(_Model):
    type: Literal["interrupted"] = "interrupted"


class ErrorStop(_Model):
    type: Literal["error"] = "error"
    message: str


StopReason: TypeAlias = Annotated[
    EndTurn | RequiresAction | BudgetReached | MaxTurns | Interrupted | ErrorStop,
    Field(discriminator="type"),
]
