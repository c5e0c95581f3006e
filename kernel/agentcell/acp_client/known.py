"""The ACP agents ``%agent acp NAME`` knows: how each is started, and how to install it when it is not."""

from __future__ import annotations

import sys
from dataclasses import dataclass

__all__ = ["KNOWN_AGENTS", "KnownAgent", "install_hint"]


@dataclass(frozen=True, slots=True)
class KnownAgent:
    command: tuple[str, ...]
    install: str
    """How to install it, in one line for the user."""


KNOWN_AGENTS: dict[str, KnownAgent] = {
    "claude": KnownAgent(
        ("claude-agent-acp",),
        "install it with `npm install -g @zed-industries/claude-agent-acp` (Claude Code's ACP adapter; it needs "
        "ANTHROPIC_API_KEY or a Claude login)",
    ),
    "codex": KnownAgent(
        ("codex-acp",),
        "install it with `npm install -g @zed-industries/codex-acp` (Codex's ACP adapter; it needs OPENAI_API_KEY "
        "or a ChatGPT login)",
    ),
    "gemini": KnownAgent(
        ("gemini", "--experimental-acp"),
        "install Gemini CLI with `npm install -g @google/gemini-cli` (it needs GEMINI_API_KEY or a Google login)",
    ),
    "opencode": KnownAgent(
        ("opencode", "acp"),
        "install OpenCode with `npm install -g opencode-ai` (its model and provider come from its own config, "
        "opencode.json)",
    ),
    "agentcell": KnownAgent(
        (sys.executable, "-m", "agentcell.cli", "acp"),
        "agentcell itself: `pip install agentcell`",
    ),
}
"""Name -> the agent. ``agentcell`` runs with this kernel's own Python, so it is the one installed here."""


def install_hint(name: str) -> str:
    known = KNOWN_AGENTS.get(name)
    return known.install if known is not None else ""
