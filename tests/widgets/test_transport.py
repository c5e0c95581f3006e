"""The turn widget's transport, for real: an agentcell kernel over ZMQ, with this test as the browser."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import ipykernel
import pytest

from agentcell.render.widget_renderer import HELLO_GRACE

from .conftest import TurnDriver, write_script

pytestmark = pytest.mark.slow

IPYKERNEL_74 = tuple(int(p) for p in ipykernel.__version__.split(".")[:2]) >= (7, 4)


def bash(marker: Path) -> list[dict[str, object]]:
    return [
        {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}; echo ran"}}]},
        {"steps": [{"kind": "text", "text": "Finished."}]},
    ]


def test_deltas_go_in_batches_at_most_30_a_second_and_the_final_state_once(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    text = "".join(f"w{i} " for i in range(1500))
    model = write_script(
        tmp_path / "s.json", [{"steps": [{"kind": "text", "text": text, "chunk_size": 3, "delay": 0.002}]}]
    )
    d = driver_for(model)
    d.execute("Stream a lot.")
    d.until_idle(60)
    batches = d.batches
    assert len(batches) >= 10  # it streamed
    starts = [b["start"] for b in batches]
    sizes = [len(b["items"]) for b in batches]
    assert starts[0] == 1 and all(s + n == nxt for s, n, nxt in zip(starts, sizes, starts[1:], strict=False))
    streamed = "".join(i["delta"]["content"]["text"] for b in batches for i in b["items"] if i["type"] == "event_delta")
    assert streamed == text  # every delta exactly once: no batch repeats text
    comm = [m for m in d.messages if m["msg_type"] == "comm_msg"]
    span = comm[-1]["time"] - comm[0]["time"]
    assert len(comm) <= 30 * span + 5
    final = d.final_state
    assert final[0]["type"] == "widget.context" and final[0]["agent_version"] == 1
    assert not [i for i in final if i["type"].startswith("event_")]  # durable events only: no previews
    assert [i["content"][0]["text"] for i in final if i["type"] == "agent.message"] == [text]
    # The live view's output became the bundle in place, under the opening event's display id; the widget
    # is closed, so nothing of it is left to save.
    opening = next(i for i in final if i["type"] == "user.message")
    assert d.widget_display_id == f"agentcell-turn-{opening['id']}"
    fallback = d.final_bundle
    assert '<div class="agentcell-fallback' in fallback["text/html"]
    assert text.strip() in fallback["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" not in fallback
    assert d.widget_closed
    assert len(d.displays) == 1  # the widget's, and no second output


def test_allow_and_deny_reach_the_kernel_from_a_subshell(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    model = write_script(tmp_path / "s.json", bash(allowed) + bash(denied))
    d = driver_for(model)
    d.open_subshell()
    for marker, answer in ((allowed, "allow"), (denied, "deny")):
        d.execute(f"Touch {marker.name}.")
        d.until(lambda m: d.comm_id is not None)
        assert d.announce()["approvals"] is True
        request = d.until_item("widget.approval_request")
        assert "bash" in request["reason"] or request["reason"]
        d.send(
            {
                "type": "approval",
                "tool_use_id": request["tool_use_id"],
                "result": answer,
                "remember": "once",
                "message": "no thanks",
            }
        )
        result = d.until_item("agent.tool_result", tool_use_id=request["tool_use_id"])
        d.until_idle()
        confirmation = [i for i in d.final_state if i["type"] == "user.tool_confirmation"]
        assert [c["result"] for c in confirmation] == [answer]
        if answer == "allow":
            assert not result["is_error"] and "ran" in result["content"][0]["text"]
        else:
            assert result["is_error"]
            assert result["content"][0]["text"] == "The user declined this tool call. They said: no thanks"
    assert allowed.exists() and not denied.exists()


def test_without_a_view_the_preset_decides_after_a_short_grace(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    d = driver_for(write_script(tmp_path / "s.json", bash(marker)))
    started = time.monotonic()
    d.execute("Touch it.")
    result = d.until_item("agent.tool_result", 30)
    assert time.monotonic() - started >= HELLO_GRACE
    assert result["is_error"] and "ApprovalUnavailable" in result["content"][0]["text"]
    d.until_idle()
    assert not [i for i in d.final_state if i["type"] in ("widget.approval_request", "widget.live")]
    assert not marker.exists()


def test_stop_interrupts_the_turn(driver_for: Callable[[str], TurnDriver], tmp_path: Path) -> None:
    model = write_script(
        tmp_path / "s.json", [{"steps": [{"kind": "text", "text": "x " * 3000, "chunk_size": 2, "delay": 0.01}]}]
    )
    d = driver_for(model)
    d.open_subshell()
    d.execute("Go on forever.")
    d.until(lambda m: d.comm_id is not None)
    d.send({"type": "hello", "from": 1})
    d.until_item("event_delta")
    d.send({"type": "stop"})
    reply_started = time.monotonic()
    idle = d.until_item("session.status_idle", 10)
    assert idle["stop_reason"]["type"] == "interrupted"
    assert time.monotonic() - reply_started < 5
    d.until_idle()
    reply = d.kc.get_shell_msg(timeout=10)
    assert reply["content"]["status"] == "ok"  # the user stopped it: not an error


def test_the_steer_box_reaches_the_model_without_stopping_the_turn(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    slow = {"kind": "text", "text": "thinking it over " * 40, "chunk_size": 4, "delay": 0.01}
    model = write_script(
        tmp_path / "s.json",
        [{"steps": [slow]}, {"steps": [{"kind": "text", "text": "Using the median, as you asked."}]}],
    )
    d = driver_for(model)
    d.open_subshell()
    d.execute("Summarise the data.")
    d.until(lambda m: d.comm_id is not None)
    d.send({"type": "hello", "from": 1})
    d.until_item("event_delta")
    d.send({"type": "steer", "text": "use the median"})
    idle = d.until_item("session.status_idle", 30)
    assert idle["stop_reason"]["type"] == "end_turn"  # guidance, not an interrupt
    d.until_idle()
    prompts = [i["content"][0]["text"] for i in d.final_state if i["type"] == "user.message"]
    assert prompts[-1] == "use the median"  # delivered as the next request's user turn
    messages = [i for i in d.final_state if i["type"] == "agent.message"]
    assert not any(m.get("interrupted") for m in messages)
    assert messages[-1]["content"][0]["text"] == "Using the median, as you asked."  # one more request


def test_a_view_that_missed_batches_gets_the_log_again(driver_for: Callable[[str], TurnDriver], tmp_path: Path) -> None:
    text = "".join(f"w{i} " for i in range(600))
    model = write_script(
        tmp_path / "s.json", [{"steps": [{"kind": "text", "text": text, "chunk_size": 3, "delay": 0.003}]}]
    )
    d = driver_for(model)
    d.open_subshell()
    d.execute("Stream.")
    d.until_item("event_delta")
    seen = len(d.batches)
    d.send({"type": "hello", "from": 0})  # a new view with nothing folded yet
    resent = d.until(lambda m: len(d.batches) > seen and d.batches[-1]["start"] == 0)
    assert resent["content"]["data"]["content"]["items"][0]["type"] == "widget.context"
    d.until_idle()


def test_clicks_on_the_main_shell_flow_during_the_cell_only_on_ipykernel_74(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    d = driver_for(write_script(tmp_path / "s.json", bash(marker)))
    d.execute("Touch it.")
    d.until(lambda m: d.comm_id is not None)
    d.send({"type": "hello", "from": 1})  # no subshell: queued behind the cell on ipykernel 7.3
    if IPYKERNEL_74:
        request = d.until_item("widget.approval_request")
        d.send({"type": "approval", "tool_use_id": request["tool_use_id"], "result": "allow", "remember": "once"})
        assert not d.until_item("agent.tool_result")["is_error"]
        assert marker.exists()
    else:
        result = d.until_item("agent.tool_result")
        assert result["is_error"] and "ApprovalUnavailable" in result["content"][0]["text"]
        assert not marker.exists()
    d.until_idle()
