"""What "always" covers for a shell command: its parts, each exactly, and how %permissions lists them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agentcell.kernel.magics.permission_rules import describe_rules
from agentcell.tools.command_rules import command_parts, command_rule_keys

CASES = {
    "ls": ["ls"],
    "ls -la": ["ls -la"],
    "touch a; cat ~/.ssh/id_rsa": ["touch a", "cat ~/.ssh/id_rsa"],
    "ls && rm -rf x || echo no": ["ls", "rm -rf x", "echo no"],
    "cat f | grep x > out.txt 2>&1": ["cat f", "grep x > out.txt 2>&1"],
    "cmd &> f": ["cmd &> f"],
    "a & b": ["a", "b"],
    "echo $(cat ~/.ssh/id_rsa)": ["cat ~/.ssh/id_rsa", "echo $(cat ~/.ssh/id_rsa)"],
    'echo "$(rm x)"': ["rm x", 'echo "$(rm x)"'],
    "echo '$(rm x)'": ["echo '$(rm x)'"],  # single quotes: no substitution, and a different rule
    "(cd x; make)": ["cd x", "make"],
    "diff <(ls a) <(ls b)": ["ls a", "ls b", "diff <(ls a) <(ls b)"],
    "x $(y $(z))": ["z", "y $(z)", "x $(y $(z))"],
    'echo "a;b" ; ls': ['echo "a;b"', "ls"],
    "echo \\; rm": ["echo \\; rm"],
    "ls\nrm x": ["ls\nrm x"],  # several lines: the whole text, exactly
    "echo `rm x`": ["echo `rm x`"],
    'echo "unclosed': ['echo "unclosed'],
    "echo $(unclosed": ["echo $(unclosed"],
}


@pytest.mark.parametrize("command", list(CASES))
def test_a_command_line_is_cut_into_its_commands(command: str) -> None:
    assert command_parts(command) == CASES[command]
    assert command_rule_keys(command) == tuple(f"bash:$ {part}" for part in CASES[command])


def test_permissions_lists_command_rules_as_the_commands_they_are() -> None:
    rules: dict[str, Any] = {"bash:$ git status": True, "bash:$ rm -rf build": False, "fetch:fetch": True}
    session: Any = SimpleNamespace(approvals=SimpleNamespace(remembered=rules))
    assert describe_rules(session).splitlines()[1:] == [
        "  bash:$ git status: allow  (this command only)",
        "  bash:$ rm -rf build: deny  (this command only)",
        "  fetch:fetch: allow",
    ]
