"""Properties of how restrictions and guards compose, checked against a plain model of the rules."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcell.tools import ALLOW, Deny, PermissionPolicy, ToolCall, ToolRegistry

from ._support import echo_tool, make_call

NAMES = ["a", "b", "c", "d", "e"]
SCOPES = [None, "agent_x", "agent_y"]

restriction = st.tuples(
    st.sampled_from(SCOPES),
    st.one_of(st.none(), st.sets(st.sampled_from(NAMES))),
    st.sets(st.sampled_from(NAMES)),
).filter(lambda r: bool((r[1] or set()) | r[2]))


def _visible(restrictions: list[tuple[str | None, set[str] | None, set[str]]], scope: str | None) -> list[str]:
    """The model: a global name is visible unless a restriction that applies to the view hides it."""
    shown = []
    for name in NAMES:
        applying = [r for r in restrictions if r[0] is None or r[0] == scope]
        if all((allow is None or name in allow) and name not in deny for _, allow, deny in applying):
            shown.append(name)
    return shown


def _registry() -> ToolRegistry:
    registry = ToolRegistry(PermissionPolicy("danger-full-access", temp_dirs=()))
    for name in NAMES:
        registry.register(echo_tool(name))
    return registry


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    restrictions=st.lists(restriction, max_size=6),
    lifted=st.sets(st.integers(min_value=0, max_value=5)),
)
def test_restrictions_intersect_and_lifting_some_equals_never_adding_them(
    restrictions: list[tuple[str | None, set[str] | None, set[str]]], lifted: set[int]
) -> None:
    registry = _registry()
    disposers = [registry.restrict(allow=allow, deny=deny, scope=scope) for scope, allow, deny in restrictions]
    for scope in SCOPES:
        assert [s.name for s in registry.schemas(scope)] == _visible(restrictions, scope)
    for index in sorted(lifted):
        if index < len(disposers):
            disposers[index]()
    kept = [r for i, r in enumerate(restrictions) if i not in lifted]
    for scope in SCOPES:
        assert [s.name for s in registry.schemas(scope)] == _visible(kept, scope)
        for name in NAMES:
            assert (registry.get(name, scope) is not None) == (name in _visible(kept, scope))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(restrictions=st.lists(restriction, min_size=1, max_size=6), order=st.randoms())
def test_the_order_of_restrictions_does_not_matter(
    restrictions: list[tuple[str | None, set[str] | None, set[str]]], order: object
) -> None:
    forward, shuffled = _registry(), _registry()
    others = list(restrictions)
    order.shuffle(others)  # type: ignore[attr-defined]
    for registry, sequence in ((forward, restrictions), (shuffled, others)):
        for scope, allow, deny in sequence:
            registry.restrict(allow=allow, deny=deny, scope=scope)
    for scope in SCOPES:
        assert forward.schemas(scope) == shuffled.schemas(scope)


answers = st.sampled_from(["allow", "deny", "raise", "bool", "none"])


def _guard(kind: str, label: str) -> object:
    def guard(call: ToolCall) -> object:
        if kind == "raise":
            raise RuntimeError(label)
        return {"allow": ALLOW, "deny": Deny(label), "bool": True, "none": None}[kind]

    return guard


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(guards=st.lists(st.tuples(st.sampled_from(SCOPES), answers), max_size=6), scope=st.sampled_from(SCOPES))
def test_a_call_runs_only_when_every_applying_guard_allows(
    loop: asyncio.AbstractEventLoop, guards: list[tuple[str | None, str]], scope: str | None
) -> None:
    registry = _registry()
    for index, (guard_scope, kind) in enumerate(guards):
        registry.guard(_guard(kind, f"guard {index}"), scope=guard_scope)  # type: ignore[arg-type]
    result = loop.run_until_complete(registry.execute(make_call("a", scope=scope, text="ran")))
    applying = [kind for guard_scope, kind in guards if guard_scope is None or guard_scope == scope]
    if all(kind in ("allow", "none") for kind in applying):  # None is no objection (seed 000)
        assert (result.is_error, result.text_content) == (False, "ran")
    else:
        assert (result.is_error, result.error_code) == (True, "DENIED")
        # The first refusal in order (global guards, then the scope's) is the one reported.
        ordered = [i for i, (s, _) in enumerate(guards) if s is None]
        ordered += [i for i, (s, _) in enumerate(guards) if s is not None and s == scope]
        first = next(i for i in ordered if guards[i][1] not in ("allow", "none"))
        expected = "instead of ALLOW" if guards[first][1] == "bool" else f"guard {first}"
        assert expected in result.text_content
