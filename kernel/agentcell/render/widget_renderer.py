"""The widget renderer: streams a turn into the turn widget, answers its clicks, leaves a static fallback.

Transport (design.md, "The flow of one cell", step 7):

* Every item of the turn goes into a numbered log (the first one is a ``widget.context`` item carried in
  the widget's initial state). Items are sent as custom messages ``{"type": "items", "start", "items"}``
  at most ``max_rate`` times a second (the shared :class:`~.throttle.Throttle`); consecutive text deltas
  of one block are merged, so a batch never repeats text.
* The browser's view announces itself with ``{"type": "hello", "from": n}`` when it renders (and again
  if it finds a gap); the kernel answers with the log from ``n``. The first hello *during the turn* proves
  that comms flow while the cell runs: the renderer logs ``widget.live`` (the view then offers Stop,
  and Allow/Deny unless someone installed their own approver) and its approver forwards each request to the widget as
  ``widget.approval_request`` and waits for ``session.approvals``. A call that needs approval before any
  hello waits up to ``HELLO_GRACE`` seconds from the start of the turn (the view may still be loading);
  without a hello by then (nbclient, a console, ipykernel 7.3 with comms-over-subshells off) it is refused
  unasked, as the permission preset says, and the tool card says so.
* The widget carries only a loader as its ``_esm``: a page that has neither the lab extension's copy of the
  views nor one an earlier turn brought asks with ``{"type": "code", "part": "turn" | "math"}``, and the
  renderer answers with the part's module (its styles inside) as the message's buffer
  (:func:`agentcell_widgets.code_part`), so the code crosses the wire once per page, KaTeX only for math.
  A ``code`` message during the turn proves that comms flow as a hello does.
* Browser → kernel messages may arrive on the main thread (ipykernel 7.4) or on a subshell thread
  (7.3 with JupyterLab's comms over subshells): the handler only hands them to the kernel's loop
  (kernel-mechanics.md §2).
* The widget is displayed when the turn's opening ``user.message`` arrives, under the display id of that
  event (:func:`~.displays.turn_display_id`). At the end that output is updated in place to the turn's
  bundle (:func:`~.renderer.fallback_bundle`: the events for the JupyterLab / Notebook 7 extension's
  renderer, sanitised HTML, Markdown and plain text for every other viewer) and the widget is closed: the
  live view is for the running turn only, so a saved notebook needs no widget state (JupyterLab saves
  none by default) and carries each turn once. A later re-run of an earlier cell marks that output stale
  (:mod:`.displays`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from ..errors import ApprovalUnavailable
from ..events import EventDelta, EventStart, SessionTurnsSuperseded, SpanModelRequestEnd, UserMessage
from ._ipython import display
from .displays import displays_of, opening_event_id, turn_display_id
from .previews import preview_prompt
from .renderer import fallback_bundle, fold_of
from .throttle import Throttle

if TYPE_CHECKING:
    from .. import Session, StreamItem, TurnResult
    from ..tools.base import ApprovalDecision, ApprovalRequest

__all__ = ["HELLO_GRACE", "WidgetRenderer", "compact", "output_price_mtok", "turn_costs"]

SPARKLINE_TURNS = 30
"""Earlier turns whose cost the widget's sparkline shows."""

HELLO_GRACE = 5.0
"""Seconds from the start of a turn that a call needing approval waits for the view to announce itself."""


def compact(item: StreamItem) -> dict[str, Any]:
    """An item as the widget gets it: JSON, without what the view never reads (the session id, which every
    item repeats, and thinking signatures, opaque and often long), and a long prompt as its preview."""
    data: dict[str, Any] = item.model_dump(mode="json", exclude={"session_id", "signature"})
    if data.get("redacted_data"):
        data["redacted_data"] = "redacted"
    return preview_prompt(data)


def turn_costs(session: Session, *, limit: int = SPARKLINE_TURNS) -> list[str]:
    """The list cost of each earlier turn of ``session`` that the conversation still holds (a turn starts at a
    ``user.message``), oldest first: a cell run again shows its new turn's cost, not both."""
    costs: list[Any] = []
    for event in session.events(types=("user.message", "span.model_request_end"), active_path=True):
        if isinstance(event, UserMessage):
            costs.append(None)
        elif isinstance(event, SpanModelRequestEnd) and costs:
            costs[-1] = (costs[-1] or 0) + event.model_usage.spent
    return [str(c or 0) for c in costs[-limit:]]


