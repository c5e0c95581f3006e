"""A 200-turn soak through the real kernel: resident memory and latency per 50 turns (issue 21, 9).

The kernel plays a scripted model whose every fifth turn calls the python tool, so each turn has its
widget, its items, its tool card and its saved bundle. After 50 warm-up turns the kernel's RSS stays within
10 MB for the next 150, and no finished turn's widget, renderer or listener is left behind (counted in the
kernel, after a collection, as objgraph would). Before: 107 -> 154 MB over 200 turns, every widget kept by
anywidget's file watcher and every request (each with the whole conversation) by the scripted provider.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

pytestmark = pytest.mark.slow

TURNS = 200
WINDOW = 50
RSS_BOUND = 10 * 1024 * 1024

PROBE = """\
%%python
def _agentcell_probe():
    import gc, json
    from agentcell.render.widget_renderer import WidgetRenderer
    from agentcell_widgets import TurnWidget
    gc.collect()
    alive = {"widgets": 0, "renderers": 0}
    for obj in gc.get_objects():
        if isinstance(obj, TurnWidget):
            alive["widgets"] += 1
        elif isinstance(obj, WidgetRenderer):
            alive["renderers"] += 1
    alive["listeners"] = len(get_ipython().kernel.agent_host.session._log._listeners)
    print(json.dumps(alive))
_agentcell_probe()
"""


def _script(turns: int) -> list[dict[str, Any]]:
    responses: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn % 5 == 0:
            code = f"value_{turn} = {turn} * 2\nvalue_{turn}"
            responses.append({"steps": [{"kind": "tool_call", "name": "python", "input": {"code": code}}]})
        responses.append({"steps": [{"kind": "text", "text": f"Turn {turn}: " + "some **markdown** text. " * 80}]})
    return responses


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.timeout(120)
def test_200_turns_keep_memory_flat_and_release_every_finished_turn(
    tmp_path: Path, record_property: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_script(TURNS + 1)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(
        AGENTCELL_DB=str(tmp_path / "kernel.db"),
        AGENTCELL_MODEL=f"scripted:{script}",
        JPY_SESSION_NAME=str(tmp_path / "soak.ipynb"),
    )
    km, kc = start_new_kernel(kernel_name="agentcell", env=env, cwd=str(tmp_path), startup_timeout=60)
    try:
        pid = km.provisioner.process.pid  # type: ignore[union-attr]

        def run(code: str) -> tuple[dict[str, Any], str]:
            out: list[str] = []

            def keep(message: dict[str, Any]) -> None:
                if message["msg_type"] == "stream":
                    out.append(message["content"]["text"])

            reply = kc.execute_interactive(code, timeout=30, output_hook=keep)
            return reply["content"], "".join(out)

        assert run("%permissions danger-full-access")[0]["status"] == "ok"
        rows: list[tuple[int, int, float]] = []
        started = time.perf_counter()
        probe_after_warm_up: dict[str, int] = {}
        for turn in range(1, TURNS + 1):
            reply, _ = run(f"turn {turn}: tell me something")
            assert reply["status"] == "ok", reply
            if turn % WINDOW == 0:
                now = time.perf_counter()
                rows.append((turn, _rss(pid), (now - started) / WINDOW))
                started = now
                if turn == WINDOW:
                    reply, printed = run(PROBE)
                    assert reply["status"] == "ok", reply
                    probe_after_warm_up = json.loads(printed)
                    started = time.perf_counter()
        reply, printed = run(PROBE)
        assert reply["status"] == "ok", reply
        probe = json.loads(printed)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    report = "\n".join(
        f"turns {t - WINDOW + 1:3d}-{t:3d}: RSS {rss / 2**20:6.1f} MB, {s * 1000:5.0f} ms a turn" for t, rss, s in rows
    )
    with capsys.disabled():
        print(f"\n200-turn soak through the kernel\n{report}")
    record_property("soak", report)
    assert probe == {"widgets": 0, "renderers": 0, "listeners": probe_after_warm_up["listeners"]}
    grown = rows[-1][1] - rows[0][1]
    assert grown < RSS_BOUND, f"RSS grew {grown / 2**20:.1f} MB after the warm-up\n{report}"
