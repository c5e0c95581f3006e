"""A real agentcell kernel driven over ZMQ by a client that plays the browser's part of the turn widget:
it reads the widget's comm messages from IOPub and answers with custom messages, on the main shell or on
a subshell as JupyterLab does with comms over subshells."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def start_kernel(**options: Any) -> tuple[KernelManager, BlockingKernelClient]:
    """``start_new_kernel(**options)``, once more if the kernel died before answering: a port jupyter_client
    found free can be taken by another process before the kernel binds it (jupyter_client#487, "Address
    already in use"), which two test workers starting kernels side by side sometimes meet. A kernel that
    dies for another reason dies again and fails the test."""
    try:
        return start_new_kernel(**options)
    except RuntimeError as exc:
        if "Kernel died before replying to kernel_info" not in str(exc):
            raise
        return start_new_kernel(**options)


@dataclass
class TurnDriver:
    """Runs one cell and collects what the kernel published for it."""

    kc: BlockingKernelClient
    msg_id: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    comm_id: str | None = None
    subshell_id: str | None = None
    seen: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=50))
    """IOPub's latest messages, whoever's: what a wait that ran out reports."""

    def execute(self, code: str, *, cell_id: str | None = None) -> None:
        """Run ``code``; with ``cell_id`` as JupyterLab runs a notebook cell (``cellId`` in the metadata)."""
        self.messages = []
        self.comm_id = None
        if cell_id is None:
            self.msg_id = self.kc.execute(code)
            return
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
        msg = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        self.msg_id = msg["header"]["msg_id"]

    def until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        """Read IOPub (this cell's messages and the widget's) until one satisfies ``predicate``; return it."""
        for msg in self.messages:
            if predicate(msg):
                return msg
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
            except Empty:
                raise Empty(self._what_was_seen(timeout)) from None
            self.seen.append(msg)
            # The widget's own messages count whatever their parent: a reply to a hello is parented to it.
            ours = msg["msg_type"] == "comm_msg" and msg["content"].get("comm_id") == self.comm_id
            if msg["parent_header"].get("msg_id") != self.msg_id and not ours:
                continue
            msg["time"] = time.monotonic()
            self.messages.append(msg)
            if msg["msg_type"] == "comm_open" and "items" in msg["content"]["data"].get("state", {}):
                self.comm_id = msg["content"]["comm_id"]
            if predicate(msg):
                return msg

    def _what_was_seen(self, timeout: float) -> str:
        """Why a wait ran out, for the failure's message: is the kernel alive, and what did IOPub carry last
        (this cell's and everyone else's messages), so a hang says where it stopped."""
        lines = [f"nothing awaited came in {timeout:g}s; kernel alive: {self.kc.is_alive()}; IOPub's last messages:"]
        for msg in list(self.seen)[-25:]:
            parent = msg["parent_header"]
            whose = "this cell" if parent.get("msg_id") == self.msg_id else parent.get("msg_type", "no parent")
            detail = msg["content"].get("execution_state") or msg["content"].get("comm_id", "")
            lines.append(f"  {msg['msg_type']} ({whose}) {detail}")
        return "\n".join(lines)

    def announce(self, start: int = 1, tries: int = 3) -> dict[str, Any]:
        """Say hello as the widget's view does, again if the turn does not go live (as the view does: the
        kernel takes a repeat as a resync); return the widget.live item."""
        for attempt in range(tries):
            self.send({"type": "hello", "from": start})
            try:
                return self.until_item("widget.live", 2.5 if attempt < tries - 1 else 30)
            except Empty:
                continue
        raise AssertionError("unreachable: the last attempt waits or raises")

    def until_idle(self, timeout: float = 30) -> None:
        self.until(lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle", timeout)

    def until_item(self, type_: str, timeout: float = 30, **fields: Any) -> dict[str, Any]:
        """Wait for an item of ``type_`` (with these fields) in a batch the widget was sent."""
        found: list[dict[str, Any]] = []

        def has(msg: dict[str, Any]) -> bool:
            for item in self.items_of(msg):
                if item["type"] == type_ and all(item.get(k) == v for k, v in fields.items()):
                    found.append(item)
                    return True
            return False

        self.until(has, timeout)
        return found[0]

    def items_of(self, msg: dict[str, Any]) -> list[dict[str, Any]]:
        if msg["msg_type"] != "comm_msg" or msg["content"]["comm_id"] != self.comm_id:
            return []
        data = msg["content"]["data"]
        if data.get("method") == "custom" and data["content"].get("type") == "items":
            return list(data["content"]["items"])
        return []

    @property
    def batches(self) -> list[dict[str, Any]]:
        return [
            m["content"]["data"]["content"]
            for m in self.messages
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == self.comm_id
            and m["content"]["data"].get("method") == "custom"
        ]

    @property
    def widget_display_id(self) -> str:
        """The display id the widget was shown under (derived from the turn's opening event)."""
        (shown,) = [m for m in self.messages if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]]
        return str(shown["content"]["transient"]["display_id"])

    @property
    def final_bundle(self) -> dict[str, Any]:
        """The bundle the widget's output became at the end of the turn (one update of the same display)."""
        display_id = self.widget_display_id
        updates = [
            m["content"]["data"]
            for m in self.messages
            if m["msg_type"] == "update_display_data" and m["content"]["transient"].get("display_id") == display_id
        ]
        assert len(updates) == 1, "the finished turn replaces its live view exactly once"
        return dict(updates[0])

    @property
    def final_state(self) -> list[dict[str, Any]]:
        """The finished turn as the widget's items: context, events, and approval requests after their call."""
        turn = self.final_bundle[TURN_MIMETYPE]
        asked = {a["tool_use_id"]: a for a in turn.get("approvals", [])}
        items = [turn["context"]]
        for event in turn["events"]:
            items.append(event)
            if event.get("id") in asked:
                items.append(asked.pop(event["id"]))
        return [*items, *asked.values()]

    @property
    def widget_closed(self) -> bool:
        return any(m["msg_type"] == "comm_close" and m["content"]["comm_id"] == self.comm_id for m in self.messages)

    @property
    def displays(self) -> list[dict[str, Any]]:
        return [m["content"]["data"] for m in self.messages if m["msg_type"] == "display_data"]

    def open_subshell(self) -> None:
        """Comms on a subshell, as JupyterLab ≥ 4.4 sends them (``commsOverSubshells``)."""
        self.kc.control_channel.send(self.kc.session.msg("create_subshell_request", {}))
        reply = self.kc.control_channel.get_msg(timeout=10)
        self.subshell_id = reply["content"]["subshell_id"]

    def send(self, content: dict[str, Any]) -> None:
        """A custom message from the widget's view (``model.send``)."""
        assert self.comm_id is not None, "the widget has not been opened yet"
        msg = self.kc.session.msg(
            "comm_msg", {"comm_id": self.comm_id, "data": {"method": "custom", "content": content}}
        )
        if self.subshell_id is not None:
            msg["header"]["subshell_id"] = self.subshell_id
        self.kc.shell_channel.send(msg)


