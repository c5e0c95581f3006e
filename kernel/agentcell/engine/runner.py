"""The turn loop: build a request from the log, check the budget, stream, run tools, repeat.

One :class:`TurnRunner` drives one thread of a session from its opening events to a stop reason. It
emits previews while a response streams and the buffered events once the response is complete, so a
failed attempt leaves no half-written content in the log: its previews are abandoned (the
``span.model_request_end`` with ``is_error`` closes them) and a retry streams afresh. An interrupt keeps
the text already shown as an ``agent.message`` marked ``interrupted``.

Every model request of a session goes through :meth:`TurnRunner._request`, which holds the budget for it
and bills it: the turn's own requests, and the one-shot requests of the outcome grader and the advisor
(:meth:`TurnRunner.request_once`, which records spans and usage but no content). Guidance the user steers
in while a request streams is delivered before the next request (see ``Session.steer``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from .._format import format_usd
from ..errors import (
    BudgetExhaustedError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderProtocolError,
    TurnFailedError,
)
from ..events import (
    AgentToolResult,
    AgentToolUse,
    BudgetReached,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    MaxTurns,
    RequiresAction,
    SessionError,
    SpanModelRequestEnd,
    SpanModelRequestStart,
    StopReason,
    UserMessage,
)
from ..providers.base import (
    Message,
    ModelConfig,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseAccumulator,
    ToolCallPart,
    ToolSchema,
)
from ..providers.retry import RetryPolicy
from ..records.agent import Agent
from ..tools.base import ToolCall, ToolResult
from ..usage import Pricing, Usage, price_usage
from .budget import fit_request, model_pricing
from .cache_watch import MISS_ERROR_TYPE
from .compaction import context_window, fit_window
from .deps import TurnDeps
from .log import SessionLog
from .request import AWAITING_CLIENT, SessionTool, offered_tools, system_prompt
from .stream import Attempt, ResponseRecorder, cut_short_usage

if TYPE_CHECKING:
    from ..providers.registry import ResolvedModel

__all__ = ["TurnRunner"]

ENGINE_RETRY = RetryPolicy()
"""Retries of a request that failed after part of it was shown (the provider retries earlier failures)."""


class TurnRunner:
    def __init__(
        self,
        log: SessionLog,
        deps: TurnDeps,
        thread_id: str | None = None,
        *,
        tool_choices: Sequence[str] = (),
        agent: Agent | None = None,
        tools: Sequence[SessionTool] = (),
        awaiting_client: Callable[[], list[str]] | None = None,
        max_turns: int | None = None,
    ) -> None:
        """``agent`` runs a spawned thread on an agent other than the session's (which may change between
        requests, when the session pins another version); ``tools`` are the engine's own tools offered;
        ``awaiting_client`` lists the custom tool uses its spawned threads stopped for (the coordinator's);
        ``max_turns`` replaces the session's limit of requests (a workflow step's own)."""
        self.log = log
        self.deps = deps
        self.thread_id = thread_id
        self._recorder = ResponseRecorder(log, thread_id)
        self._agent = agent
        self._session_tools = {t.schema.name: t for t in tools}
        self._tool_choices = list(tool_choices)
        """One per request from the first on ("any", "none" or a tool's name), then the model chooses: a
        forced call is answered, not repeated."""
        self._unanswered: dict[str, ToolCall] = {}
        self._custom_pending: list[str] = []
        self._awaiting_client = awaiting_client
        self._waiting_on_threads = False
        self._max_turns = max_turns

    @property
    def scope(self) -> str:
        """The tool scope calls are made in: the session's for its own agent, else the thread's agent's."""
        return self._agent.id if self._agent is not None else self.log.tool_scope

    @property
    def agent(self) -> Agent:
        return self._agent if self._agent is not None else self.log.agent

    # ------------------------------------------------------------------------------------------ loop

    async def run(self) -> StopReason:
        try:
            return await self._loop()
        except TurnFailedError as failure:
            return ErrorStop(message=failure.message)
        except asyncio.CancelledError:
            self._answer_unanswered("interrupted by the user before the tool finished")
            raise

    async def _loop(self) -> StopReason:
        log = self.log
        for _ in range(self._max_turns or log.record.max_turns):
            self._deliver_steering()
            agent = self.agent
            resolved = self.deps.resolve_model(agent.model)
            offered = self.offered_tools(agent)
            request = ModelRequest(
                model=resolved.model,
                system=system_prompt(log, self.deps, agent, primary=self.thread_id is None),
                messages=log.history(self.thread_id).messages(images=resolved.config.images),
                tools=offered,
                server_tools=agent.server_tools,
                settings=self._settings(resolved.config.settings()),
            )
            try:
                request = await fit_window(self, resolved, request)
                response = await self._request(resolved, request)
            except BudgetExhaustedError as refused:
                if str(refused):
                    self._emit_error("budget_reached", str(refused))
                return BudgetReached()
            if response.tool_calls:
                stop = await self._run_tools({t.name for t in offered})
                if stop is not None:
                    return stop
                continue
            if response.stop_reason == "pause_turn":
                continue
            if response.stop_reason == "refusal":
                details = response.stop_details or {}
                explanation = details.get("explanation") or details.get("category") or "no details given"
                self._emit_error("refusal", f"the model declined to answer: {explanation}")
            elif response.stop_reason == "model_context_window_exceeded":
                message = (
                    "the conversation no longer fits the model's context window; compact it (%compact, or "
                    "Session.compact) and run the cell again"
                )
                self._emit_error("context_window_exceeded", message)
                return ErrorStop(message=message)
            elif response.stop_reason == "max_tokens":
                # The turn ends with the answer, but a cut answer reads like a whole one unless it is said.
                said = "the answer was cut off at max_tokens; raise it (%model NAME max_tokens=N) for a longer one"
                self._emit_error("max_tokens", said)
            if log.steering_pending(self.thread_id):
                continue  # guidance came in while the answer streamed: the model gets to act on it
            return EndTurn()
        return MaxTurns()

    def _deliver_steering(self) -> None:
        """Put the guidance steered in since the last request into this thread's history, as user messages."""
        for blocks in self.log.take_steering(self.thread_id):
            self.log.emit(self.log.make(UserMessage, thread_id=self.thread_id, content=blocks, steered=True))

    def offered_tools(self, agent: Agent) -> list[ToolSchema]:
        own = list(self._session_tools.values())
        return offered_tools(self.log, self.deps, agent, scope=self.scope, thread_id=self.thread_id, own=own)

    def _settings(self, settings: ModelSettings) -> ModelSettings:
        if not self._tool_choices:
            return settings
        return settings.model_copy(update={"tool_choice": self._tool_choices.pop(0)})

    # ------------------------------------------------------------------------------------------ requests

    async def request_once(
        self,
        model: ModelConfig,
        *,
        system: str,
        messages: list[Message],
        tools: Sequence[ToolSchema] = (),
        settings: dict[str, Any] | None = None,
    ) -> ModelResponse:
        """One model request outside the conversation (the grader, the advisor): it holds the budget, is
        billed and spanned in this thread like any request, but its content is returned, not recorded.

        Raises BudgetExhaustedError when it might not fit the budget, TurnFailedError when it failed (the
        ``session.error`` is already emitted).
        """
        resolved = self.deps.resolve_model(model)
        base = resolved.config.settings()
        request = ModelRequest(
            model=resolved.model,
            system=system,
            messages=messages,
            tools=list(tools),
            settings=base.model_copy(update=settings or {}),
        )
        return await self._request(resolved, request, record=False)

    async def _request(self, resolved: ResolvedModel, request: ModelRequest, *, record: bool = True) -> ModelResponse:
        """Stream one response, retrying (up to ENGINE_RETRY.max_retries) a failure after output was shown.

        Every attempt is billed, so every attempt reserves its own worst case first: a retry that might not
        fit what remains of the budget is not sent. ``record`` False: no previews and no content events.
        """
        log = self.log
        pricing = model_pricing(resolved)
        model, asked = resolved.config.id, request
        plan = await fit_request(log, resolved.provider, pricing, asked, shorten=record, model=model)
        request, worst = plan.request, plan.worst_case
        for attempt in range(ENGINE_RETRY.max_retries + 1):
            while not log.reserve_budget(worst):
                if attempt:
                    raise BudgetExhaustedError(
                        "the budget cannot cover another attempt at the request; raise the budget to go on"
                    )
                # Another thread reserved between the fit and now: fit again (it waits or shortens).
                plan = await fit_request(log, resolved.provider, pricing, asked, shorten=record, model=model)
                request, worst = plan.request, plan.worst_case
            try:
                start = log.make(
                    SpanModelRequestStart,
                    thread_id=self.thread_id,
                    model=resolved.config.id,
                    max_tokens=request.settings.max_tokens,
                    budget_shortened_from=plan.shortened_from,
                    preparing=resolved.provider.preparing(),
                    context_turns=len(log.path().turns) - 1 if self.thread_id is None else None,
                    context_window=context_window(resolved),
                )
                log.emit(start)
                accumulator = ResponseAccumulator()
                state = Attempt()
                try:
                    async for event in resolved.provider.stream(request):
                        accumulator.add(event)
                        state.see(event)
                        if record:
                            self._recorder.preview(event, state)
                    response = accumulator.finish()
                except ProviderError as error:
                    self._end_span(
                        start, cut_short_usage(accumulator.usage, state, request), pricing, worst, source=state.source
                    )
                    retry = state.shown and error.retryable and attempt < ENGINE_RETRY.max_retries
                    self._emit_error(
                        _error_type(error),
                        str(error),
                        "retrying" if retry else "terminal",
                        attempt=(attempt + 1, ENGINE_RETRY.max_retries + 1),
                    )
                    if not retry:
                        raise TurnFailedError(str(error)) from error
                    await asyncio.sleep(ENGINE_RETRY.delay(attempt, error.retry_after))
                    continue
                except asyncio.CancelledError:
                    self._recorder.keep_interrupted_text(state)
                    self._end_span(
                        start, cut_short_usage(accumulator.usage, state, request), pricing, worst, source=state.source
                    )
                    raise
                if record:
                    self._commit(response, state)
                self._end_span(
                    start, response.usage, pricing, worst, stop_reason=response.stop_reason, source=state.source
                )
                if record and (warning := log.cache_watch.observe(self.thread_id, request, response.usage)):
                    self._emit_error(MISS_ERROR_TYPE, warning)
                return response
            finally:
                log.release_budget(worst)
        raise AssertionError("unreachable: the last attempt either returns or raises")

    def _end_span(
        self,
        start: SpanModelRequestStart,
        usage: Usage,
        pricing: Pricing | None,
        ceiling: Decimal,
        *,
        stop_reason: str | None = None,
        source: Literal["replay", "live"] | None = None,
    ) -> None:
        """Close the request's span with its priced usage and add that to the session's usage. A cost past
        the request's worst case (``ceiling``) is usage the request could not have produced: it is priced at
        the ceiling, so the budget holds, and reported as a provider anomaly."""
        if pricing is None:  # no known list price: the request's cost is unknown, not $0
            priced = usage.model_copy(update={"list_cost": None, "unpriced_requests": 1})
            self._close_span(start, priced, stop_reason, source)
            return
        cost = pricing(usage)
        if cost > ceiling:
            self._emit_error(
                "provider_usage_anomaly",
                f"the provider reported usage worth {format_usd(cost)} at list price for a request that could cost "
                f"at most {format_usd(ceiling)} ({usage.input_tokens:,} input and {usage.output_tokens:,} output "
                f"tokens reported, max_tokens {start.max_tokens}); it is counted at {format_usd(ceiling)}",
            )
        self._close_span(start, price_usage(pricing, usage, ceiling=ceiling), stop_reason, source)

    def _close_span(
        self,
        start: SpanModelRequestStart,
        priced: Usage,
        stop_reason: str | None,
        source: Literal["replay", "live"] | None = None,
    ) -> None:
        self.log.emit(
            self.log.make(
                SpanModelRequestEnd,
                thread_id=self.thread_id,
                model_request_start_id=start.id,
                is_error=stop_reason is None,
                model_usage=priced,
                stop_reason=stop_reason,
                source=source,
            )
        )
        self.log.add_usage(priced, thread_id=self.thread_id)

    def _commit(self, response: ModelResponse, state: Attempt) -> None:
        """Record the complete response; its tool calls wait to be run (custom ones, for the client)."""
        custom = {t.name for t in self.agent.custom_tools}
        for use in self._recorder.commit(response, state, custom=custom, evaluate=self._evaluate_permission):
            if isinstance(use, AgentToolUse):
                self._unanswered[use.id] = self._call(use.id, use.call_id, use.name, use.input)
            else:
                self._custom_pending.append(use.id)

    def _call(self, tool_use_id: str, call_id: str, name: str, tool_input: dict[str, Any]) -> ToolCall:
        return ToolCall(
            tool_use_id=tool_use_id,
            call_id=call_id,
            name=name,
            input=tool_input,
            scope=self.scope,
            session_id=self.log.id,
            thread_id=self.thread_id,
            preset=self.log.record.permissions,
        )

    def _evaluate_permission(self, event_id: str, part: ToolCallPart) -> Literal["allow", "ask", "deny"] | None:
        """What the preset says of the call, for front ends; a host that cannot tell says nothing."""
        if part.name in self._session_tools:
            return "allow"  # the engine's own tools act on the session, not the world: no preset applies
        evaluate = getattr(self.deps.tools, "evaluate_permission", None)
        if evaluate is None:
            return None
        try:
            verdict: Literal["allow", "ask", "deny"] = evaluate(self._call(event_id, part.id, part.name, part.input))
        except Exception:  # the pipeline judges the call again when it runs, and answers with a result
            return None
        return verdict

    # ------------------------------------------------------------------------------------------ tools

    async def _run_tools(self, offered: set[str]) -> StopReason | None:
        """Run the response's tool calls: consecutive parallel-safe calls together, others alone, results
        recorded in call order. Custom tools are left for the client: the turn then requires action."""
        batch: list[ToolCall] = []
        for call in list(self._unanswered.values()):
            if call.name in offered and self._execution_mode(call) == "parallel":
                batch.append(call)
                continue
            await self._run_batch(batch, offered)
            batch = []
            await self._run_batch([call], offered)
        await self._run_batch(batch, offered)
        if self._waiting_on_threads and self._awaiting_client is not None:
            # A thread it waited for stopped for a custom tool: this thread pauses too, its wait left open
            # until the client's answer resumes the thread (engine/turn.py answers the wait then).
            self._waiting_on_threads = False
            return RequiresAction(event_ids=[*self._custom_pending, *self._awaiting_client()])
        if self._custom_pending:
            pending, self._custom_pending = self._custom_pending, []
            return RequiresAction(event_ids=pending)
        return None

    async def _run_batch(self, calls: list[ToolCall], offered: set[str]) -> None:
        if not calls:
            return
        host = self.deps.tools
        approver = self.deps.approver

        async def one(call: ToolCall) -> ToolResult:
            if call.name not in offered:
                return ToolResult.error(f"no tool named {call.name!r} is available", "UNKNOWN_TOOL")
            own = self._session_tools.get(call.name)
            # The engine's own tools go through the same pipeline (hooks, guards, observers) as any other.
            return await host.execute(call, approver=approver, definition=own.definition() if own else None)

        results = await asyncio.gather(*(one(call) for call in calls)) if len(calls) > 1 else [await one(calls[0])]
        for call, result in zip(calls, results, strict=True):
            if result.error_code == AWAITING_CLIENT and self._awaiting_client is not None:
                self._unanswered.pop(call.tool_use_id, None)
                self._waiting_on_threads = True
                continue
            self._answer(call, result)

    def _execution_mode(self, call: ToolCall) -> Literal["parallel", "exclusive"]:
        own = self._session_tools.get(call.name)
        if own is not None:
            return "parallel" if own.parallel else "exclusive"
        return self.deps.tools.execution_mode(call)

    def _answer(self, call: ToolCall, result: ToolResult) -> None:
        self._unanswered.pop(call.tool_use_id, None)
        self.log.emit(
            self.log.make(
                AgentToolResult,
                thread_id=self.thread_id,
                tool_use_id=call.tool_use_id,
                content=list(result.content),
                is_error=result.is_error,
                full_text=result.full_text,
                displays=list(result.displays),
                error_code=result.error_code if result.is_error else None,
                denied_by=result.denied_by,
            )
        )

    def _answer_unanswered(self, reason: str) -> None:
        for call in list(self._unanswered.values()):
            self._answer(call, ToolResult.error(reason, "INTERRUPTED"))

    # ------------------------------------------------------------------------------------------ errors

    def _emit_error(
        self,
        error_type: str,
        message: str,
        retry_status: Literal["retrying", "exhausted", "terminal"] = "terminal",
        *,
        attempt: tuple[int, int] | None = None,
    ) -> None:
        """``attempt``: (which attempt at a model request failed, how many the engine makes)."""
        number, of = attempt if attempt is not None else (None, None)
        info = ErrorInfo(type=error_type, message=message, retry_status=retry_status, attempt=number, max_attempts=of)
        self.log.emit(self.log.make(SessionError, thread_id=self.thread_id, error=info))


def _error_type(error: ProviderError) -> str:
    if isinstance(error, ProviderAuthError):
        return "authentication_error"
    if isinstance(error, ProviderProtocolError):
        return "protocol_error"
    if isinstance(error, ProviderConnectionError):
        return "model_connection_error"
    if error.status_code == 429 or error.error_type == "rate_limit_error":
        return "model_rate_limited_error"
    if error.status_code == 529 or error.error_type == "overloaded_error":
        return "model_overloaded_error"
    return "model_request_failed_error"
