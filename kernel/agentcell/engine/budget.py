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

from .._format import format_usd
from ..errors import BudgetExhaustedError
from ..providers.base import ModelRequest, Provider
from ..usage import InputBilling, Pricing, worst_case_cost
from .log import SessionLog

__all__ = ["MIN_USEFUL_OUTPUT", "RequestPlan", "fit_request"]

MIN_USEFUL_OUTPUT = 128
"""The fewest output tokens a shortened request may keep (or ``max_tokens``, when that is fewer)."""


@dataclass(frozen=True, slots=True)
class RequestPlan:
    request: ModelRequest
    worst_case: Decimal
    """What each attempt reserves of the budget."""
    shortened_from: int | None = None
    """The ``max_tokens`` asked for, when the budget lowered it."""


async def fit_request(
    log: SessionLog, provider: Provider, pricing: Pricing, request: ModelRequest, *, shorten: bool = True
) -> RequestPlan:
    """The request as it can be sent within the budget; raises BudgetExhaustedError (saying why and what to
    do) when not even a useful minimum of output fits. ``shorten`` False: the whole ``max_tokens`` or
    nothing (a grader's verdict cut short is no verdict)."""
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
        room = log.budget_room()
        if room is None or worst <= room:
            return RequestPlan(request, worst)
    assert room is not None
    fits = _most_output(pricing, bound, max_tokens, billing, room)
    minimum = min(max_tokens, MIN_USEFUL_OUTPUT) if shorten else max_tokens
    if fits >= minimum:
        shortened = request.model_copy(update={"settings": request.settings.model_copy(update={"max_tokens": fits})})
        return RequestPlan(shortened, worst_case_cost(pricing, bound, fits, billing), shortened_from=max_tokens)
    least = worst_case_cost(pricing, bound, minimum, billing)
    budget = log.budget
    assert budget is not None
    raise BudgetExhaustedError(
        f"the budget cannot cover the next request: even with {minimum:,} output tokens it may cost up to "
        f"{format_usd(least)} at list price ({bound:,} input tokens; {format_usd(worst)} with the full "
        f"{max_tokens:,}), and {format_usd(room)} of the {format_usd(budget.max_list_cost)} budget is left. "
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
