"""``SKILL.md``: YAML frontmatter between ``---`` lines, then Markdown instructions (agentskills.io).

Loaded leniently, as the spec's client guide asks, so that skills written for other clients still load:

- a broken *soft* rule (the name differs from its folder, breaks the character rules or is too long; the
  description or ``compatibility`` is too long; an unknown key; a metadata value that is not a string) is
  a **warning**: the skill loads, and the warning stays with it;
- what makes a skill unusable (no frontmatter, YAML that cannot be parsed even after quoting values that
  hold a colon, no description, a name no folder could hold) is an **error**: the skill is skipped.

Every diagnostic names the file and, where there is one, the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..records.skill import SKILL_NAME_PATTERN, SkillDiagnostic

__all__ = ["KNOWN_KEYS", "MAX_BODY_LINES", "Frontmatter", "parse_skill_md"]

KNOWN_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_BODY_LINES = 500
"""The spec's advice for ``SKILL.md``; longer bodies load with a warning."""

_NAME = re.compile(SKILL_NAME_PATTERN)
_UNSAFE_NAME = re.compile(r"[\x00-\x20/\\:*?\"<>|]")
"""What no folder name (nor a ``/name`` in a cell) can carry."""
_PLAIN_PAIR = re.compile(r"^(?P<key>[A-Za-z0-9_-]+):[ \t]+(?P<value>[^\s'\"|>&*!%@`{\[#].*?)\s*$")


@dataclass
class Frontmatter:
    """What a ``SKILL.md`` says, checked; ``ok`` False when the skill cannot be loaded."""

    name: str = ""
    description: str = ""
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: list[str] = field(default_factory=list)
    body: str = ""
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.level == "error" for d in self.diagnostics)

    def warn(self, code: str, message: str, line: int | None = None) -> None:
        self.diagnostics.append(SkillDiagnostic(level="warning", code=code, message=message, line=line))

    def fail(self, code: str, message: str, line: int | None = None) -> None:
        self.diagnostics.append(SkillDiagnostic(level="error", code=code, message=message, line=line))


def parse_skill_md(text: str, folder_name: str) -> Frontmatter:
    """Parse the text of a ``SKILL.md`` whose folder is called ``folder_name``."""
    parsed = Frontmatter()
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        parsed.fail("no_frontmatter", "SKILL.md must start with YAML frontmatter: a line '---', the keys, '---'", 1)
        return parsed
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if closing is None:
        parsed.fail("unclosed_frontmatter", "the frontmatter opened on line 1 is never closed with a line '---'", 1)
        return parsed
    data, lines_of = _load_yaml(lines[1:closing], parsed)
    if data is None:
        return parsed
    parsed.body = "\n".join(lines[closing + 1 :]).strip()
    _check_keys(data, lines_of, parsed)
    _check_name(data.get("name"), lines_of.get("name"), folder_name, parsed)
    _check_description(data.get("description"), lines_of.get("description"), parsed)
    parsed.license = _optional_text(data, "license", lines_of, parsed)
    parsed.compatibility = _optional_text(data, "compatibility", lines_of, parsed)
    if parsed.compatibility is not None and not 0 < len(parsed.compatibility) <= MAX_COMPATIBILITY_CHARS:
        parsed.warn(
            "long_compatibility",
            f"compatibility has {len(parsed.compatibility)} characters; the spec allows 1 to {MAX_COMPATIBILITY_CHARS}",
            lines_of.get("compatibility"),
        )
    parsed.metadata = _metadata(data.get("metadata"), lines_of.get("metadata"), parsed)
    parsed.allowed_tools = _allowed_tools(data.get("allowed-tools"), lines_of.get("allowed-tools"), parsed)
    if not parsed.body:
        parsed.warn("empty_body", "SKILL.md has no instructions after its frontmatter", closing + 1)
    elif (count := parsed.body.count("\n") + 1) > MAX_BODY_LINES:
        parsed.warn(
            "long_body",
            f"the instructions run to {count} lines; the spec advises under {MAX_BODY_LINES} "
            "(move details into references/, which the model reads when it needs them)",
            closing + 2,
        )
    return parsed


# ---------------------------------------------------------------------------------------------- YAML


def _load_yaml(block: list[str], parsed: Frontmatter) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """The frontmatter as a mapping, and the line (in SKILL.md) of each top-level key. Values with an
    unquoted ``: `` (YAML refuses them, other clients accept them) are quoted and parsed again."""
    import yaml  # with the first skill read, not with the engine: PyYAML's import costs ~15-60 ms

    text = "\n".join(block)
    try:
        return _mapping(text, parsed)
    except yaml.YAMLError as exc:
        first_error = exc
    repaired, changed = _quote_plain_values(block)
    if changed:
        try:
            data, lines_of = _mapping(repaired, parsed)
        except yaml.YAMLError:
            pass
        else:
            for line in changed:
                parsed.warn("yaml_repaired", "a value holding ': ' is not valid YAML unquoted; read it as text", line)
            return data, lines_of
    mark = getattr(first_error, "problem_mark", None) or getattr(first_error, "context_mark", None)
    where: int | None = mark.line + 2 if mark is not None else None  # 0-based, in the block after line 1
    problem = getattr(first_error, "problem", None) or str(first_error).splitlines()[0]
    parsed.fail("yaml_error", f"the frontmatter is not valid YAML: {problem}", where)
    return None, {}