def window_now(session: Session) -> dict[str, Any] | None:
    """The ``widget.window`` item: the conversation's gauge as a turn starts (its latest request or
    compaction against the model's window), for the live footer before the turn's own first request ends;
    None when not known. Live only: once a request of the turn ended, the saved turn has its own."""
    from ..engine.compaction import GAUGE_EVENT_TYPES, window_gauge

    gauge = window_gauge(session.events(types=GAUGE_EVENT_TYPES))
    return None if gauge is None else {"type": "widget.window", "tokens": gauge.tokens, "size": gauge.window}


def output_price_mtok(session: Session) -> str | None:
    """The list price of a million output tokens of the session's model (for the live cost while a reply
    streams), None when the model has no known price."""
    from ..engine.budget import model_pricing
    from ..usage import Usage

    try:
        pricing = model_pricing(session.engine.providers.resolve(session.agent.model))
    except Exception:  # the price only decorates the footer; a model that cannot resolve fails in the turn
        return None
    return None if pricing is None else str(pricing(Usage(output_tokens=1_000_000)))


class WidgetRenderer:
    """One turn's widget. Created on the kernel's loop by the host; see the module docstring."""

    def __init__(self, session: Session, *, max_rate: float = 30.0) -> None:
        from agentcell_widgets import TurnWidget

        self._session = session
        self._loop = asyncio.get_running_loop()
        self._throttle = Throttle(self._flush, max_rate=max_rate)
        self._closed = False
        self._live = False
        self._hello = asyncio.Event()
        self._shown_at = time.monotonic()
        agent = session.agent
        context = {
            "type": "widget.context",
            "model": agent.model.id,
            "agent_name": agent.name,
            "agent_version": agent.version,
            "preset": session.record.permissions,
            "turn_costs": turn_costs(session),
            "output_price_mtok": output_price_mtok(session),
        }
        self._code_sent: set[str] = set()
        """The parts of the widget's code this widget was sent (``code`` messages), each once."""
        self._log: list[dict[str, Any]] = [context]
        """Everything sent to the browser this turn, in order; a view that missed some asks from an index."""
        self._sent = 1  # the context travels in the widget's initial state
        self._final: list[dict[str, Any]] = [context]
        """The compact durable log: the log without previews, set as the widget's state at the end."""
        if (window := window_now(session)) is not None:
            self._log.append(window)  # sent with the first batch; not in the saved state (self._final)
        self.widget = TurnWidget(items=[context], on_msg=self._on_msg)
        self._displays = displays_of(session)
        self._opening_id: str | None = None
        """The id of the turn's opening ``user.message``: its output's display id is derived from it."""
        if session.approver is None:  # leave an approver someone installed on purpose alone
            session.approver = self._ask

    @property
    def live(self) -> bool:
        """A view announced itself during the turn: clicks reach the kernel while the cell runs."""
        return self._live

    # ------------------------------------------------------------------------------------------ kernel side

    def on_item(self, item: StreamItem) -> None:
        if self._opening_id is None and (opening := opening_event_id(item)) is not None:
            self._opening_id = opening
            display(self.widget, display_id=turn_display_id(opening))
        if isinstance(item, SessionTurnsSuperseded) and self._opening_id is None:
            self._earlier_turns_changed()
        if isinstance(item, EventDelta):
            self._push_delta(item)
        elif isinstance(item, EventStart):
            self._log.append(compact(item))  # previews are live only: the buffered event supersedes them
        else:
            self._push(compact(item))
        self._throttle.changed()

    def _earlier_turns_changed(self) -> None:
        """The turn's cell ran before: the turns it replaces leave the sparkline (a context item replaces
        the live view's; the saved state keeps one, as a first run's would)."""
        context = {**self._final[0], "turn_costs": turn_costs(self._session)}
        if context != self._final[0]:
            self._final[0] = context
            self._log.append(context)

    def _push(self, data: dict[str, Any]) -> None:
        self._log.append(data)
        self._final.append(data)

    def _push_delta(self, item: EventDelta) -> None:
        text = item.delta.content.text if item.delta.content.type == "text" else None
        last = self._log[-1] if len(self._log) > self._sent else None
        if (
            text is not None
            and last is not None
            and last["type"] == "event_delta"
            and last["event_id"] == item.event_id
            and last["delta"]["index"] == item.delta.index
            and last["delta"]["content"]["type"] == "text"
        ):
            last["delta"]["content"]["text"] += text  # not sent yet: one delta per block per batch
            return
        self._log.append(item.model_dump(mode="json"))

    def _flush(self) -> bool:
        if self._sent >= len(self._log):
            return False
        self._send_from(self._sent)
        return True

    def _send_from(self, start: int) -> None:
        self.widget.send({"type": "items", "start": start, "items": self._log[start:]})
        self._sent = len(self._log)

    def close(self, result: TurnResult | None) -> None:
        self._throttle.close(flush=True)
        self._closed = True
        self._withdraw_approver()
        approvals = [item for item in self._final if item["type"] == "widget.approval_request"]
        bundle = fallback_bundle(fold_of(result), result, html=True, context=self._final[0], approvals=approvals)
        if self._opening_id is None:  # the turn never opened (refused on input): nothing live to replace
            display(bundle, raw=True)
        else:
            display(bundle, raw=True, display_id=turn_display_id(self._opening_id), update=True)
            self._displays.shown(self._opening_id, bundle)
        self.widget.close()  # it has no layout widget to close with it (TurnWidget.layout)

    # ------------------------------------------------------------------------------------------ approvals

    async def _ask(self, request: ApprovalRequest) -> ApprovalDecision | bool:
        """The session's approver during the turn: once a view is live, show the request in the widget and
        wait for the session's broker (answered by ``confirm_tool`` when the user clicks). A request an
        "always" rule answers needs no view: the broker answers it at once."""
        if self._session.approvals.recall(request.keys) is not None:
            return await self._session.approvals(request)
        if not self._live:
            grace = self._shown_at + HELLO_GRACE - time.monotonic()
            if grace > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._hello.wait(), grace)
        if not self._live:
            preset = request.preset or "session's"
            raise ApprovalUnavailable(
                f"no notebook view could answer while this cell ran; under the {preset} preset this call needs "
                "the user's approval, so it was not run"
            )
        self._push(
            {
                "type": "widget.approval_request",
                "tool_use_id": request.call.tool_use_id,
                "reason": request.reason,
                "preset": request.preset,
            }
        )
        self._throttle.changed()
        return await self._session.approvals(request)

    def _go_live(self) -> None:
        self._live = True
        self._hello.set()
        self._push({"type": "widget.live", "approvals": self._session.approver == self._ask})

    def _withdraw_approver(self) -> None:
        if self._session.approver == self._ask:
            self._session.approver = None

    # ------------------------------------------------------------------------------------------ browser side

    def _on_msg(self, _widget: object, content: Any, _buffers: object) -> None:
        """Runs on whichever thread ipykernel dispatched the comm message on: only hand it to the loop."""
        if not isinstance(content, dict):
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: the kernel is shutting down
            self._loop.call_soon_threadsafe(self._handle, dict(content))

    def _handle(self, content: dict[str, Any]) -> None:
        if self._closed:
            return  # the final state has everything; answers to a finished turn have no one to reach
        kind = content.get("type")
        if kind == "hello":
            if not self._live:
                self._go_live()
            start = content.get("from")
            self._send_from(start if isinstance(start, int) and 0 <= start <= len(self._log) else 0)
        elif kind == "code":
            # The loader asks before its view can say hello (the first turn of a page without the extension
            # waits for the views): its question proves as well that clicks reach the kernel while the cell runs.
            if not self._live:
                self._go_live()
                self._throttle.changed()
            self._send_code(content.get("part"))
        elif kind == "approval":
            self._answer(content)
        elif kind == "stop":
            self._session.interrupt()
        elif kind == "steer":
            from ..errors import InvalidInputError

            text = content.get("text")
            # The turn may have ended between the click and now: then there is nothing to steer.
            with contextlib.suppress(InvalidInputError):
                if isinstance(text, str) and text.strip():
                    self._session.steer(text.strip())

    def _send_code(self, part: object) -> None:
        from agentcell_widgets import code_part

        if not isinstance(part, str) or (module := code_part(part)) is None:
            return
        if part not in self._code_sent:  # the loader may ask again: answer once
            self._code_sent.add(part)
            self.widget.send({"type": "code", "part": part}, buffers=[module])

    def _answer(self, content: dict[str, Any]) -> None:
        from ..errors import InvalidInputError

        result, remember = content.get("result"), content.get("remember", "once")
        message = content.get("message")
        if result not in ("allow", "deny") or remember not in ("once", "always"):
            return
        # Already answered (a second view, a double click) or no longer waiting: nothing to do.
        with contextlib.suppress(InvalidInputError):
            self._session.confirm_tool(
                str(content.get("tool_use_id", "")),
                result,
                remember=remember,
                message=message if isinstance(message, str) and message else None,
            )
