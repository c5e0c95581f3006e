"""One step item, run as a session thread: its own events, its own history, its own usage.

The thread opens like a spawned thread (``session.thread_created``, the task sent from the coordinator's
thread) and runs the turn loop on the step's agent, limited to the step's ``max_turns``. With an outcome the
thread opens with a ``user.define_outcome`` of its own instead, and the outcome loop grades and revises the
work in that thread. With an output schema the task asks for a JSON value; the final message must hold one
that the schema accepts, and the agent gets one more turn to fix an answer that does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...events import (
    AgentMessage,
    AgentThreadMessageReceived,
    AgentThreadMessageSent,
    BudgetReached,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    Interrupted,
    MaxTurns,
    RequiresAction,
    SessionError,
    SessionThreadCreated,
    SessionThreadStatusIdle,
    SessionThreadStatusRunning,
    SpanModelRequestEnd,
    StopReason,
    SystemMessage,
    TextBlock,
    TextRubric,
    UserDefineOutcome,
)
from ...ids import new_id
from ...records.workflow_events import WorkflowStepOutcome
from ...usage import Usage
from ..deps import TurnDeps
from ..log import SessionLog
from ..outcomes import OutcomeLoop
from ..runner import TurnRunner
from .validate import CheckedStep

__all__ = ["ItemResult", "StepThread", "task_text"]

SCHEMA_REPAIRS = 1
"""Extra turns an agent gets to give an answer its step's output schema accepts."""


def task_text(step: CheckedStep, prompt: str) -> str:
    """What the step's thread is asked: the rendered prompt, and for an output schema the form of the answer."""
    schema = step.spec.output_schema
    if schema is None:
        return prompt
    return (
        f"{prompt}\n\nAnswer with only a JSON value, nothing around it, that matches this JSON schema:\n"
        f"{json.dumps(schema, ensure_ascii=False)}"
    )


@dataclass(frozen=True, slots=True)
class ItemResult:
    ok: bool
    output: Any
    error: str | None
    stop_reason: str
    usage: Usage
    outcome: WorkflowStepOutcome | None = None

    @property
    def budget_reached(self) -> bool:
        return self.stop_reason == "budget_reached"