def _mapping(text: str, parsed: Frontmatter) -> tuple[dict[str, Any] | None, dict[str, int]]:
    import yaml

    from .. import _yaml  # with limits: a few hundred bytes of aliases must not describe billions of values

    node, data = _yaml.compose(text)
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        parsed.fail("frontmatter_not_mapping", "the frontmatter must be YAML keys and values (name: ...)", 2)
        return None, {}
    lines_of = {str(key.value): key.start_mark.line + 2 for key, _ in node.value if isinstance(key, yaml.ScalarNode)}
    return {str(k): v for k, v in data.items()}, lines_of


def _quote_plain_values(block: list[str]) -> tuple[str, list[int]]:
    """The block with each top-level ``key: value`` whose plain value holds ``: `` single-quoted; the
    SKILL.md lines that changed."""
    out: list[str] = []
    changed: list[int] = []
    for index, line in enumerate(block):
        match = _PLAIN_PAIR.match(line)
        if match is not None and ": " in match["value"]:
            value = match["value"].replace("'", "''")
            out.append(f"{match['key']}: '{value}'")
            changed.append(index + 2)
        else:
            out.append(line)
    return "\n".join(out), changed


# ---------------------------------------------------------------------------------------------- keys


def _check_keys(data: Mapping[str, Any], lines_of: Mapping[str, int], parsed: Frontmatter) -> None:
    for key in data:
        if key not in KNOWN_KEYS:
            parsed.warn(
                "unknown_key",
                f"unknown frontmatter key {key!r}; the spec's keys are {', '.join(KNOWN_KEYS)}",
                lines_of.get(key),
            )


def _check_name(value: object, line: int | None, folder_name: str, parsed: Frontmatter) -> None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if not _NAME.fullmatch(folder_name):
            parsed.fail("missing_name", f"no name, and the folder's name {folder_name!r} is not a skill name", line)
            return
        parsed.warn("missing_name", f"no name in the frontmatter; the folder's name {folder_name!r} is used", line)
        parsed.name = folder_name
        return
    name = str(value).strip()
    if not isinstance(value, str):
        parsed.warn("name_not_text", f"the name {value!r} is not text; it is read as {name!r}", line)
    if _UNSAFE_NAME.search(name) or name in (".", ".."):
        parsed.fail("unsafe_name", f"the name {name!r} holds characters no skill folder may (spaces, / or :)", line)
        return
    parsed.name = name
    if len(name) > MAX_NAME_CHARS:
        parsed.warn("long_name", f"the name has {len(name)} characters; the spec allows at most {MAX_NAME_CHARS}", line)
    if not _NAME.fullmatch(name):
        parsed.warn(
            "invalid_name",
            f"the name {name!r} should be lowercase letters, digits and single hyphens, not at either end",
            line,
        )
    if name != folder_name:
        parsed.warn("name_mismatch", f"the name {name!r} differs from its folder's name {folder_name!r}", line)


def _check_description(value: object, line: int | None, parsed: Frontmatter) -> None:
    if not isinstance(value, str) or not value.strip():
        parsed.fail(
            "missing_description",
            "no description: the model chooses skills by their description, so one without is skipped",
            line,
        )
        return
    parsed.description = value.strip()
    if len(parsed.description) > MAX_DESCRIPTION_CHARS:
        parsed.warn(
            "long_description",
            f"the description has {len(parsed.description)} characters; the spec allows at most "
            f"{MAX_DESCRIPTION_CHARS}",
            line,
        )


def _optional_text(data: Mapping[str, Any], key: str, lines_of: Mapping[str, int], parsed: Frontmatter) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        parsed.warn("not_text", f"{key} should be text; {value!r} is read as {str(value)!r}", lines_of.get(key))
    return str(value).strip()


def _metadata(value: object, line: int | None, parsed: Frontmatter) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        parsed.warn("metadata_not_mapping", "metadata should map keys to text values; it is ignored", line)
        return {}
    metadata: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            parsed.warn("metadata_not_text", f"metadata {key!r}: {item!r} is not text; it is read as text", line)
        metadata[str(key)] = "" if item is None else str(item)
    return metadata


def _allowed_tools(value: object, line: int | None, parsed: Frontmatter) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        parsed.warn("allowed_tools_list", "allowed-tools should be one space-separated string; the list is read", line)
        return [str(item) for item in value]
    parsed.warn("allowed_tools_not_text", f"allowed-tools should be a space-separated string, not {value!r}", line)
    return []
