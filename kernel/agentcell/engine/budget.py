"""Fitting a request into what remains of the budget, before it is sent.

The worst case of a request is its input bound priced at the dearest way the provider may bill it, plus
``max_tokens`` of output, at list price: the cap fires at or before the real charge. The cheap bound (a
token per byte) comes first; only when it does not fit does the engine ask the provider for an exact count.
When even that does not fit, the request goes out with ``max_tokens`` lowered to what the remainder pays
for — unless that is below a useful minimum, and then the turn is refused with the figures and the ways out.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from .._format import format_usd
from ..errors import BudgetExhaustedError, InvalidInputError
from ..providers.base import ModelRequest, Provider
from ..usage import InputBilling, Pricing, flat_pricing, worst_case_cost
from .ceiling import SPEND_CEILING
from .log import SessionLog

if TYPE_CHECKING:
    from ..providers.registry import ResolvedModel

__all__ = ["MIN_USEFUL_OUTPUT", "RequestPlan", "check_priced", "fit_request", "model_pricing"]

MIN_USEFUL_OUTPUT = 128
"""The fewest output tokens a shortened request may keep (or ``max_tokens``, when that is fewer)."""


@dataclass(frozen=True, slots=True)
class RequestPlan:
    request: ModelRequest
    worst_case: Decimal
    """What each attempt reserves of the budget."""
    shortened_from: int | None = None
    """The ``max_tokens`` asked for, when the budget lowered it."""


def model_pricing(resolved: ResolvedModel) -> Pricing | None:
    """The list prices a request is billed at: the model config's own, else the provider's; None when the
    model has no known list price."""
    prices = resolved.config.prices
    if prices is not None:
        return flat_pricing(
            prices.input_mtok,
            prices.output_mtok,
            cache_read_mtok=prices.cache_read_mtok,
            cache_write_5m_mtok=prices.cache_write_5m_mtok,
            cache_write_1h_mtok=prices.cache_write_1h_mtok,
            web_search_k=prices.web_search_k,
        )
    return resolved.provider.pricing(resolved.model)


def unpriced_message(model: str) -> str:
    return (
        f"the model {model!r} has no known list price, so a budget cannot be held to it (the cap could not "
        f"fire at or before the charge). Give its prices in USD per million tokens: model={{'id': '{model}', "
        "'prices': {'input_mtok': '3', 'output_mtok': '15'}}, or in a notebook %model "
        f"{model} --prices 3/15; or remove the budget"
    )


def check_priced(resolved: ResolvedModel) -> None:
    """Refuse a budget on a model with no known list price, saying how to give prices."""
    if model_pricing(resolved) is None:
        raise InvalidInputError(unpriced_message(resolved.config.id))


async def fit_request(
    log: SessionLog,
    provider: Provider,
    pricing: Pricing | None,
    request: ModelRequest,
    *,
    shorten: bool = True,
    model: str = "",
) -> RequestPlan:
    """The request as it can be sent within the budget; raises BudgetExhaustedError (saying why and what to
    do) when not even a useful minimum of output fits, or when there is a budget and the model has no list
    price. ``shorten`` False: the whole ``max_tokens`` or nothing (a grader's verdict cut short is no
    verdict)."""
    if pricing is None:
        if log.budget is not None:
            raise BudgetExhaustedError(unpriced_message(model or request.model))
        return RequestPlan(request, Decimal(0))
    billing = provider.input_billing(request)
    max_tokens = request.settings.max_tokens
    bound = provider.input_token_bound(request)
    worst = worst_case_cost(pricing, bound, max_tokens, billing)
    room = log.budget_room()
    if room is None or worst <= room:
        return RequestPlan(request, worst)
    counted = await provider.count_input_tokens(request)
    if counted is not None and counted < bound:
        bound = counted
        worst = worst_case_cost(pricing, bound, max_tokens, billing)
    minimum = min(max_tokens, MIN_USEFUL_OUTPUT) if shorten else max_tokens
    least = worst_case_cost(pricing, bound, minimum, billing)

    def settling_helps(room: Decimal) -> bool:
        # What others hold for requests in flight (threads beside this one) is not spent: wait for them to
        # settle rather than shorten or refuse this request, so a fan of threads cannot starve a turn, and a
        # refusal is decided (and its figures told) on what is really unspent.
        return worst > room and log.reserved > 0

    while (room := log.budget_room()) is not None and settling_helps(room):
        await log.reservations_settle()
    if room is None or worst <= room:
        return RequestPlan(request, worst)
    fits = _most_output(pricing, bound, max_tokens, billing, room)
    if fits >= minimum:
        shortened = request.model_copy(update={"settings": request.settings.model_copy(update={"max_tokens": fits})})
        return RequestPlan(shortened, worst_case_cost(pricing, bound, fits, billing), shortened_from=max_tokens)
    cost = (
        f"even with {minimum:,} output tokens it may cost up to {format_usd(least)} at list price ({bound:,} input "
        f"tokens; {format_usd(worst)} with the full {max_tokens:,})"
    )
    budget, ceiling = log.budget, SPEND_CEILING.get()
    if ceiling is not None and (budget is None or ceiling.room() <= room):
        cap = f"run's {format_usd(ceiling.cap)}"
        raise BudgetExhaustedError(
            f"the workflow run's budget cannot cover the next request: {cost}, and {_what_is_left(room, cap)}. "
            "Raise the run's budget (the plan's budget, or run_workflow(budget=...)) or lower the model's max_tokens."
        )
    assert budget is not None
    raise BudgetExhaustedError(
        f"the budget cannot cover the next request: {cost}, and "
        f"{_what_is_left(room, f'{format_usd(budget.max_list_cost)} budget')}. "
        "Raise the budget (%budget in a notebook, session.update(budget=...)) or lower the model's max_tokens."
    )


def _most_output(pricing: Pricing, input_tokens: int, max_tokens: int, billing: InputBilling, room: Decimal) -> int:
    """The largest output allowance whose worst case fits ``room`` (cost grows with output: bisect)."""
    low, high = 0, max_tokens
    if worst_case_cost(pricing, input_tokens, 0, billing) > room:
        return 0
    while low < high:
        middle = (low + high + 1) // 2
        if worst_case_cost(pricing, input_tokens, middle, billing) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _what_is_left(room: Decimal, of: str) -> str:
    """``$0.0001 of the $0.01 budget is left``; overspent (a request cost more than its worst case was
    thought to, or the budget was lowered), ``nothing is left of the $0.01 budget``."""
    left = format_usd(room)
    return f"{left} of the {of} is left" if room > 0 and left != "$0" else f"nothing is left of the {of}"
