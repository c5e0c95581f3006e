"""Python functions as tools: schemas from signatures and docstrings, validation, registration."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agentcell.errors import ToolRegistrationError
from agentcell.tools import ToolContext, ToolRegistry, default_registry, function_tool, tool, untool

from ._support import make_call


class Opaque:
    """Not something pydantic can describe."""


class Point(BaseModel):
    x: float
    y: float


def _measure(origin: Point, unit: Literal["m", "ft"] = "m", *, scale: Annotated[int, Field(ge=1)] = 1) -> str:
    """Measure the distance of a point from the origin.

    Longer explanation that stays in the description.

    Args:
        origin: The point to measure,
            in the plane.
        unit: The unit of the answer.

    Returns:
        The distance.
    """
    distance = (origin.x**2 + origin.y**2) ** 0.5 * scale
    return f"{distance:g} {unit}"


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    definition = function_tool(_measure)
    assert definition.name == "_measure"
    assert definition.description == (
        "Measure the distance of a point from the origin.\n\nLonger explanation that stays in the description."
    )
    schema = dict(definition.input_schema)
    assert schema["required"] == ["origin"]
    assert schema["additionalProperties"] is False
    properties = schema["properties"]
    assert properties["origin"] == {
        "$ref": "#/$defs/Point",
        "description": "The point to measure, in the plane.",
    }
    assert properties["unit"] == {
        "default": "m",
        "description": "The unit of the answer.",
        "enum": ["m", "ft"],
        "type": "string",
    }
    assert properties["scale"] == {"default": 1, "minimum": 1, "type": "integer"}
    assert set(schema["$defs"]["Point"]["properties"]) == {"x", "y"}


def test_rest_style_parameter_docs_are_read() -> None:
    def greet(name: str) -> str:
        """Greet someone.

        :param name: who to greet
        """
        return f"hi {name}"

    definition = function_tool(greet)
    assert definition.description == "Greet someone."
    assert definition.input_schema["properties"]["name"]["description"] == "who to greet"


async def test_input_is_validated_and_errors_reach_the_model(registry: ToolRegistry) -> None:
    registry.register(function_tool(_measure, name="measure"))
    ok = await registry.execute(make_call("measure", origin={"x": 3, "y": 4}, unit="ft", scale=2))
    assert ok.text_content == "10 ft"
    bad = await registry.execute(make_call("measure", origin={"x": "far"}, unit="km", scale=0, extra=1))
    assert (bad.is_error, bad.error_code) == (True, "INVALID_INPUT")
    message = bad.text_content
    assert message.startswith("invalid input for measure: ")
    for problem in (
        "origin.x: Input should be a valid number",
        "origin.y: Field required",
        "unit: Input should be 'm' or 'ft' (got 'km')",
        "scale: Input should be greater than or equal to 1 (got 0)",
        "extra: Extra inputs are not permitted",
    ):
        assert problem in message


async def test_async_and_sync_functions_run_and_sync_ones_leave_the_loop_free(registry: ToolRegistry) -> None:
    release = threading.Event()

    def blocking() -> str:
        """Wait for the loop to release it."""
        return "released" if release.wait(10) else "the loop was blocked"

    async def awaited(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    registry.register(function_tool(blocking))
    registry.register(function_tool(awaited))
    task = asyncio.create_task(registry.execute(make_call("blocking")))
    # If the sync function ran on the loop, this line would only run after it gave up.
    doubled = await registry.execute(make_call("awaited", n=4))
    release.set()
    assert (await task).text_content == "released"
    assert doubled.text_content == "8"


async def test_a_context_parameter_is_injected_and_hidden_from_the_model(registry: ToolRegistry) -> None:
    def where(ctx: ToolContext, label: str = "call") -> str:
        return f"{label} {ctx.call.tool_use_id} in {ctx.workspace.name}"

    definition = function_tool(where)
    assert list(definition.input_schema["properties"]) == ["label"]
    registry.register(definition)
    call = make_call("where")
    assert (await registry.execute(call)).text_content == f"call {call.tool_use_id} in workspace"


def test_functions_that_cannot_be_described_are_refused() -> None:
    def star(*args: int) -> int:
        return sum(args)

    def opaque(thing: Opaque) -> str:
        return "?"

    with pytest.raises(ToolRegistrationError, match="must be named one by one"):
        function_tool(star)

    def unresolved(thing: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        return "?"

    with pytest.raises(ToolRegistrationError, match="cannot describe the parameters of 'opaque'"):
        function_tool(opaque)
    with pytest.raises(ToolRegistrationError, match="cannot read the signature of 'unresolved'"):
        function_tool(unresolved)


# ---------------------------------------------------------------------------------------------- @tool


@pytest.fixture
def clean_default() -> Iterator[ToolRegistry]:
    registry = default_registry()
    before = [s.name for s in registry.schemas()]
    yield registry
    assert [s.name for s in registry.schemas()] == before, "a test left a tool in the default registry"


async def test_tool_registers_globally_returns_the_function_and_can_be_undone(
    clean_default: ToolRegistry,
) -> None:
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    decorated = tool(shout)
    assert decorated is shout and shout("x") == "X"
    assert clean_default.get("shout") is not None
    assert clean_default.get("shout", "any_agent") is not None
    assert (await clean_default.execute(make_call("shout", text="hey"))).text_content == "HEY"
    assert untool(shout) is True
    assert clean_default.get("shout") is None
    assert untool(shout) is False


async def test_tool_options_name_scope_parallel_and_registry(registry: ToolRegistry) -> None:
    @tool(name="lookup", parallel_safe=True, scope="agent_a", registry=registry, description="Find it.")
    async def find(key: str) -> str:
        return key

    assert registry.get("lookup") is None
    scoped = registry.get("lookup", "agent_a")
    assert scoped is not None and scoped.description == "Find it."
    assert registry.execution_mode(make_call("lookup", scope="agent_a", key="k")) == "parallel"
    assert untool(find)
    assert registry.get("lookup", "agent_a") is None


def test_redefining_a_tool_replaces_it_and_a_clash_still_fails(registry: ToolRegistry) -> None:
    def make(version: int) -> Callable[[], int]:
        def helper() -> int:
            """A notebook cell's helper."""
            return version

        return helper

    first, second = make(1), make(2)
    tool(registry=registry)(first)
    tool(registry=registry)(second)  # the same cell run again
    definitions = registry.definitions()
    assert len(definitions) == 1
    assert untool(first) is False  # its registration was replaced
    untool(second)

    def helper() -> int:
        return 0

    registry.register(function_tool(helper))  # registered by other means: not a redefinition
    with pytest.raises(ToolRegistrationError, match="already registered"):
        tool(registry=registry)(make(3))


async def test_a_return_value_that_cannot_be_a_result_blames_the_tool() -> None:
    from agentcell.tools import ToolRegistry, function_tool

    from ._support import make_call

    class Unprintable:
        def __repr__(self) -> str:
            raise ValueError("no text for this")

    def odd() -> object:
        """Return something no tool result can hold."""
        return Unprintable()

    registry = ToolRegistry()
    registry.register(function_tool(odd))
    result = await registry.execute(make_call("odd"))
    assert result.is_error and result.error_code == "BAD_RESULT"
    assert result.text_content.startswith("odd returned a Unprintable that cannot be a tool result (no text for this)")
    assert "hook" not in result.text_content
