"""Outcomes: the agent works, a grader scores the work against a rubric, and the agent revises until the
grader is satisfied, gives up, or the revision cycles run out.

``session.define_outcome(description, rubric=..., max_iterations=3)`` (or ``session.send(OutcomeSpec(...))``)
appends ``user.define_outcome``, whose text opens the agent's work like a user message. Each revision cycle
(counted from 0) is one run of the turn loop followed by an evaluation: the grader (its own model request,
on ``grader_model`` or the agent's model) gets the description, the rubric and the cycle's work, and must
call ``submit_verdict`` with ``satisfied``, ``needs_revision`` (what is missing) or ``failed`` (why it cannot
be reached) and an explanation. A needs_revision verdict reaches the agent as a ``system.message`` and the
next cycle begins; on the last allowed cycle it ends the outcome as ``max_iterations_reached``.

Events: ``span.outcome_evaluation_start``/``_end`` around each evaluation (the end carries the result, the
explanation and the grader's usage, which is also the session's), and ``session.outcome_updated`` with the
outcome's whole state at every change, so the session's outcome is the latest one. An interrupt ends the
outcome as ``interrupted``; a turn that pauses for a custom tool's answer resumes the outcome when the answer
comes. The grader's request goes through the runner like any other: the budget is held for it, and a
budget that cannot cover it ends the outcome as ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from ..errors import BudgetExhaustedError, InvalidInputError, TurnFailedError
from ..events import (
    AgentMessage,
    AgentToolResult,
    AgentToolUse,
    BudgetReached,
    EndTurn,
    ErrorStop,
    Event,
    FileRubric,
    Outcome,
    OutcomeResult,
    RequiresAction,
    SessionOutcomeUpdated,
    SpanModelRequestEnd,
    SpanOutcomeEvaluationEnd,
    SpanOutcomeEvaluationStart,
    StopReason,
    SystemMessage,
    TextBlock,
    TextRubric,
    UserDefineOutcome,
    UserMessage,
)
from ..ids import new_id
from ..providers.base import Message, ModelConfig, ModelResponse, TextPart, ToolSchema
from ..records.agent import Agent
from ..records.common import utc_now
from ..usage import Usage
from .deps import TurnDeps
from .log import SessionLog
from .runner import TurnRunner

__all__ = ["GRADER_SYSTEM", "VERDICT_TOOL", "OutcomeLoop", "OutcomeSpec", "Verdict"]

MAX_WORK_CHARS = 40_000
"""The grader sees at most this much of a cycle's work (its end, where the result is)."""

VERDICT_TOOL = ToolSchema(
    name="submit_verdict",
    description="Submit your verdict on the agent's work.",
    input_schema={
        "type": "object",
        "properties": {
            "result": {"type": "string", "enum": ["satisfied", "needs_revision", "failed"]},
            "explanation": {
                "type": "string",
                "maxLength": 500,
                "description": "Why the criteria are met; what is missing; or why the outcome cannot be reached.",
            },
        },
        "required": ["result", "explanation"],
        "additionalProperties": False,
    },
)

GRADER_SYSTEM = (
    "You grade an AI agent's work against a rubric. Judge only what the work shows, criterion by criterion, "
    "and answer by calling submit_verdict: 'satisfied' when every criterion is met; 'needs_revision' when the "
    "agent can still fix what is missing (say exactly what); 'failed' when the outcome cannot be reached at "
    "all (say why)."
)
GRADER_MAX_TOKENS = 1024
"""Room for the verdict call (the explanation is capped at 500 characters: a grammar-constrained local
grader spends a token per few characters, and a verdict says what is missing in a few sentences)."""


@dataclass(frozen=True, slots=True)
class OutcomeSpec:
    """What the user wants produced; send it like a message: ``await session.ask(OutcomeSpec(...))``."""

    description: str
    rubric: str | TextRubric | FileRubric
    """The criteria: text, or ``FileRubric(path=...)`` naming a file in the session's workspace."""
    max_iterations: int = 3
    grader_model: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    result: Literal["satisfied", "needs_revision", "failed"]
    explanation: str


