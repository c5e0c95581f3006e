"""What the prompt cache saved: ``uncached_cost`` prices the same tokens with cache reads and writes as plain
input, so every consumer folds the saving from the log instead of inventing it."""

from __future__ import annotations

import json
from decimal import Decimal

from agentcell.usage import CacheCreation, Usage, flat_pricing, price_usage, uncached_usage

PRICING = flat_pricing(3, 15)  # reads $0.30, 5-minute writes $3.75, 1-hour writes $6 per MTok


def test_uncached_usage_moves_every_cache_token_to_plain_input() -> None:
    usage = Usage(
        input_tokens=10,
        output_tokens=7,
        cache_read_input_tokens=1000,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=200, ephemeral_1h_input_tokens=30),
    )
    assert uncached_usage(usage) == Usage(input_tokens=1240, output_tokens=7)


def test_price_usage_sets_the_list_cost_and_what_it_would_have_cost_uncached() -> None:
    usage = Usage(
        input_tokens=1_000,
        output_tokens=100,
        cache_read_input_tokens=10_000,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=2_000),
    )
    priced = price_usage(PRICING, usage)
    # 1,000 x $3 + 100 x $15 + 10,000 x $0.30 + 2,000 x $3.75, per million.
    assert priced.list_cost == Decimal("0.015")
    # Uncached: 13,000 input tokens at $3 + 100 output at $15.
    assert priced.uncached_cost == Decimal("0.0405")
    assert priced.saved_by_cache == Decimal("0.0255")


def test_a_first_write_costs_more_than_uncached_until_it_is_read() -> None:
    priced = price_usage(PRICING, Usage(input_tokens=10, cache_creation=CacheCreation(ephemeral_1h_input_tokens=1000)))
    assert priced.saved_by_cache is not None and priced.saved_by_cache < 0  # 1-hour writes are 2x input
    assert priced.uncached_cost == Decimal("0.00303")


def test_without_cache_tokens_the_uncached_cost_is_the_list_cost() -> None:
    priced = price_usage(PRICING, Usage(input_tokens=1000, output_tokens=10))
    assert priced.uncached_cost == priced.list_cost == Decimal("0.00315")
    assert priced.saved_by_cache == 0


def test_a_cost_past_the_ceiling_is_counted_at_it_and_claims_no_saving() -> None:
    usage = Usage(input_tokens=10, cache_read_input_tokens=1_000_000)
    priced = price_usage(PRICING, usage, ceiling=Decimal("0.01"))
    assert priced.list_cost == priced.uncached_cost == Decimal("0.01")


def test_sums_carry_the_uncached_cost_and_treat_older_usage_as_uncached() -> None:
    new = price_usage(PRICING, Usage(input_tokens=0, cache_read_input_tokens=1_000_000))  # $0.30, uncached $3
    older = Usage(input_tokens=1_000_000, list_cost=Decimal(3))  # priced before uncached_cost existed
    total = new + older
    assert total.list_cost == Decimal("3.3")
    assert total.uncached_cost == Decimal(6)  # the older request's uncached cost is its list cost
    assert total.saved_by_cache == Decimal("2.7")
    assert (older + older).uncached_cost is None  # nothing new: the field stays absent


def test_uncached_cost_travels_as_a_string_and_is_absent_until_priced() -> None:
    assert "uncached_cost" not in Usage(input_tokens=1).model_dump(mode="json")
    wire = json.loads(price_usage(PRICING, Usage(cache_read_input_tokens=10)).model_dump_json())
    assert wire["uncached_cost"] == "0.00003" and wire["list_cost"] == "0.000003"
