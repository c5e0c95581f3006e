"""The kernel's side of the notebook's context, without a kernel: which cells are code, the caps, the
namespace summary (pandas-like values read without importing pandas)."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path
from typing import Any

from agentcell.kernel.code_cells import Caps, bundle_output, cap_text, capped_cells, html_text
from agentcell.kernel.namespace import summarize_namespace
from agentcell.kernel.routing import code_cell_source
from agentcell.records.content import ImageSource
from agentcell.records.notebook_context import CellOutput, CodeCell


def test_which_cells_are_code() -> None:
    assert code_cell_source("%%python\nx = 1\n", prose_is_agent=True) == "x = 1\n"
    assert code_cell_source("Explain x.", prose_is_agent=True) is None
    assert code_cell_source("x = 1", prose_is_agent=False) == "x = 1"
    assert code_cell_source("%%agent\nExplain x.", prose_is_agent=False) is None
    assert code_cell_source("%context\n%model x", prose_is_agent=False, own_magics=["context", "model"]) is None
    assert code_cell_source("%time f()", prose_is_agent=False, own_magics=["context"]) == "%time f()"


def test_text_is_cut_in_its_middle_with_a_note() -> None:
    text = "A" * 600 + "B" * 600
    cut = cap_text(text, 200, "AgentCell.context_cell_chars")
    assert len(cut) <= 200 and cut.startswith("A" * 60) and cut.endswith("B" * 60)  # the note within the cap
    assert "1,077 of 1,200 characters cut here (AgentCell.context_cell_chars)" in cut


def _cell(n: int, size: int, *, image: bool = False) -> CodeCell:
    outputs = [CellOutput(kind="stdout", text=str(n) * size)]
    if image:
        outputs.append(CellOutput(kind="display", image=ImageSource(media_type="image/png", data="AA==")))
    return CodeCell(cell_id=f"c{n}", source=f"print({n})", outputs=outputs)


def test_a_turn_keeps_its_first_and_latest_cells_and_its_first_images() -> None:
    cells = [_cell(n, 900, image=True) for n in range(10)]
    kept, notes = capped_cells(cells, Caps(cell_chars=1_000, turn_chars=3_000, images=2))
    assert [c.cell_id for c in kept] == ["c0", "c1", "c9"]  # from both ends, in the order they ran
    assert sum(len(c.source) + sum(len(o.text) for o in c.outputs) for c in kept) <= 3_000
    said = "7 code cells run in between left out: over 3,000 characters in one turn (AgentCell.context_turn_chars)"
    assert said in notes
    assert sum(1 for c in kept for o in c.outputs if o.image is not None) == 2
    assert any("image(s) left out" in n for n in notes)


def test_a_long_output_shares_the_cell_cap_with_a_short_one() -> None:
    cell = CodeCell(
        source="x",
        outputs=[CellOutput(kind="stdout", text="s" * 50), CellOutput(kind="stderr", text="L" * 50_000)],
    )
    [capped], _ = capped_cells([cell], Caps(cell_chars=1_000))
    assert capped.outputs[0].text == "s" * 50  # the short one whole
    assert len(capped.outputs[1].text) < 1_100 and "characters cut here" in capped.outputs[1].text


def test_displays_read_as_text_or_image() -> None:
    html = "<table><tr><th>a</th></tr><tr><td>1</td></tr></table><script>alert(1)</script>"
    assert html_text(html) == "a\n1"
    assert bundle_output("display", {"text/html": html}) == CellOutput(kind="display", text="a\n1")
    image = bundle_output("display", {"image/png": "AA==\n", "text/plain": "<Figure>"})
    assert image is not None and image.image is not None and image.image.data == "AA==" and image.text == "<Figure>"
    assert bundle_output("display", {"application/vnd.jupyter.widget-view+json": {}}) is None


class DataFrame:  # stands for pandas' own, without pandas
    __module__ = "pandas.core.frame"
    shape = (3, 2)
    columns = ("region", "sales")

    class _Dtypes:
        def items(self) -> Any:
            return iter([("region", "object"), ("sales", "int64")])

    dtypes = _Dtypes()


def test_the_namespace_summary_names_the_users_variables_only() -> None:
    namespace: dict[str, Any] = {
        "In": [],
        "_private": 1,
        "sys": sys,
        "helper": lambda: None,
        "__agentcell__": object(),
        "sales": DataFrame(),
        "regions": ["n", "s"],
        "api_key": "sk-not-shown-ever",
        "label": "north",
    }
    named, left_out = summarize_namespace(namespace, hidden={"__agentcell__"})
    assert left_out == 0
    assert named == [
        ("sales", "pandas.DataFrame", "3 rows, 2 columns: region object, sales int64"),
        ("regions", "list", "length 2"),
        ("api_key", "str", "(not shown: the name looks like a secret)"),
        ("label", "str", "'north' (5 characters)"),
    ]
    many, left_out = summarize_namespace({f"v{n}": n for n in range(50)}, limit=40)
    assert left_out == 10 and many[0][0] == "v10" and many[-1][0] == "v49"  # the latest defined


def test_the_local_models_window_lowers_the_turns_caps() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from agentcell.kernel.host import LOCAL_WINDOW_CHARS, AgentCell
    from agentcell.kernel.turn_context import NotebookContextSource

    shell = InteractiveShell.instance()
    try:
        source = NotebookContextSource(shell, AgentCell(), prose_is_agent=True)
        with contextlib.redirect_stdout(io.StringIO()):  # the stream a front end would show
            shell.run_cell("%%python\nprint('x' * 50_000)")
        wide, narrow = source.build(take=False), source.build(take=False, window_chars=LOCAL_WINDOW_CHARS)
        assert wide is not None and narrow is not None
        size = [len(c.source) + sum(len(o.text) for o in c.outputs) for c in (*wide.cells, *narrow.cells)]
        assert 9_000 < size[0] <= 10_100  # AgentCell.context_cell_chars, with its note
        assert size[1] <= LOCAL_WINDOW_CHARS // 4 + 100
        source.recorder.uninstall()
    finally:
        InteractiveShell.clear_instance()


def test_the_agents_inspect_variable_tool_reads_one_variable_and_keeps_secrets_named_only(tmp_path: Path) -> None:
    from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
    from agentcell.kernel.namespace import inspect_variable_tool
    from agentcell.tools.registry import ToolRegistry

    namespace: dict[str, Any] = {"sales": {"north": 120, "south": 80}, "db_password": "hunter2-long", "_x": 1}
    registry = ToolRegistry()
    registry.register(inspect_variable_tool(namespace, hidden=()))
    asks = [ScriptedResponse(steps=[ScriptedToolCall(name="inspect_variable", input={"name": n})]) for n in
            ("sales", "db_password", "_x")]  # fmt: skip
    provider = ScriptedProvider([*asks, ScriptedResponse(steps=[ScriptedText(text="done")])])
    engine = Engine(tmp_path / "e.db", providers={"scripted": provider}, tools=registry)
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id, permissions="read-only")  # it needs no permission
    session.send_sync("look at sales")
    said = [r.content[0].text for r in session.events(types=["agent.tool_result"])]  # type: ignore[union-attr]
    assert said[0] == "sales: dict, length 2\n{'north': 120, 'south': 80}"
    assert "hunter2" not in said[1] and said[1].startswith("db_password: str")
    assert said[2].startswith("no variable named '_x'; the user's variables: sales, db_password")
    engine.close()