def define_event(log: SessionLog, deps: TurnDeps, spec: OutcomeSpec) -> UserDefineOutcome:
    """The ``user.define_outcome`` for ``spec``; raises InvalidInputError (nothing is appended) when it is
    not valid: an empty description or rubric, a rubric file that is not there, iterations outside 1-20."""
    if not isinstance(spec.description, str) or not spec.description.strip():
        raise InvalidInputError("an outcome needs a description of what to produce")
    rubric = TextRubric(content=spec.rubric) if isinstance(spec.rubric, str) else spec.rubric
    if isinstance(rubric, TextRubric) and not rubric.content.strip():
        raise InvalidInputError("an outcome needs a rubric: the criteria the grader checks the work against")
    if isinstance(rubric, FileRubric):
        _read_rubric_file(deps.workspace, rubric.path)
    if isinstance(spec.max_iterations, bool) or not isinstance(spec.max_iterations, int):
        raise InvalidInputError(f"max_iterations is an integer from 1 to 20, not {spec.max_iterations!r}")
    if not 1 <= spec.max_iterations <= 20:
        raise InvalidInputError(f"max_iterations is from 1 to 20, not {spec.max_iterations}")
    if spec.grader_model is not None:
        deps.resolve_model(ModelConfig(id=spec.grader_model))  # an unknown model fails now, not later
    return log.make(
        UserDefineOutcome,
        outcome_id=new_id("outc"),
        description=spec.description.strip(),
        rubric=rubric,
        max_iterations=spec.max_iterations,
        grader_model=spec.grader_model,
    )


def _read_rubric_file(root: Path, path: str) -> str:
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise InvalidInputError(f"the rubric file {path} is outside the workspace {root}")
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the rubric file {path} in {root}: {exc}") from None
    if not text.strip():
        raise InvalidInputError(f"the rubric file {path} is empty")
    return text


