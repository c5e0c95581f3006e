"""agentcell's notebook widgets: the turn view. The front end lives in ``widgets/js`` and is bundled into
``static/`` when the package is built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentcell import __version__

if TYPE_CHECKING:
    from ._turn import TurnWidget

__all__ = ["CODE_PARTS", "STATIC", "TurnWidget", "__version__", "code_part"]

from ._code import CODE_PARTS, code_part
from ._paths import STATIC


def __getattr__(name: str) -> Any:
    # anywidget (and ipywidgets under it) load only when a turn is first shown, not with agentcell.
    if name == "TurnWidget":
        from ._turn import TurnWidget

        return TurnWidget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
