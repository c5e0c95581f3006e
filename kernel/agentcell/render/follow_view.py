"""``%session follow ID``: a read-only live view of a session that another kernel drives.

The cell that runs the magic gets one Markdown display, updated in place (the same ``display_id``) at most
``max_updates_per_second`` times a second (the renderers' :class:`~agentcell.render.throttle.Throttle`) as
the session's events commit anywhere — a header with the session's state, then its latest turns, each
folded by :class:`~agentcell.render.fold.TurnFold` as a turn of this kernel's own would be. Nothing in the
view acts on the session (no Stop, no approvals): this kernel reads it and does not drive it. The view runs
on the kernel's event loop until ``%session follow stop``, the session's termination, or the kernel's end;
it shows only durable events, so text appears a message at a time rather than streaming.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import AgentCellError, UserError
from ..following import TURN_OPENINGS, latest_turn_start
from ._ipython import display
from .fold import TurnFold
from .markdown import not_math
from .throttle import Throttle

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ..core import Engine
    from ..events import Event
    from ..kernel.host import NotebookAgent

__all__ = ["FollowView", "follow_session"]

KEEP_TURNS = 3
"""The latest turns the view shows."""

_views: dict[str, FollowView] = {}
"""The views running in this kernel, by session id: the loop holds tasks only weakly."""


class FollowView:
    def __init__(self, engine: Engine, session_id: str, *, max_rate: float = 30.0) -> None:
        self.session_id = session_id
        self._turns: list[TurnFold] = []
        self._state = "idle"
        self._problem: str | None = None
        self._throttle = Throttle(self._flush, max_rate=max_rate)
        self._loop = asyncio.get_running_loop()
        after, self._events = latest_turn_start(engine.store, session_id)
        stream = engine.sessions.follow(session_id, after=after)  # an unknown id fails here, in the cell
        self._handle = display(self._bundle(), raw=True, display_id=True)
        self._task = self._loop.create_task(self._run(stream))

    async def _run(self, stream: AsyncIterator[Event]) -> None:
        try:
            async for event in stream:
                self._apply(event)
                self._throttle.changed()
        except AgentCellError as exc:  # the database went away for good: say so in the view
            self._problem = str(exc)
        finally:
            if self._state != "terminated" and self._problem is None:
                self._state = "stopped following"
            self._throttle.close(flush=False)
            self._flush()
            if _views.get(self.session_id) is self:
                del _views[self.session_id]

    def _apply(self, event: Event) -> None:
        self._events += 1
        if not self._turns or (event.type in TURN_OPENINGS and self._turns[-1].stop_reason is not None):
            self._turns = [*self._turns[-(KEEP_TURNS - 1) :], TurnFold()]
        self._turns[-1].apply(event)
        if event.type == "session.status_running":
            self._state = "running"
        elif event.type == "session.status_idle":
            self._state = "idle"
        elif event.type == "session.status_terminated":
            self._state = "terminated"

    def _markdown(self) -> str:
        header = (
            f"**Following session `{self.session_id}`** — read-only, driven by another kernel · "
            f"{self._state} · {self._events:,} events"
        )
        parts = [header]
        for view in self._turns:
            prompt = f"**you:** {view.prompt}\n\n" if view.prompt else ""
            parts.append(prompt + view.to_markdown(final=view.stop_reason is not None))
        if self._problem:
            parts.append(f"> ⚠️ {self._problem}")
        return "\n\n---\n\n".join(parts)

    def _bundle(self) -> dict[str, str]:
        text = self._markdown()
        # "turn $0.12 · session $3.40" is money, not math (kernel-mechanics.md §9).
        return {"text/markdown": not_math(text), "text/plain": text}

    def _flush(self) -> bool:
        self._handle.update(self._bundle(), raw=True)
        return True

    def stop(self) -> None:
        self._task.cancel()


def follow_session(host: NotebookAgent, target: str) -> str:
    """``%session follow ID`` (start a view) or ``%session follow stop`` (end them all); returns what to say."""
    if target in ("stop", "off"):
        views = list(_views.values())
        for view in views:
            view.stop()
        return f"stopped following {len(views)} session{'s' if len(views) != 1 else ''}"
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise UserError("%session follow needs the kernel's event loop (run it in a notebook cell)") from None
    if (old := _views.pop(target, None)) is not None:
        old.stop()
    _views[target] = FollowView(host.engine, target, max_rate=host.config.max_updates_per_second)
    return ""
