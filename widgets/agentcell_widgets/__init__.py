"""agentcell's notebook widgets (the turn view). The front end lives in ``widgets/js``."""

from agentcell import __version__

__all__ = ["__version__"]
