"""YAML from users and shared stores, parsed with limits: a SKILL.md's frontmatter and a ``%%workflow`` plan.

PyYAML's safe loader builds what a document describes, however much that is: a few hundred bytes of
anchors and aliases (nine aliases of nine aliases of …) describe billions of nodes, which every later walk of
the value (validation, JSON) pays for. :func:`compose` refuses, before anything is built, a text over
:data:`MAX_BYTES`, nesting deeper than :data:`MAX_DEPTH` and a document whose nodes, aliases expanded,
number more than :data:`MAX_NODES`. The refusal is a ``yaml.YAMLError`` (:class:`YAMLLimitError`), so the
callers' handling of YAML that does not parse reports it the same way.

Imported with the first YAML read, not with the kernel (PyYAML's import costs ~15-60 ms).
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "YAMLLimitError", "compose", "load"]

MAX_BYTES = 1_000_000
MAX_DEPTH = 64
MAX_NODES = 100_000


class YAMLLimitError(yaml.YAMLError):
    """The document is larger, deeper or (aliases expanded) bigger than what agentcell reads."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = None


class _Loader(yaml.SafeLoader):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YAMLLimitError(f"it nests deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def compose(text: str) -> tuple[yaml.Node | None, Any]:
    """The document's node tree and the value it builds; raises :class:`YAMLLimitError` past a limit, or
    the ``yaml.YAMLError`` of a text that does not parse."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise YAMLLimitError(f"it is longer than {MAX_BYTES:,} bytes")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _count(node)
        return node, loader.construct_document(node)
    finally:
        loader.dispose()


def load(text: str) -> Any:
    """The value of the document ``text`` (see :func:`compose`)."""
    return compose(text)[1]


def _count(root: yaml.Node) -> None:
    """Refuse a document whose nodes, each alias counted as what it stands for, are too many (or that holds
    itself, a recursive alias)."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in visiting:
            raise YAMLLimitError("it holds itself (a recursive alias)")
        visiting.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        if total > MAX_NODES:
            raise YAMLLimitError(f"it describes more than {MAX_NODES:,} values once its aliases are expanded")
        visiting.discard(key)
        sizes[key] = total
        return total

    size(root)
