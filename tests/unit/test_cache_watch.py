"""The miss warning's judgement of each request's usage, and the cause it names (a fake clock)."""

from __future__ import annotations

from agentcell.engine.cache_watch import CacheWatch
from agentcell.providers.base import Message, ModelRequest, ModelSettings, TextPart, ToolSchema
from agentcell.usage import CacheCreation, Usage

WROTE = Usage(input_tokens=5, cache_creation=CacheCreation(ephemeral_5m_input_tokens=2000))
READ = Usage(input_tokens=5, cache_read_input_tokens=2000, cache_creation=CacheCreation(ephemeral_5m_input_tokens=50))
PLAIN = Usage(input_tokens=2000)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def req(system: str = "Be careful.", tools: tuple[str, ...] = ("python",), cache: str | None = None) -> ModelRequest:
    return ModelRequest(
        model="claude-sonnet-4-5",
        system=system,
        tools=[ToolSchema(name=name) for name in tools],
        messages=[Message(role="user", content=[TextPart(text="hi")])],
        settings=ModelSettings(extra={} if cache is None else {"cache": cache}),
    )


def test_a_healthy_session_never_warns() -> None:
    watch = CacheWatch()
    assert [watch.observe(None, req(), u) for u in (WROTE, READ, READ, READ)] == [None] * 4


def test_two_misses_warn_once_naming_a_changed_tool_list() -> None:
    watch = CacheWatch()
    assert watch.observe(None, req(), WROTE) is None
    assert watch.observe(None, req(tools=("python", "shell")), WROTE) is None  # one miss may be a fluke
    warning = watch.observe(None, req(tools=("python", "shell", "files")), WROTE)
    assert warning is not None and "offered tools changed" in warning
    assert watch.observe(None, req(tools=("x",)), WROTE) is None  # once per session


def test_a_pause_past_the_ttl_is_named_and_the_hour_suggested() -> None:
    clock = Clock()
    watch = CacheWatch(clock)
    for minutes in (0, 7, 14):
        clock.now = minutes * 60.0
        warning = watch.observe(None, req(), WROTE)
    assert warning is not None and "7 minutes passed" in warning and 'AgentCell.cache = "1h"' in warning
    one_hour = CacheWatch(clock)
    for minutes in (0, 70, 140):
        clock.now = minutes * 60.0
        warning = one_hour.observe(None, req(cache="1h"), WROTE)
    assert warning is not None and "70 minutes passed" in warning and "keeps them an hour" not in warning


def test_a_server_that_never_reads_back_is_named_when_nothing_changed() -> None:
    watch = CacheWatch()
    warnings = [watch.observe(None, req(), WROTE) for _ in range(3)]
    assert warnings[:2] == [None, None]
    assert warnings[2] is not None and "did not read back what it wrote" in warnings[2]


def test_providers_that_bill_no_writes_and_separate_threads_do_not_count() -> None:
    watch = CacheWatch()
    assert [watch.observe(None, req(system=str(n)), PLAIN) for n in range(5)] == [None] * 5
    # Each thread's first request writes its own prefix: not a miss.
    assert [watch.observe(f"thread-{n}", req(system=str(n)), WROTE) for n in range(5)] == [None] * 5