class StepThread:
    """Runs one step item in the thread ``thread_id`` of the coordinator's thread ``parent_id``."""

    def __init__(
        self,
        log: SessionLog,
        deps: TurnDeps,
        step: CheckedStep,
        thread_id: str,
        *,
        parent_id: str | None,
        tool_use_id: str | None,
    ) -> None:
        self.log = log
        self.deps = deps
        self.step = step
        self.thread_id = thread_id
        self.parent_id = parent_id
        self.tool_use_id = tool_use_id
        self._outcome: OutcomeLoop | None = None
        self._created_id: str | None = None
        self._read: tuple[str, Usage] | None = None
        """The last message and usage as ``_output`` read them, while nothing was emitted since."""

    async def run(
        self,
        task: str,
        *,
        before: Callable[[], None] | None = None,
        after: Callable[[ItemResult], None] | None = None,
        hold_close: bool = False,
    ) -> ItemResult:
        """Run the item to its end. The thread's opening events (with what ``before`` emits, first) are stored
        in one transaction, and so are its closing ones (with what ``after`` emits for the result, last):
        nothing is awaited inside either. ``hold_close``: the closing joins the transaction of the next
        block the log begins before anything is awaited (the opening of a step that follows at once)."""
        with self.log.batched():
            if before is not None:
                before()
            self._open(task)
        stop, output, problem = await self._work_to_end()
        with self.log.batched(hold=hold_close):
            result = self._close(stop, output, problem)
            if after is not None:
                after(result)
        return result

    def _open(self, task: str) -> None:
        log, step, thread_id = self.log, self.step, self.thread_id
        agent = step.agent
        created = log.make(
            SessionThreadCreated,
            thread_id=self.parent_id,
            session_thread_id=thread_id,
            agent_id=agent.id,
            agent_version=None if step.inline else agent.version,
            agent_name=agent.name,
            model=agent.model.id,
            tool_use_id=self.tool_use_id,
            inline_agent=agent.model_dump(mode="json") if step.inline else None,
        )
        log.new_thread(thread_id)
        log.emit(created)
        self._created_id = created.id
        content = [TextBlock(text=task)]
        log.emit(log.make(AgentThreadMessageSent, thread_id=self.parent_id, to_thread_id=thread_id, content=content))
        outcome = step.spec.outcome
        if outcome is not None:
            define = log.make(
                UserDefineOutcome,
                thread_id=thread_id,
                outcome_id=new_id("outc"),
                description=task,
                rubric=TextRubric(content=outcome.rubric),
                max_iterations=outcome.max_iterations,
                grader_model=outcome.grader_model,
            )
            log.emit(define)
            self._outcome = OutcomeLoop(log, self.deps, define, agent=agent)
            self._outcome.announce()
        else:
            log.emit(
                log.make(
                    AgentThreadMessageReceived, thread_id=thread_id, from_thread_id=self.parent_id, content=content
                )
            )
        log.emit(log.make(SessionThreadStatusRunning, thread_id=thread_id))

    async def _work_to_end(self) -> tuple[StopReason, Any, str | None]:
        """The work, with the repairs an output schema may need: how it stopped, the output, what is wrong."""
        log, step, thread_id = self.log, self.step, self.thread_id
        stop: StopReason = EndTurn()
        output: Any = None
        problem: str | None = None
        try:
            stop = await self._work()
            if isinstance(stop, EndTurn):
                output, problem = self._output()
                for _ in range(SCHEMA_REPAIRS):
                    if problem is None or step.spec.output_schema is None:
                        break
                    self._ask_again(problem)
                    stop = await self._runner().run()
                    if not isinstance(stop, EndTurn):
                        break
                    output, problem = self._output()
        except asyncio.CancelledError:
            # The item ends normally, "interrupted", so the run records it; the run itself re-raises.
            stop = Interrupted()
        except Exception as exc:  # a bug must not leave the thread running forever
            message = f"{type(exc).__name__}: {exc}"
            log.emit(
                log.make(SessionError, thread_id=thread_id, error=ErrorInfo(type="unknown_error", message=message))
            )
            stop = ErrorStop(message=message)
        return stop, output, problem

    def _close(self, stop: StopReason, output: Any, problem: str | None) -> ItemResult:
        log, step, thread_id = self.log, self.step, self.thread_id
        final, usage = self._final_and_usage() if self._read is None else self._read
        log.emit(log.make(SessionThreadStatusIdle, thread_id=thread_id, stop_reason=stop, usage=usage))
        if final:
            reply = [TextBlock(text=final)]
            log.emit(log.make(AgentThreadMessageSent, thread_id=thread_id, to_thread_id=self.parent_id, content=reply))
        graded = self._graded()
        if isinstance(stop, EndTurn) and problem is None:
            return ItemResult(
                True, final if step.spec.output_schema is None else output, None, stop.type, usage, graded
            )
        error = problem if isinstance(stop, EndTurn) else _why(stop, step)
        return ItemResult(False, None, error, stop.type, usage, graded)

    # ------------------------------------------------------------------------------------------ the work

    def _runner(self) -> TurnRunner:
        step = self.step
        return TurnRunner(self.log, self.deps, self.thread_id, agent=step.agent, max_turns=step.spec.max_turns)

    async def _work(self) -> StopReason:
        """The turn loop, or the outcome loop around it: an outcome that reached a verdict, whatever the
        verdict, ends the work (the verdict is reported apart); one stopped by an error stops the step."""
        if self._outcome is not None:
            return await self._outcome.run(self._runner)
        return await self._runner().run()

    def _graded(self) -> WorkflowStepOutcome | None:
        loop = self._outcome
        if loop is None or loop.state.status not in ("satisfied", "max_iterations_reached", "failed", "interrupted"):
            return None
        state = loop.state
        return WorkflowStepOutcome(
            outcome_id=state.outcome_id,
            status=state.status,
            explanation=state.explanation,
            iteration=state.iteration,
        )

    def _ask_again(self, problem: str) -> None:
        self._read = None
        text = f"{problem}. Reply again with only the JSON value that the schema accepts."
        self.log.emit(self.log.make(SystemMessage, thread_id=self.thread_id, content=[TextBlock(text=text)]))

    def _output(self) -> tuple[Any, str | None]:
        """The step's output as its schema wants it, or why the final message is not one."""
        schema = self.step.spec.output_schema
        final = self._last_message()
        if schema is None:
            return final, None
        value, problem = parse_json_answer(final)
        if problem is not None:
            return None, problem
        # Imported when a step has a schema: jsonschema compiles ~40 grammars at import (rfc3987-syntax,
        # present with Jupyter's own format checks), seconds of a first turn that has no use for it.
        from jsonschema.exceptions import best_match
        from jsonschema.validators import validator_for

        error = best_match(validator_for(schema)(schema).iter_errors(value))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "the value"
            return None, f"the answer does not match the step's output schema at {where}: {error.message}"
        return value, None

    def _last_message(self) -> str:
        self._read = self._final_and_usage()
        return self._read[0]

    def _final_and_usage(self) -> tuple[str, Usage]:
        """The thread's last message and the sum of its requests (read from the thread's creation on)."""
        final, usage = "", Usage()
        events = self.log.events(types=("agent.message", "span.model_request_end"), after_id=self._created_id)
        for event in events:
            if event.thread_id != self.thread_id:
                continue
            if isinstance(event, AgentMessage):
                final = "".join(b.text for b in event.content if isinstance(b, TextBlock))
            elif isinstance(event, SpanModelRequestEnd):
                usage = usage + event.model_usage
        return final, usage


def parse_json_answer(text: str) -> tuple[Any, str | None]:
    """The JSON value a final message holds (in a code fence or bare), or why it holds none."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    if not body:
        return None, "the answer is empty, and the step's output schema wants a JSON value"
    try:
        return json.loads(body), None
    except ValueError:
        pass
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = body.find(opener), body.rfind(closer)
        if 0 <= start < end:
            with contextlib.suppress(ValueError):
                return json.loads(body[start : end + 1]), None
    return None, f"the answer is not JSON: {body[:200]!r}"


def _why(stop: StopReason, step: CheckedStep) -> str:
    if isinstance(stop, MaxTurns):
        return f"the step's agent reached max_turns ({step.spec.max_turns or 'the session limit'}) before it finished"
    if isinstance(stop, BudgetReached):
        return "the budget cannot cover the step's next request"
    if isinstance(stop, ErrorStop):
        return stop.message
    if isinstance(stop, RequiresAction):
        return "the step's agent called a custom tool, which nothing answers inside a workflow run"
    if isinstance(stop, Interrupted):
        return "interrupted before the step finished"
    return f"the step stopped ({stop.type})"