class OutcomeLoop:
    """Drives one outcome through its revision cycles (see the module docstring)."""

    def __init__(
        self, log: SessionLog, deps: TurnDeps, define: UserDefineOutcome, *, agent: Agent | None = None
    ) -> None:
        """``define`` in a spawned thread (a workflow step's outcome) drives that thread, whose agent is
        ``agent``: its events, its grading request and its revision feedback carry the thread's id."""
        self.log = log
        self.deps = deps
        self.define = define
        self.thread_id = define.thread_id
        self._agent = agent
        latest = log.outcome if self.thread_id is None else None
        if latest is not None and latest.outcome_id == define.outcome_id:
            self.state = latest
        else:
            self.state = Outcome(
                outcome_id=define.outcome_id,
                description=define.description,
                status="pending",
                max_iterations=define.max_iterations,
            )
        self._evaluation: SpanOutcomeEvaluationStart | None = None

    @classmethod
    def active(cls, log: SessionLog, deps: TurnDeps) -> OutcomeLoop | None:
        """The loop of the session's outcome still being worked on (paused for a custom tool), if any."""
        state = log.outcome
        if state is None or state.terminal:
            return None
        define = next(
            (
                e
                for e in reversed(list(log.events(types=("user.define_outcome",))))
                if isinstance(e, UserDefineOutcome) and e.thread_id is None
            ),
            None,
        )
        if define is None or define.outcome_id != state.outcome_id:
            return None
        return cls(log, deps, define)

    def _update(self, **changes: Any) -> None:
        self.state = self.state.model_copy(update=changes)
        self.log.emit(self.log.make(SessionOutcomeUpdated, thread_id=self.thread_id, outcome=self.state))

    def _finish(self, status: str, explanation: str | None) -> None:
        changes: dict[str, Any] = {"status": status, "completed_at": utc_now()}
        if explanation is not None:
            changes["explanation"] = explanation
        self._update(**changes)

    def announce(self) -> None:
        """The outcome's first state, right after its definition."""
        self._update()

    def supersede(self, why: str) -> None:
        """The outcome was paused (for a custom tool's answer) and the next turn is not its answer: it
        stops here, ``why`` saying what came instead."""
        self._finish("interrupted", f"{why} before the outcome finished")

    async def run(self, make_runner: Callable[[], TurnRunner], *, resumed: bool = False) -> StopReason:
        """Work (each cycle with a runner from ``make_runner``), evaluate and revise until a terminal
        result; returns the turn's stop reason. ``resumed``: the cycle under way was paused for a custom
        tool's answer and goes on."""
        try:
            running = resumed  # a resumed cycle is running already
            while True:
                if not running:
                    self._update(status="running")
                running = False
                stop = await make_runner().run()
                if isinstance(stop, RequiresAction):
                    return stop  # the outcome stays running; the client's answer resumes it
                if isinstance(stop, BudgetReached):
                    self._finish("failed", "the budget was reached before the outcome was met")
                    return stop
                if isinstance(stop, ErrorStop):
                    self._finish("failed", f"the work stopped on an error: {stop.message}")
                    return stop
                try:
                    verdict = await self._evaluate()
                except BudgetExhaustedError:
                    self._end_evaluation("failed", "the budget cannot cover the grader's request", Usage())
                    self._finish("failed", "the budget cannot cover the grader's request")
                    return BudgetReached()
                except TurnFailedError as failure:
                    explanation = f"the grader's request failed: {failure.message}"
                    self._end_evaluation("failed", explanation, self._evaluation_usage())
                    self._finish("failed", explanation)
                    return ErrorStop(message=failure.message)
                result: OutcomeResult = verdict.result
                last = self.state.iteration + 1 >= self.state.max_iterations
                if result == "needs_revision" and last:
                    result = "max_iterations_reached"
                self._end_evaluation(result, verdict.explanation, self._evaluation_usage())
                if result != "needs_revision":
                    self._finish(result, verdict.explanation)
                    return EndTurn()
                # needs_revision is the verdict, not a status: the outcome is running again, a cycle further.
                self._feedback(verdict.explanation)
                self._update(status="running", explanation=verdict.explanation, iteration=self.state.iteration + 1)
                running = True
        except asyncio.CancelledError:
            if self._evaluation is not None:
                self._end_evaluation("interrupted", "interrupted by the user while grading", self._evaluation_usage())
            self._finish("interrupted", None)
            raise

    # ------------------------------------------------------------------------------------------ grading

    async def _evaluate(self) -> Verdict:
        log = self.log
        self._update(status="evaluating")
        self._evaluation = log.make(
            SpanOutcomeEvaluationStart,
            thread_id=self.thread_id,
            outcome_id=self.state.outcome_id,
            iteration=self.state.iteration,
        )
        log.emit(self._evaluation)
        rubric = self._rubric()
        if rubric is None:
            path = cast(FileRubric, self.define.rubric).path
            return Verdict("failed", f"the rubric file {path} can no longer be read")
        prompt = (
            f"The outcome the agent was asked to produce:\n{self.define.description}\n\n"
            f"The rubric:\n{rubric}\n\n"
            f"The agent's work in revision cycle {self.state.iteration} (counted from 0):\n{self._work()}\n\n"
            "Grade the work against the rubric and call submit_verdict."
        )
        worker = self._agent or log.agent
        model = ModelConfig(id=self.define.grader_model) if self.define.grader_model else worker.model
        settings = {
            "tool_choice": VERDICT_TOOL.name,
            # A forced tool call cannot be combined with extended thinking; the verdict is short.
            "thinking_budget": None,
            "max_tokens": max(GRADER_MAX_TOKENS, model.max_tokens or 0),
            "temperature": 0,
        }
        response = await TurnRunner(log, self.deps, self.thread_id).request_once(
            model,
            system=GRADER_SYSTEM,
            messages=[Message(role="user", content=[TextPart(text=prompt)])],
            tools=[VERDICT_TOOL],
            settings=settings,
        )
        return parse_verdict(response)

    def _rubric(self) -> str | None:
        rubric = self.define.rubric
        if isinstance(rubric, TextRubric):
            return rubric.content
        try:
            return _read_rubric_file(self.deps.workspace, rubric.path)
        except InvalidInputError:
            return None

    def _work(self) -> str:
        """The working thread's events of this cycle, as text: since the cycle's ``running`` update."""
        events = list(self.log.events())
        start = 0
        for index, event in enumerate(events):
            if (
                isinstance(event, SessionOutcomeUpdated)
                and event.outcome.outcome_id == self.state.outcome_id
                and event.outcome.status == "running"
            ):
                start = index
        lines = [_describe(e) for e in events[start:] if e.thread_id == self.thread_id]
        text = "\n".join(line for line in lines if line)
        if len(text) > MAX_WORK_CHARS:
            text = "[... earlier work cut ...]\n" + text[-MAX_WORK_CHARS:]
        return text or "(the agent produced nothing)"

    def _evaluation_usage(self) -> Usage:
        """The grader's usage: the requests of the working thread since the evaluation began."""
        if self._evaluation is None:
            return Usage()
        total = Usage()
        for event in self.log.events(types=("span.model_request_end",), after_id=self._evaluation.id):
            if isinstance(event, SpanModelRequestEnd) and event.thread_id == self.thread_id:
                total = total + event.model_usage
        return total

    def _end_evaluation(self, result: OutcomeResult, explanation: str, usage: Usage) -> None:
        start, self._evaluation = self._evaluation, None
        if start is None:
            return
        self.log.emit(
            self.log.make(
                SpanOutcomeEvaluationEnd,
                thread_id=self.thread_id,
                outcome_evaluation_start_id=start.id,
                outcome_id=start.outcome_id,
                iteration=start.iteration,
                result=result,
                explanation=explanation,
                usage=usage,
            )
        )

    def _feedback(self, explanation: str) -> None:
        cycle = self.state.iteration + 1
        text = (
            f"The grader checked your work against the rubric: it needs revision. {explanation}\n\n"
            f"Revise the work (revision cycle {cycle} of at most {self.state.max_iterations - 1})."
        )
        self.log.emit(self.log.make(SystemMessage, thread_id=self.thread_id, content=[TextBlock(text=text)]))


