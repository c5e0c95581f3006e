"""The scripted provider's script files: a malformed one is the user's input error, naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcell.errors import InvalidInputError
from agentcell.providers.scripted import ScriptedProvider

from .conftest import collect, request


@pytest.mark.parametrize(
    "script",
    [
        {"responses": [], "pricing": {"input_mtok": 1, "output_mtok": 2, "bogus": 3}},  # TypeError
        {"responses": [], "pricing": {"input_mtok": "lots", "output_mtok": 2}},  # decimal.InvalidOperation
        {"responses": [], "pricing": ["input_mtok"]},  # AttributeError
        {"responses": [{"steps": [{"kind": "text"}]}]},  # ValidationError
        "a plain string",
    ],
)
def test_a_malformed_script_is_an_input_error_naming_the_file(tmp_path: Path, script: object) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    with pytest.raises(InvalidInputError, match=r"script\.json is not valid"):
        ScriptedProvider.from_file(path)


async def test_a_valid_script_file_plays_with_its_pricing(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    script = {
        "responses": [{"steps": [{"kind": "text", "text": "hi"}]}],
        "pricing": {"input_mtok": 1, "output_mtok": 2},
    }
    path.write_text(json.dumps(script))
    provider = ScriptedProvider.from_file(path)
    _, response = await collect(provider, request())
    assert response.text == "hi"
    assert provider.pricing("scripted")(response.usage) > 0
