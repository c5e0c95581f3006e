"""The budget is checked before every request against its worst case: spend never passes it."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcell import Engine, ModelRequest, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell._format import format_usd
from agentcell.tools.simple import SimpleTools
from agentcell.usage import CacheCreation, Usage, flat_pricing, worst_case_cost

from ..budget_sessions import reported_usage_session

PRICING = flat_pricing(3, 15)


def test_worst_case_prices_input_at_its_dearest_billing() -> None:
    # 1,000 input tokens written to the 1-hour cache cost 2x input: $6/M; 100 output at $15/M.
    assert worst_case_cost(PRICING, 1000, 100) == Decimal("0.0075")


def test_a_request_that_fits_only_shorter_is_sent_with_fewer_tokens(tmp_path: Path) -> None:
    provider = ScriptedProvider([ScriptedResponse(steps=[ScriptedText(text="hi")])], pricing=PRICING)
    # Its own empty registry: tools other tests left in the process-wide one would change the input bound.
    with Engine(tmp_path / "db", providers={"scripted": provider}, tools=SimpleTools()) as engine:
        agent = engine.agents.create(name="a", model={"id": "scripted", "max_tokens": 100_000})
        session = engine.sessions.create(agent=agent.id, budget="0.01")  # 100k output alone costs $1.50
        result = session.send_sync("hi")
    assert result.text == "hi"
    [sent] = provider.requests
    assert 128 <= sent.settings.max_tokens < 100_000
    input_bound = provider.input_token_bound(sent)
    assert worst_case_cost(PRICING, input_bound, sent.settings.max_tokens) <= Decimal("0.01")
    assert worst_case_cost(PRICING, input_bound, sent.settings.max_tokens + 1) > Decimal("0.01")  # tight
    [span] = [e for e in result.events if isinstance(e, ev.SpanModelRequestStart)]
    assert (span.max_tokens, span.budget_shortened_from) == (sent.settings.max_tokens, 100_000)


def test_a_request_whose_useful_minimum_does_not_fit_is_never_sent_and_says_why(tmp_path: Path) -> None:
    provider = ScriptedProvider([ScriptedResponse(steps=[ScriptedText(text="hi")])], pricing=PRICING)
    # Its own empty registry: tools other tests left in the process-wide one would change the input bound.
    with Engine(tmp_path / "db", providers={"scripted": provider}, tools=SimpleTools()) as engine:
        agent = engine.agents.create(name="a", model={"id": "scripted", "max_tokens": 100_000})
        session = engine.sessions.create(agent=agent.id, budget="0.0075")  # the input bound alone fills it
        result = session.send_sync("hi")
    assert result.stop_reason == ev.BudgetReached()
    assert provider.requests == []
    types = [e.type for e in result.events]
    assert types[-2:] == ["session.usage", "session.status_idle"]
    [refusal] = [e.error for e in result.events if isinstance(e, ev.SessionError)]
    assert refusal.type == "budget_reached"
    assert "$0.0075 of the $0.0075 budget is left" in refusal.message  # what is left, of what budget
    assert "with 128 output tokens it may cost up to $0.0" in refusal.message  # the worst case it needs
    assert "%budget" in refusal.message and "max_tokens" in refusal.message


@st.composite
def adversarial_usage(draw: st.DrawFn) -> tuple[float, float, int]:
    """How much of the input bound and of max_tokens a response bills, and how its input is billed."""
    return (
        draw(st.floats(0, 1)),
        draw(st.floats(0, 1)),
        draw(st.sampled_from([0, 1, 2, 3])),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    responses=st.lists(adversarial_usage(), min_size=1, max_size=12),
    budget=st.decimals(min_value=Decimal("0.001"), max_value=Decimal("0.2"), places=4),
    max_tokens=st.integers(1, 4000),
    tool_loop=st.booleans(),
)
def test_spend_never_exceeds_the_budget(
    tmp_path_factory: object,
    responses: list[tuple[float, float, int]],
    budget: Decimal,
    max_tokens: int,
    tool_loop: bool,
) -> None:
    plays = iter(responses * 50)

    def usage_of(bound: int, max_tokens: int) -> Usage:
        input_share, output_share, billing = next(plays)
        tokens = int(bound * input_share)
        output = int(max_tokens * output_share)
        return {
            0: Usage(input_tokens=tokens, output_tokens=output),
            1: Usage(output_tokens=output, cache_read_input_tokens=tokens),
            2: Usage(output_tokens=output, cache_creation=CacheCreation(ephemeral_5m_input_tokens=tokens)),
            3: Usage(output_tokens=output, cache_creation=CacheCreation(ephemeral_1h_input_tokens=tokens)),
        }[billing]

    with reported_usage_session(
        usage_of, pricing=PRICING, budget=budget, max_tokens=max_tokens, tool_loop=tool_loop, max_turns=50
    ) as session:
        for _ in range(3 if not tool_loop else 1):
            result = session.send_sync("go " * 20)
            if isinstance(result.stop_reason, ev.BudgetReached):
                break
        snapshots = session.events(types=["session.usage"])
        assert all(s.usage.spent <= budget for s in snapshots)  # type: ignore[union-attr]
        assert session.usage.spent <= budget
        if tool_loop:
            # A tool loop runs until the budget or max_turns stops it.
            assert isinstance(result.stop_reason, ev.BudgetReached | ev.MaxTurns)


class _BilledThenCut(ScriptedProvider):
    """Bills every input token its bound allows, shows some text, then fails retryably."""

    async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def,override]
        from agentcell.errors import ProviderConnectionError
        from agentcell.providers.base import BlockStart, ResponseStart, TextDelta, TextPart, UsageUpdate

        self.requests.append(request)
        yield ResponseStart(model=request.model)
        yield UsageUpdate(usage=Usage(input_tokens=self.input_token_bound(request)))
        yield BlockStart(index=0, block=TextPart(text=""))
        yield TextDelta(index=0, text="partial answer")
        raise ProviderConnectionError("cut", retryable=True, retry_after=0.001)


def test_engine_retries_reserve_the_budget_again(tmp_path: Path) -> None:
    from agentcell.providers.base import Message, ModelSettings, TextPart

    pricing = flat_pricing(1000, 0)  # only input costs, so the figures are easy to follow
    provider = _BilledThenCut(pricing=pricing)
    expected = ModelRequest(
        model="scripted", messages=[Message(role="user", content=[TextPart(text="hi")])], settings=ModelSettings()
    )
    attempt = pricing(Usage(input_tokens=provider.input_token_bound(expected)))
    worst = worst_case_cost(pricing, provider.input_token_bound(expected), 4096)
    assert worst == 2 * attempt  # billed at most as 1-hour cache writes
    budget = worst + attempt / 2  # room for the first attempt's worst case, not for a second one after it
    with Engine(tmp_path / "db", providers={"scripted": provider}, tools=SimpleTools()) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id, budget=budget)
        result = session.send_sync("hi")
    assert result.stop_reason == ev.BudgetReached()
    assert len(provider.requests) == 1  # the retry might not have fitted what remained: it was not sent
    assert session.usage.list_cost == attempt <= budget


@settings(max_examples=30, deadline=None)
@given(
    overshoot=st.lists(st.floats(0, 5), min_size=1, max_size=6),
    budget=st.decimals(min_value=Decimal("0.001"), max_value=Decimal("0.05"), places=4),
    max_tokens=st.integers(1, 2000),
)
def test_usage_beyond_what_a_request_could_produce_is_priced_at_its_worst_case(
    overshoot: list[float], budget: Decimal, max_tokens: int
) -> None:
    """A server that reports more output than max_tokens allows (or more input than was sent) cannot push
    spend past the cap: the excess is counted at the request's worst case and reported as an anomaly."""
    import tempfile

    box: list[ScriptedProvider] = []
    plays = iter(overshoot * 20)

    def respond(request: ModelRequest) -> ScriptedResponse:
        factor = next(plays)
        usage = Usage(
            input_tokens=int(box[0].input_token_bound(request) * factor),
            output_tokens=int(request.settings.max_tokens * factor),
        )
        return ScriptedResponse(steps=[ScriptedText(text="x")], usage=usage)

    provider = ScriptedProvider(respond, pricing=PRICING)
    box.append(provider)
    with tempfile.TemporaryDirectory() as tmp, Engine(Path(tmp) / "db", providers={"scripted": provider}) as engine:
        agent = engine.agents.create(name="a", model={"id": "scripted", "max_tokens": max_tokens})
        session = engine.sessions.create(agent=agent.id, budget=budget)
        for _ in range(len(overshoot)):
            if isinstance(session.send_sync("go").stop_reason, ev.BudgetReached):
                break
        assert session.usage.spent <= budget
        anomalies = [e for e in session.events(types=["session.error"]) if "anomaly" in e.error.type]  # type: ignore[union-attr]
        over = 0
        for request, factor in zip(provider.requests, overshoot * 20, strict=False):
            bound = provider.input_token_bound(request)
            reported = Usage(input_tokens=int(bound * factor), output_tokens=int(request.settings.max_tokens * factor))
            over += PRICING(reported) > worst_case_cost(PRICING, bound, request.settings.max_tokens)
        assert len(anomalies) == over  # each over-report said so, and nothing else