def python_turns(turns: int) -> list[dict[str, Any]]:
    """Each turn runs the python tool once and answers in a sentence (bench/notebook_size.py's turns)."""
    responses: list[dict[str, Any]] = []
    for n in range(turns):
        code = f"total = sum(range({n + 10}))\nprint(total)"
        responses.append({"steps": [{"kind": "tool_call", "name": "python", "input": {"code": code}}]})
        answer = f"The sum of the first {n + 10} numbers is {sum(range(n + 10))}, computed in the notebook."
        responses.append({"steps": [{"kind": "text", "text": answer}]})
    return responses


def write_script(path: Path, responses: list[dict[str, Any]], pricing: dict[str, float] | None = None) -> str:
    data: Any = {"responses": responses, "pricing": pricing} if pricing else responses
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


@pytest.fixture
def driver_for(kernel_env: dict[str, str]) -> Iterator[Callable[[str], TurnDriver]]:
    """``driver_for(model)`` starts a kernel on that model and returns its driver (stopped afterwards)."""
    started: list[tuple[KernelManager, BlockingKernelClient]] = []

    def start(model: str) -> TurnDriver:
        env = {**kernel_env, "AGENTCELL_MODEL": model}
        km, kc = start_kernel(kernel_name="agentcell", env=env, startup_timeout=60)
        started.append((km, kc))
        return TurnDriver(kc)

    yield start
    for km, kc in started:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
