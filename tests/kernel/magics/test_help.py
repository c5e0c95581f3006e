"""Every magic has its help beside it: ``%NAME --help`` prints it and ``%help`` lists them all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agentcell.kernel.extension import load, unload
from agentcell.kernel.magics import GROUPS, HELP


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv("AGENTCELL_DB", str(tmp_path / "nb.db"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell = InteractiveShell.instance()
    load(shell)
    try:
        yield shell
    finally:
        unload(shell)
        InteractiveShell.clear_instance()


def _names(group: type) -> set[str]:
    magics: dict[str, dict[str, str]] = group.magics  # filled by @magics_class: {"line": {name: method}, ...}
    return set(magics["line"]) | set(magics["cell"])


def test_each_group_documents_exactly_its_own_magics() -> None:
    for group in GROUPS:
        documented = {"agent" if name == "agent_cell" else name for name in group.HELP}
        assert _names(group) == documented, group.__name__
    assert len(HELP) == sum(len(group.HELP) for group in GROUPS)  # no name in two groups


def test_help_flags_print_the_magics_own_line(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("model", "budget", "replay", "threads", "steer"):
        shell.run_line_magic(name, "--help")
        assert capsys.readouterr().out.strip() == HELP[name]
    shell.run_line_magic("help", "")
    listed = capsys.readouterr().out
    assert all(text in listed for text in HELP.values())
    assert listed.index("%model") < listed.index("%usage") < listed.index("%steer")


def test_help_is_a_table_grouped_under_headings(shell: InteractiveShell) -> None:
    from agentcell.kernel.magics import help_table

    markdown, text = help_table()
    assert markdown.count("| magic | what it does |") == len({group.TITLE for group in GROUPS})
    assert "| `%tools [list \\| enable NAME… \\| disable NAME… \\| force NAME…]` |" in markdown  # pipes escaped
    assert text.index("The agent:") < text.index("  %model") < text.index("The session:") < text.index("  %usage")


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("%modle claude-sonnet-4-5", "%modle is not a magic: did you mean %model?"),
        ("%budgte 1", "%budgte is not a magic: did you mean %budget?"),
        ("%%pyhton\nx = 1", "%%pyhton is not a magic: did you mean %%python?"),
        ("%zzqx", "%zzqx is not a magic: %help lists agentcell's magics, %lsmagic all of them"),
    ],
)
def test_a_misspelled_magic_is_one_line_with_the_nearest_name(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], typed: str, said: str
) -> None:
    result = shell.run_cell(typed)
    assert not result.success
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert str(result.error_in_exec) == said
    assert "Traceback" not in capsys.readouterr().out


def test_known_magics_and_prose_still_pass(shell: InteractiveShell) -> None:
    assert shell.run_cell("%config AgentCell.budget = ''").success
    assert shell.run_cell("%%time\nx = 1").success
    assert shell.run_cell("%%python\ny = 2").success and shell.user_ns["y"] == 2


def test_resuming_an_unknown_session_points_to_the_list(shell: InteractiveShell) -> None:
    result = shell.run_cell("%session resume sesn_nope")
    assert str(result.error_in_exec) == (
        "%session resume: no session with id 'sesn_nope' in this database; `%session list` shows the ones there are"
    )
