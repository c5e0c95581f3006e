"""What ``agentcell run`` prints while a notebook runs headless: each turn's answer as it streams and one
line per tool call, read from the turn widget's item batches (the kernel sends them whether or not a view
is there), so a terminal shows what happened without opening the notebook."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from ._terminal import for_terminal

__all__ = ["TurnPrinter"]

TOOL_CALLS = ("agent.tool_use", "agent.custom_tool_use", "agent.server_tool_use")
TOOL_RESULTS = ("agent.tool_result", "agent.server_tool_result")
_NOBODY_ASKED = ("no-view", "no-approver")
_PYTHON_TOOL_ENV = "AGENTCELL_PYTHON_TOOL"  # named in a refusal of the python tool (tools/python_access.py)
SUMMARY = 72
"""Characters of a tool call's input shown on its line."""


def _summary(name: str, tool_input: Any) -> str:
    code = tool_input.get("code") if isinstance(tool_input, dict) and name == "python" else None
    text = code if isinstance(code, str) else json.dumps(tool_input, ensure_ascii=False)
    first = " ".join(text.split())
    return first if len(first) <= SUMMARY else first[: SUMMARY - 1] + "…"


class TurnPrinter:
    """Feed it every IOPub message of the run (:meth:`on_message`); it writes the main thread's text and
    a line per finished tool call to ``out``."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout
        self._calls: dict[str, tuple[str, Any]] = {}
        self._streamed: set[str] = set()
        self._mid_line = False

    def on_message(self, msg: dict[str, Any]) -> None:
        if msg.get("msg_type") != "comm_msg":
            return
        data = msg.get("content", {}).get("data", {})
        batch = data.get("content") if isinstance(data, dict) and data.get("method") == "custom" else None
        if isinstance(batch, dict) and batch.get("type") == "items":
            for item in batch.get("items", []):
                if isinstance(item, dict) and not item.get("thread_id"):
                    self._item(item)
        self._out.flush()

    def _item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "event_delta":
            content = item.get("delta", {}).get("content", {})
            if content.get("type") == "text" and content.get("text"):
                self._streamed.add(str(item.get("event_id")))
                self._write(str(content["text"]))
        elif kind == "agent.message":
            if str(item.get("id")) not in self._streamed:
                self._write("".join(b.get("text", "") for b in item.get("content", []) if b.get("type") == "text"))
            self._end_line()
        elif kind == "agent.cell_proposed":
            self._end_line()
            what = f"cell {item.get('cell_id')}" if item.get("action") != "insert" else "a new cell"
            source = _summary("python", {"code": item.get("source") or ""})
            line = f"  📝 proposal {item.get('number')}: {item.get('action')} {what}: {source}"
            self._out.write(for_terminal(line) + "\n")
        elif kind in TOOL_CALLS:
            self._calls[str(item.get("id"))] = (str(item.get("name", "tool")), item.get("input"))
        elif kind in TOOL_RESULTS:
            name, tool_input = self._calls.pop(str(item.get("tool_use_id")), ("tool", None))
            if item.get("denied_by") in _NOBODY_ASKED:
                outcome = "refused: it needs your approval, and nobody can answer in this run"
                if _PYTHON_TOOL_ENV in json.dumps(item.get("content")):
                    outcome += f" ({_PYTHON_TOOL_ENV}=allow lets the python tool run unasked)"
            elif item.get("denied_by"):
                outcome = f"refused ({item['denied_by']})"
            else:
                outcome = "failed" if item.get("is_error") else "done"
            self._end_line()
            self._out.write(for_terminal(f"  ⚙ {name} {_summary(name, tool_input)} — {outcome}") + "\n")

    def _write(self, text: str) -> None:
        text = for_terminal(text)  # model text is data: no escape sequence reaches the terminal
        self._out.write(text)
        self._mid_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._mid_line:
            self._out.write("\n")
            self._mid_line = False
