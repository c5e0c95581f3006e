"""What the python tool's code displays lands in its tool card, for real: a kernel over ZMQ, IPython's own
``display()``, the event log on disk."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .conftest import execute, running_kernel, write_script

pytestmark = pytest.mark.slow

CODE = """\
from IPython.display import HTML, Image, display
import base64
display(HTML("<table><tr><td>cell one</td></tr></table>"))
display(Image(data=base64.b64decode(PNG)))
print("printed")
"""
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="


def test_the_python_tool_captures_displays_into_its_result_not_the_cells_output(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json",
        [
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": CODE}}]},
            {"steps": [{"kind": "text", "text": "Shown."}]},
        ],
    )
    with running_kernel(kernel_env) as (_, kc):
        assert execute(kc, f"%%python\nPNG = {PNG!r}").status == "ok"
        run = execute(kc, "Show a table and a dot.")
        assert run.status == "ok"
        # Nothing the tool's code displayed reached the cell on its own: only the turn's outputs did.
        assert not [d for d in run.displays if "cell one" in str(d.get("text/html", "")) and "🔧" not in str(d)]
        assert not [d for d in run.displays if set(d) <= {"image/png", "text/plain"}]
        assert not [m for m in run.of("stream") if "printed" in m["content"]["text"]]
        # A display outside the tool still reaches the cell as usual.
        plain = execute(kc, "%%python\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>mine</b>'))")
        assert plain.displays == [{"text/html": "<b>mine</b>", "text/plain": "<IPython.core.display.HTML object>"}]

    conn = sqlite3.connect(kernel_env["AGENTCELL_DB"])
    try:
        rows = [json.loads(d) for (d,) in conn.execute("SELECT body FROM events WHERE type = 'agent.tool_result'")]
    finally:
        conn.close()
    [result] = rows
    kinds = [block["type"] for block in result["content"]]
    assert kinds == ["text", "text", "image"], result["content"]  # stdout, the table's text form, the image
    assert result["content"][0]["text"] == "printed"
    assert result["content"][1]["text"] == "<IPython.core.display.HTML object>"
    assert result["content"][2]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert result["displays"] == [
        {"block": 1, "media_type": "text/html", "data": "<table><tr><td>cell one</td></tr></table>"}
    ]
