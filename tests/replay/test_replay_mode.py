"""The mode a notebook's kernel starts in."""

from __future__ import annotations

import pytest

from agentcell.errors import InvalidInputError
from agentcell.kernel.replay_mode import starting_mode


def test_a_recording_without_a_key_starts_in_auto() -> None:
    assert starting_mode(True, {}) == "auto"
    assert starting_mode(True, {"ANTHROPIC_API_KEY": ""}) == "auto"  # an empty variable is no key


@pytest.mark.parametrize("key", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"])
def test_a_key_or_no_recording_runs_live(key: str) -> None:
    assert starting_mode(True, {key: "sk-x"}) == "off"
    assert starting_mode(False, {}) == "off"


def test_the_environment_variable_decides_when_set() -> None:
    assert starting_mode(False, {"AGENTCELL_REPLAY": "Replay "}) == "replay"
    assert starting_mode(True, {"AGENTCELL_REPLAY": "record", "ANTHROPIC_API_KEY": "k"}) == "record"
    with pytest.raises(InvalidInputError, match="unknown replay mode 'sometimes'; use one of: off, record"):
        starting_mode(True, {"AGENTCELL_REPLAY": "sometimes"})
