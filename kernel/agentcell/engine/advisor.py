"""The advisor: a second model the agent's primary thread may consult.

An agent that names an ``advisor`` model (permitted for its own model by the engine's allow-list, checked
when the agent is created or updated) gets the ``consult_advisor`` tool in the primary thread. The advisor
sees the conversation so far, as a transcript, and the agent's question; its answer comes back as the
tool's result. The advisor's request goes through the runner, so it holds the budget and its usage is the
session's like any other request (its span names the advisor's model).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..errors import BudgetExhaustedError, TurnFailedError
from ..events import AgentMessage, AgentToolResult, AgentToolUse, Event, TextBlock, UserMessage
from ..providers.base import Message, ModelConfig, TextPart, ToolSchema
from ..records.agent import Agent
from ..tools.base import ToolCall, ToolResult
from .deps import TurnDeps
from .log import SessionLog
from .request import SessionTool
from .runner import TurnRunner

__all__ = ["ADVISOR_SYSTEM", "ADVISOR_TOOL", "advisor_tools"]

ADVISOR_TOOL = "consult_advisor"
ADVISOR_SYSTEM = (
    "You advise an AI agent that is working on a user's request. You see its conversation so far and its "
    "question. Answer the question directly and concretely: the approach to take, the mistake to avoid, "
    "the step that comes next. You cannot use tools; the agent acts on your advice."
)
MAX_TRANSCRIPT_CHARS = 60_000


def advisor_tools(log: SessionLog, deps: TurnDeps, agent: Agent) -> list[SessionTool]:
    """``consult_advisor`` when the agent names an advisor model."""
    if agent.advisor is None:
        return []
    advisor = agent.advisor

    async def consult(call: ToolCall) -> ToolResult:
        question = call.input.get("question")
        if not isinstance(question, str) or not question.strip():
            return ToolResult.error("consult_advisor needs a question", "INVALID_INPUT")
        transcript = _transcript(list(log.events()), call.tool_use_id)
        prompt = f"The agent's conversation so far:\n{transcript}\n\nThe agent asks you: {question.strip()}"
        try:
            response = await TurnRunner(log, deps).request_once(
                ModelConfig(id=advisor),
                system=ADVISOR_SYSTEM,
                messages=[Message(role="user", content=[TextPart(text=prompt)])],
            )
        except BudgetExhaustedError:
            return ToolResult.error("the advisor was not consulted: the budget cannot cover its request", "BUDGET")
        except TurnFailedError as failure:
            return ToolResult.error(f"the advisor's request failed: {failure.message}")
        answer = response.text.strip()
        return ToolResult.text(answer) if answer else ToolResult.error("the advisor gave no answer")

    schema = ToolSchema(
        name=ADVISOR_TOOL,
        description=(
            f"Ask a stronger model ({advisor}) for advice when you are stuck or about to make a hard decision. "
            "It sees this conversation; ask one clear question."
        ),
        input_schema={
            "type": "object",
            "properties": {"question": {"type": "string", "description": "What you want advice on."}},
            "required": ["question"],
        },
    )
    return [SessionTool(schema, consult)]


def _transcript(events: list[Event], asking: str) -> str:
    lines: list[str] = []
    for event in events:
        if event.thread_id is not None or event.id == asking:
            continue
        if isinstance(event, UserMessage):
            lines.append("User: " + _text(event.content))
        elif isinstance(event, AgentMessage):
            lines.append("Agent: " + _text(event.content))
        elif isinstance(event, AgentToolUse):
            lines.append(f"Agent calls {event.name}({json.dumps(event.input, ensure_ascii=False)[:2000]})")
        elif isinstance(event, AgentToolResult):
            lines.append(f"{'Tool error' if event.is_error else 'Tool result'}: {_text(event.content)[:4000]}")
    text = "\n".join(lines) or "(nothing yet)"
    return text if len(text) <= MAX_TRANSCRIPT_CHARS else "[... cut ...]\n" + text[-MAX_TRANSCRIPT_CHARS:]


def _text(blocks: Sequence[object]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))