def parse_verdict(response: ModelResponse) -> Verdict:
    """The verdict in the grader's response: its submit_verdict call, or (from a model that answered in
    text) a JSON object with the same fields. Anything else is a failed outcome that says so."""
    candidates: list[Any] = [c.input for c in response.tool_calls if c.name == VERDICT_TOOL.name]
    text = response.text.strip()
    if not candidates and text:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            with contextlib.suppress(ValueError):  # not JSON: no verdict, said below
                candidates.append(json.loads(text[start : end + 1]))
    for candidate in candidates:
        if not isinstance(candidate, dict):
            continue
        result, explanation = candidate.get("result"), candidate.get("explanation")
        if result in ("satisfied", "needs_revision", "failed") and isinstance(explanation, str):
            return Verdict(result, explanation.strip() or "(no explanation given)")
    said = f": it said {text[:300]!r}" if text else ""
    return Verdict("failed", f"the grader gave no valid verdict{said}")


def _describe(event: Event) -> str:
    match event:
        case AgentMessage():
            return "Agent: " + "".join(b.text for b in event.content if isinstance(b, TextBlock))
        case AgentToolUse():
            return f"Agent calls {event.name}({json.dumps(event.input, ensure_ascii=False)[:2000]})"
        case AgentToolResult():
            body = "".join(b.text for b in event.content if isinstance(b, TextBlock))
            return f"{'Tool error' if event.is_error else 'Tool result'}: {body[:4000]}"
        case UserMessage():
            return "User: " + "".join(b.text for b in event.content if isinstance(b, TextBlock))
        case _:
            return ""
