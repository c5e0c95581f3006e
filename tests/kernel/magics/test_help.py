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
