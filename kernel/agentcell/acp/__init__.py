"""``agentcell acp``: the engine as an Agent Client Protocol agent on stdio, for Zed, JetBrains, Jupyter AI
and marimo.

It imports the engine and nothing imports it: the kernel and the editor are two front ends of the same
store. See :mod:`agentcell.acp.agent` for the sessions, :mod:`agentcell.acp.updates` for how events become
``session/update``s, and :mod:`agentcell.acp.wire` for the stdio framing.
"""

from __future__ import annotations

import asyncio
import logging
import sys

__all__ = ["main"]


def main(*, model: str | None = None, db: str | None = None) -> int:
    """Serve one client on stdin/stdout until it closes the connection; logs go to stderr."""
    from .. import Engine
    from .agent import AgentCellAcpAgent, engine_tools
    from .wire import serve

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="agentcell acp: %(levelname)s %(message)s")
    agent = AgentCellAcpAgent(lambda: Engine(db, tools=engine_tools()), model=model)
    try:
        asyncio.run(serve(agent))
    except KeyboardInterrupt:
        return 130
    return 0
