"""agentcell as an ACP client: an external agent (Claude Code, Codex, Gemini CLI, ``agentcell acp``…) answers
the notebook's turns.

``connection.py`` starts the agent and holds its session, ``driver.py`` is the turn driver the host hands
the engine through ``TurnDeps.driver``, ``updates.py`` folds the agent's ``session/update``s into our events,
``turn.py`` answers its permission requests and file reads and writes, ``known.py`` the agents ``%agent acp
NAME`` knows. Below the services: it imports the engine, never the Session handle, the kernel or ``acp/``.
"""

from __future__ import annotations

from .connection import ExternalAgent
from .driver import ExternalDriver, driver_for
from .known import KNOWN_AGENTS, install_hint

__all__ = ["KNOWN_AGENTS", "ExternalAgent", "ExternalDriver", "driver_for", "install_hint"]
