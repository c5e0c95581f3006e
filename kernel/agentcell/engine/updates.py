"""Changing a session: what an update changes, the ``session.updated`` it emits, and budgets from user input.

:func:`apply_update` validates every argument before anything is written (a bad one raises and changes
nothing), stores the new record and the event in one transaction, and shows the event to the listeners.
``session.updated`` carries only what changed; ``agent`` is the full snapshot, present when the tools or
MCP servers changed.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from .._validation import check_metadata
from ..errors import InvalidInputError
from ..events import SessionStatusTerminated, SessionUpdated
from ..records.agent import Agent, check_overrides, materialize
from ..records.common import PERMISSION_PRESETS, UNSET, PermissionPreset, Unset, utc_now
from ..records.session import ResolvedMultiAgent
from ..records.skill import check_session_cap
from ..usage import Budget
from .deps import AgentSource, SkillSource
from .log import SessionLog

__all__ = ["apply_update", "parse_budget", "resolve_multiagent", "terminate"]

MAX_TITLE_CHARS = 512
MAX_BUDGET_USD = Decimal(1_000_000)


def parse_budget(budget: object) -> Budget | None:
    """A budget from what a user wrote: an amount in USD (``"0.50"``, ``2``, a Decimal), a Budget, or None."""
    if budget is None:
        return None
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, str | int | float | Decimal):
        raise InvalidInputError(f"a budget is an amount in USD such as '0.50', not {budget!r}")
    try:
        amount = Decimal(str(budget))
    except InvalidOperation:
        raise InvalidInputError(f"a budget is an amount in USD such as '0.50', not {budget!r}") from None
    if not amount.is_finite() or amount <= 0:
        raise InvalidInputError(f"a budget must be more than 0 USD, not {budget!r}; use None for no budget")
    if amount > MAX_BUDGET_USD:
        # 1e309 is a finite Decimal but no float: a cap past any real spend is no cap; say so instead.
        raise InvalidInputError(
            f"a budget is at most {MAX_BUDGET_USD:,} USD, not {budget!r}; for no budget use None (%budget off)"
        )
    return Budget(max_list_cost=amount)


def resolve_multiagent(agent: Agent, agents: AgentSource) -> ResolvedMultiAgent | None:
    """The agent's multi-agent settings with its helpers' full definitions, for a session to snapshot;
    None for a single-threaded agent (no threads, no advisor, no workflow runs)."""
    settings = agent.multiagent
    if settings is None and agent.advisor is None:
        return None
    return ResolvedMultiAgent(
        spawn_threads=settings is not None and settings.spawn_threads,
        inline_agents=settings is not None and settings.inline_agents,
        agents=[agents.get(ref.id, ref.version) for ref in (settings.agents if settings else [])],
        advisor=agent.advisor is not None,
        workflow_runs=settings is not None and settings.workflow_runs,
        workflow_inline_agents=settings is not None and settings.workflow_inline_agents,
        workflow_agents=[agents.get(ref.id, ref.version) for ref in (settings.workflow_agents if settings else [])],
    )


def check_title(title: str | None) -> str | None:
    if title is not None and len(title) > MAX_TITLE_CHARS:
        raise InvalidInputError(f"a session title is at most {MAX_TITLE_CHARS} characters")
    return title


def apply_update(
    log: SessionLog,
    agents: AgentSource,
    *,
    title: str | Unset | None = UNSET,
    metadata: dict[str, str] | Unset = UNSET,
    budget: object = UNSET,
    agent_version: int | Unset = UNSET,
    permissions: PermissionPreset | Unset = UNSET,
    tools: list[Any] | Unset = UNSET,
    mcp_servers: list[Any] | Unset = UNSET,
    skills: SkillSource | None = None,
) -> None:
    """``tools`` and ``mcp_servers`` replace the session's agent's (omit keeps, ``[]`` clears); the event
    then carries the full materialised agent. Another agent version pins its skills afresh (with
    ``skills``), keeping those a mounted repository brought."""
    record, agent = log.record, log.agent
    changes: dict[str, Any] = {}
    event_fields: dict[str, Any] = {}
    if title is not UNSET and title != record.title:
        changes["title"] = event_fields["title"] = check_title(title)
    if metadata is not UNSET:
        checked = check_metadata(metadata, "session")
        if checked != record.metadata:
            changes["metadata"] = checked
            if checked:  # the event carries the new bag when set; clearing it leaves the field out (seed 002)
                event_fields["metadata"] = checked
    if budget is not UNSET:
        parsed = parse_budget(budget)
        if parsed != record.budget:
            changes["budget"] = event_fields["budget"] = parsed
    if permissions is not UNSET and permissions != record.permissions:
        if permissions not in PERMISSION_PRESETS:
            raise InvalidInputError(
                f"unknown permission preset {permissions!r}; use one of {', '.join(PERMISSION_PRESETS)}"
            )
        changes["permissions"] = event_fields["permissions"] = permissions
    overrides = dict(record.agent_overrides)
    replaced = {k: v for k, v in (("tools", tools), ("mcp_servers", mcp_servers)) if v is not UNSET}
    pinned = agents.get(record.agent_id, record.agent_version if agent_version is UNSET else agent_version)
    if replaced:
        overrides |= check_overrides(pinned, replaced)
    effective = materialize(pinned, overrides)
    if pinned.version != record.agent_version:
        changes["agent_version"] = pinned.version
        changes["multiagent"] = multiagent = resolve_multiagent(effective, agents)  # the new version's helpers, now
        if skills is not None:
            repinned = skills.pin([effective, *(multiagent.agents if multiagent else [])])
            repinned += [p for p in record.skills if p.source is not None]
            check_session_cap(repinned)
            if repinned != record.skills:
                changes["skills"] = event_fields["skills"] = repinned
    if overrides != record.agent_overrides:
        changes["agent_overrides"] = overrides
    if (effective.tools, effective.mcp_servers) != (agent.tools, agent.mcp_servers):
        event_fields["agent"] = effective.snapshot()
    agent = effective
    if not changes:
        return
    updated = record.model_copy(update=changes)
    # A cleared metadata bag is an update too, though the event then names no field.
    event = log.make(SessionUpdated, **event_fields) if event_fields or "metadata" in changes else None
    log.store.put_session(updated, event)
    log.replace(updated, agent)
    if event is not None:
        log.notify(event)


def terminate(log: SessionLog) -> None:
    """End the session for good; its duration is frozen."""
    if log.record.terminated_at is not None:
        return
    record = log.record.model_copy(update={"terminated_at": utc_now()})
    log.store.put_session(record, log.make(SessionStatusTerminated))
    log.replace(record, log.agent)
