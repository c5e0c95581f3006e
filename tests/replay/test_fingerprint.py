"""The fingerprint of a request: stable across runs, machines and Python versions; blind to key order,
JSON spacing, provider-minted call ids, the notebook's folder and secrets; sensitive to everything else."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from agentcell.events import TextBlock
from agentcell.providers._fingerprint import digest_request, last_user_text
from agentcell.providers.base import (
    Message,
    ModelRequest,
    ModelSettings,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)

SCHEMA = {"type": "object", "properties": {"code": {"type": "string"}, "timeout": {"type": "number"}}}
GOLDEN = "7e1b566d026021ce009d16090167c542"
"""The fingerprint of :func:`request` with its defaults. It must never change: every recording depends on
it. If a deliberate change of the fingerprint is needed, old recordings must be re-recorded."""


def request(
    *,
    call_id: str = "toolu_01ABC",
    schema: dict[str, Any] | None = None,
    result: str = '{"rows": 3, "mean": 13.5}',
    folder: str = "/home/jovyan/notebooks",
    question: str = "What is the mean?",
    settings: ModelSettings | None = None,
    system: str | None = "Be brief.",
) -> ModelRequest:
    return ModelRequest(
        model="smollm2",
        system=system,
        messages=[
            Message(role="user", content=[TextPart(text=question)]),
            Message(
                role="assistant",
                content=[ToolCallPart(id=call_id, name="python", input={"timeout": 5, "code": "mean(t)"})],
            ),
            Message(
                role="user",
                content=[ToolResultPart(call_id=call_id, content=[TextBlock(text=result), TextBlock(text=folder)])],
            ),
        ],
        tools=[ToolSchema(name="python", description="Run Python.", input_schema=schema or SCHEMA)],
        settings=settings or ModelSettings(max_tokens=128, temperature=0, extra={"seed": 7}),
    )


def fingerprint(req: ModelRequest, model: str = "local:smollm2", folder: str = "/home/jovyan/notebooks") -> str:
    return digest_request(model, req, directories=[folder]).fingerprint


def test_the_fingerprint_of_a_known_request_never_changes() -> None:
    assert fingerprint(request()) == GOLDEN


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_another_interpreter_with_another_hash_seed_computes_the_same_fingerprint(seed: str) -> None:
    code = (
        "import sys, json; sys.path[:0] = json.loads(sys.argv[1]);"
        "from test_fingerprint import fingerprint, request; print(fingerprint(request()))"
    )
    here = str(__import__("pathlib").Path(__file__).parent)
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps([here])],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert out.stdout.strip() == GOLDEN


def test_key_order_and_json_spacing_do_not_matter() -> None:
    reordered = {"properties": {"timeout": {"type": "number"}, "code": {"type": "string"}}, "type": "object"}
    spaced = '{\n  "mean": 13.5,\n  "rows": 3\n}\n'
    assert fingerprint(request(schema=reordered, result=spaced)) == GOLDEN


def test_call_ids_minted_by_a_provider_do_not_matter() -> None:
    assert fingerprint(request(call_id="call_9f8e7d")) == GOLDEN


def test_thread_ids_minted_by_the_engine_are_numbered_by_first_appearance() -> None:
    from agentcell.ids import new_id

    def spawned(*ids: str) -> str:
        return fingerprint(request(result=" then ".join(f"started {i}" for i in ids)))

    first, second = new_id("sthr"), new_id("sthr")
    assert spawned(first, second) == spawned(new_id("sthr"), new_id("sthr"))  # new ids each run: same
    assert spawned(first, first) != spawned(first, second)  # but which thread is which still counts
    # Saved agents a coordinator may spawn are listed by id; a notebook that creates them mints new ones.
    assert spawned(new_id("agent"), first) == spawned(new_id("agent"), second)
    assert spawned(first, new_id("agent")) != spawned(new_id("agent"), first)
    assert digest_request("m", request(result=f"{first} {second} {first}")).minted_ids == (first, second)


def test_the_notebooks_folder_does_not_matter() -> None:
    elsewhere = request(folder="/work/main/notebooks")
    assert fingerprint(elsewhere, folder="/work/main/notebooks") == GOLDEN
    assert fingerprint(elsewhere, folder="/somewhere/else") != GOLDEN  # a path outside it does


def test_credentials_in_the_settings_are_left_out() -> None:
    secret = ModelSettings(
        max_tokens=128, temperature=0, extra={"seed": 7, "api_key": "sk-ant-SECRET", "Authorization": "x"}
    )
    assert fingerprint(request(settings=secret)) == GOLDEN


@pytest.mark.parametrize(
    ("changed", "part"),
    [
        (request(question="What is the median?"), "messages"),
        (request(result='{"rows": 4, "mean": 13.5}'), "messages"),
        (request(settings=ModelSettings(max_tokens=256, temperature=0, extra={"seed": 7})), "settings"),
        (request(settings=ModelSettings(max_tokens=128, temperature=0, extra={"seed": 8})), "settings"),
        (request(system="Be thorough."), "system"),
        (request(schema={"type": "object"}), "tools"),
    ],
)
def test_what_the_model_is_asked_changes_the_fingerprint_and_the_part_that_differs(
    changed: ModelRequest, part: str
) -> None:
    base = digest_request("local:smollm2", request(), directories=["/home/jovyan/notebooks"])
    other = digest_request("local:smollm2", changed, directories=["/home/jovyan/notebooks"])
    assert other.fingerprint != base.fingerprint
    differing = {name for name, value in base.parts().items() if other.parts()[name] != value}
    assert differing == {part}


def test_the_model_id_counts_with_its_provider() -> None:
    assert fingerprint(request(), model="ollama:smollm2") != fingerprint(request(), model="vllm:smollm2")


def test_the_digest_keeps_one_hash_per_message_so_a_prefix_can_be_compared() -> None:
    full = digest_request("local:smollm2", request())
    first = digest_request("local:smollm2", request().model_copy(update={"messages": request().messages[:1]}))
    assert full.messages[:1] == first.messages and len(full.messages) == 3


def test_the_latest_user_words_name_a_request() -> None:
    assert last_user_text(request()) == "What is the mean?"  # a tool result is not the user's words
    long = request(question="word " * 40)
    assert last_user_text(long).endswith("…") and len(last_user_text(long)) == 80


def test_a_recorded_answer_is_put_in_this_runs_thread_ids_even_where_a_delta_splits_one() -> None:
    from agentcell.ids import new_id
    from agentcell.providers._fingerprint import translate_minted_ids
    from agentcell.providers.base import BlockStart, StreamEvent, TextDelta, ToolInputDelta

    old, new, other = new_id("sthr"), new_id("sthr"), new_id("sthr")
    text, payload = f"Waiting for {old} and {other}.", json.dumps({"thread_id": old})
    events: list[StreamEvent] = [
        BlockStart(index=0, block=TextPart(text="")),
        *(TextDelta(index=0, text=text[i : i + 7]) for i in range(0, len(text), 7)),
        BlockStart(index=1, block=ToolCallPart(id="toolu_1", name="wait_thread", input={})),
        *(ToolInputDelta(index=1, partial_json=payload[i : i + 16]) for i in range(0, len(payload), 16)),
    ]
    translated = translate_minted_ids(events, {old: new})
    assert [type(e) for e in translated] == [type(e) for e in events]  # the same stream, delta for delta
    said = "".join(e.text for e in translated if isinstance(e, TextDelta))
    sent = "".join(e.partial_json for e in translated if isinstance(e, ToolInputDelta))
    assert said == f"Waiting for {new} and {other}."
    assert json.loads(sent) == {"thread_id": new}
    assert translate_minted_ids(events, {}) == events