def test_parallel_threads_wait_for_each_others_reservations_instead_of_starving(tmp_path: Path) -> None:
    """Issue 21, 7: six threads' worst-case reservations must not make the budget unusable: a request that
    fits what is unspent waits for requests in flight to settle, rather than being refused."""
    from agentcell import ScriptedDelay

    tasks = [f"part {n}" for n in range(6)]
    coordinator = [
        ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": t}) for t in tasks]),
        ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={}) for _ in tasks]),
        ScriptedResponse(steps=[ScriptedText(text="all six done")]),
    ]

    def respond(request: ModelRequest) -> ScriptedResponse:
        first = request.messages[0].content[0]
        if getattr(first, "text", "").startswith("part "):
            # Small real usage after a while: each worst case is large, what is charged is not.
            return ScriptedResponse(
                steps=[ScriptedDelay(seconds=0.05), ScriptedText(text="done")],
                usage=Usage(input_tokens=10, output_tokens=5),
            )
        return coordinator.pop(0)

    provider = ScriptedProvider(respond, pricing=PRICING)
    with Engine(tmp_path / "db", providers={"scripted": provider}, tools=SimpleTools()) as engine:
        agent = engine.agents.create(
            name="lead", model={"id": "scripted", "max_tokens": 500}, multiagent={"inline_agents": True}
        )
        probe = ModelRequest(model="scripted", messages=[])
        one = worst_case_cost(PRICING, provider.input_token_bound(probe) + 2_000, 500)
        session = engine.sessions.create(agent=agent.id, budget=one * 3)  # room for about 3 in flight, not 7
        result = session.send_sync("split the work")
    assert result.stop_reason == ev.EndTurn() and result.text == "all six done"
    idles = [e for e in result.events if isinstance(e, ev.SessionThreadStatusIdle)]
    assert [i.stop_reason.type for i in idles] == ["end_turn"] * 6
    assert session.usage.spent <= one * 3


def test_format_usd_writes_what_the_widget_writes_and_never_a_bare_point_or_a_sign_after_the_dollar() -> None:
    table = json.loads((Path(__file__).parents[1] / "fixtures" / "usd_formats.json").read_text())
    said = {amount: format_usd(Decimal(amount)) for amount, _ in table["cases"]}
    assert said == dict(table["cases"])
    assert not any(text.endswith(".") or "$-" in text for text in said.values())


def test_an_overspent_budget_says_nothing_is_left_rather_than_a_negative_amount() -> None:
    from agentcell.engine.budget import _what_is_left

    assert _what_is_left(Decimal("-0.0098"), "$0.01 budget") == "nothing is left of the $0.01 budget"
    assert _what_is_left(Decimal("0.0000001"), "$0.01 budget") == "nothing is left of the $0.01 budget"
    assert _what_is_left(Decimal("0.0002"), "$0.01 budget") == "$0.0002 of the $0.01 budget is left"
