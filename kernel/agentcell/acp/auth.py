"""How ``agentcell acp`` says where its credentials come from: the ``authMethods`` of ``initialize``, and
honest answers to ``authenticate``.

agentcell never logs in anywhere: a provider's key is read from the process's environment, and the
embedded model needs none. So each method is of the ``env_var`` kind (the client asks the user for the
variables and starts the agent again with them set), except the local model's, which the agent handles
itself. ``authenticate`` only checks that what the method needs is there now, and says what is missing.
No ``terminal`` method is offered: there is no login flow to run (and a client that did not advertise
``auth.terminal`` must not be offered one, kit ACP-AUTH-002).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from acp.schema import AuthenticateResponse, AuthEnvVar, AuthMethodAgent, EnvVarAuthMethod

from acp import RequestError

from .config import local_model_installed
from .content import invalid_params

__all__ = ["ANTHROPIC", "LOCAL", "OPENAI", "auth_methods", "authenticate"]

ANTHROPIC = "anthropic-api-key"
OPENAI = "openai-api-key"
LOCAL = "local-model"


def auth_methods() -> list[EnvVarAuthMethod | AuthMethodAgent]:
    return [
        EnvVarAuthMethod(
            type="env_var",
            id=ANTHROPIC,
            name="Anthropic API key",
            description="Claude models through the Anthropic API.",
            vars=[AuthEnvVar(name="ANTHROPIC_API_KEY", label="Anthropic API key")],
            link="https://console.anthropic.com/settings/keys",
        ),
        EnvVarAuthMethod(
            type="env_var",
            id=OPENAI,
            name="OpenAI API key",
            description="OpenAI models, or any OpenAI-compatible server at OPENAI_BASE_URL (a local one needs no key).",
            vars=[
                AuthEnvVar(name="OPENAI_API_KEY", label="OpenAI API key", optional=True),
                AuthEnvVar(name="OPENAI_BASE_URL", label="Server URL (optional)", secret=False, optional=True),
            ],
            link="https://platform.openai.com/api-keys",
        ),
        AuthMethodAgent(
            id=LOCAL,
            name="Embedded local model (no key)",
            description="SmolLM2-135M in-process, offline: install it with pip install 'agentcell[local]'.",
        ),
    ]


def authenticate(method_id: str, env: Mapping[str, str] | None = None) -> AuthenticateResponse:
    """Succeed when what ``method_id`` needs is there now; otherwise say what to set (-32000)."""
    env = os.environ if env is None else env
    if method_id == ANTHROPIC:
        if env.get("ANTHROPIC_API_KEY"):
            return AuthenticateResponse()
        missing = "ANTHROPIC_API_KEY is not set in agentcell's environment; set it where the editor starts it"
    elif method_id == OPENAI:
        if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
            return AuthenticateResponse()
        missing = (
            "neither OPENAI_API_KEY nor OPENAI_BASE_URL is set in agentcell's environment; "
            "set one where the editor starts it"
        )
    elif method_id == LOCAL:
        if local_model_installed():
            return AuthenticateResponse()
        missing = "the embedded model is not installed: pip install 'agentcell[local]' where agentcell runs"
    else:
        raise invalid_params(
            f"unknown authentication method {method_id!r}; agentcell has {ANTHROPIC}, {OPENAI}, {LOCAL}"
        )
    raise RequestError(-32000, f"Authentication required: {missing}")
