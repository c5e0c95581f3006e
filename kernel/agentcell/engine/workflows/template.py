"""The plan's templates: ``{{inputs.NAME}}``, ``{{item}}``, ``{{steps.ID.output}}``, ``{{steps.ID.outputs}}``.

A reference may go on into a JSON value with ``.field`` or ``.0`` (``{{steps.extract.output.files.0}}``).
A string is inserted as it is; any other value as compact JSON, so a list of outputs reads as a JSON array.
Templates are parsed once, when the plan is checked (every reference must name something the step can
reach), and rendered when the step runs; rendering depends on nothing but the values given, never on a
clock or chance, so the same values always give the same prompt (and the same resume key).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Ref", "TemplateError", "TemplateValues", "as_text", "parse_refs", "parse_single_ref", "render", "resolve"]

_REF = re.compile(r"\{\{\s*(.*?)\s*\}\}", re.DOTALL)
_SINGLE = re.compile(r"^\s*\{\{\s*(.*?)\s*\}\}\s*$", re.DOTALL)
_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")
REACHABLE = "templates reach inputs.NAME, item, steps.ID.output and steps.ID.outputs"


class TemplateError(ValueError):
    """A reference that cannot be parsed or resolved; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Ref:
    """One ``{{...}}`` reference of a template."""

    text: str
    """As written, between the braces."""
    root: Literal["inputs", "item", "steps"]
    step: str | None = None
    """For ``steps``: the step's id."""
    many: bool = False
    """For ``steps``: ``outputs`` (a ``for_each`` step's list) rather than ``output``."""
    path: tuple[str, ...] = ()
    """The fields and indexes after the root (after ``inputs``: the input's name first)."""


def _parse(text: str) -> Ref:
    segments = text.split(".")
    if not all(_SEGMENT.match(s) for s in segments):
        raise TemplateError(f"{{{{{text}}}}} is not a reference; {REACHABLE}")
    head, rest = segments[0], tuple(segments[1:])
    if head == "item":
        return Ref(text, "item", path=rest)
    if head == "inputs":
        if not rest:
            raise TemplateError(f"{{{{{text}}}}} names no input: write inputs.NAME")
        return Ref(text, "inputs", path=rest)
    if head == "steps":
        if len(rest) < 2 or rest[1] not in ("output", "outputs"):
            raise TemplateError(f"{{{{{text}}}}} is not a step's result: write steps.ID.output or steps.ID.outputs")
        return Ref(text, "steps", step=rest[0], many=rest[1] == "outputs", path=rest[2:])
    raise TemplateError(f"{{{{{text}}}}} reaches nothing: {REACHABLE}")


def parse_refs(template: str) -> list[Ref]:
    """Every reference of ``template``, in order; TemplateError for one that cannot be parsed."""
    return [_parse(match.group(1)) for match in _REF.finditer(template)]


def parse_single_ref(template: str) -> Ref | None:
    """The one reference ``template`` consists of (``"{{inputs.files}}"``); None when it is anything else."""
    match = _SINGLE.match(template)
    if match is None or "{{" in match.group(1) or "}}" in match.group(1):
        return None
    return _parse(match.group(1))


@dataclass(frozen=True, slots=True)
class TemplateValues:
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]
    """Each finished step's output (for a ``for_each`` step: the list of its items' outputs)."""
    item: Any = None
    has_item: bool = False

    def with_item(self, item: Any, has_item: bool) -> TemplateValues:
        return TemplateValues(self.inputs, self.outputs, item, has_item)


def resolve(ref: Ref, values: TemplateValues) -> Any:
    """The value ``ref`` names; TemplateError when its path goes where the value has nothing."""
    if ref.root == "item":
        if not values.has_item:
            raise TemplateError("{{item}} is only for a step with for_each")
        value, path, walked = values.item, ref.path, "item"
    elif ref.root == "inputs":
        name = ref.path[0]
        if name not in values.inputs:
            raise TemplateError(f"the plan has no input {name!r}")
        value, path, walked = values.inputs[name], ref.path[1:], f"inputs.{name}"
    else:
        assert ref.step is not None
        if ref.step not in values.outputs:
            raise TemplateError(f"step {ref.step!r} has no output yet")
        value, path, walked = values.outputs[ref.step], ref.path, f"steps.{ref.step}.output{'s' if ref.many else ''}"
    for segment in path:
        if isinstance(value, Mapping) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            raise TemplateError(f"{walked} has no {segment!r} (it is {_describe(value)})")
        walked += f".{segment}"
    return value


def as_text(value: Any) -> str:
    """How a value reads inside a prompt: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def render(template: str, values: TemplateValues) -> str:
    """``template`` with every reference replaced by the text of its value."""
    return _REF.sub(lambda match: as_text(resolve(_parse(match.group(1)), values)), template)


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        keys = ", ".join(list(map(str, value))[:10])
        return f"an object with {keys}" if keys else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    text = as_text(value)
    return f"{text[:40]!r}" if isinstance(value, str) else text[:40]
