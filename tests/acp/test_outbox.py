"""The outbox's direct path: text that finds it idle is written by the caller itself, before any task runs;
what follows within the interval queues and goes out joined, in order, and a pipe that is behind makes the
text take the queued way. Every update still validates against the SDK's models."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acp.schema import AgentMessageChunk, SessionNotification, ToolCallStart
from acp.utils import serialize_params

from agentcell.acp.outbox import TEXT_INTERVAL, Outbox, text_params


class Pipe:
    """Both ways to the client: ``write_now`` (the transport's direct write) and the SDK's client call."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.behind = False

    def write_now(self, params: dict[str, Any]) -> bool:
        if self.behind:
            return False
        self.sent.append(("now", json.loads(json.dumps(params))))
        return True

    async def session_update(self, session_id: str, update: Any) -> None:
        params = serialize_params(SessionNotification(session_id=session_id, update=update))
        self.sent.append(("queued", params))

    def texts(self) -> list[tuple[str, str]]:
        return [(way, p["update"]["content"]["text"]) for way, p in self.sent if "content" in p["update"]]


def test_text_params_are_what_the_sdk_dumps() -> None:
    for message_id in ("msg_1", None):
        made = AgentMessageChunk(
            session_update="agent_message_chunk",
            content={"type": "text", "text": "hé \n"},
            message_id=message_id,
        )
        expected = serialize_params(SessionNotification(session_id="sesn_1", update=made))
        assert text_params("sesn_1", "message", message_id, "hé \n") == expected
        SessionNotification.model_validate(text_params("sesn_1", "thought", message_id, "x"))


async def test_the_first_text_is_written_before_the_caller_yields() -> None:
    pipe = Pipe()
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    outbox.put_text("message", "msg_1", "a")
    assert pipe.texts() == [("now", "a")]  # no await in between: no task had a chance to run
    outbox.put_text("message", "msg_1", "b")
    outbox.put_text("message", "msg_1", "c")
    assert pipe.texts() == [("now", "a")]  # within the interval: queued
    await outbox.flush()
    assert pipe.texts() == [("now", "a"), ("queued", "bc")]
    await outbox.close()


async def test_queued_updates_keep_their_turn() -> None:
    pipe = Pipe()
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    outbox.put(
        ToolCallStart(
            session_update="tool_call", tool_call_id="toolu_1", title="Read a.py", kind="read", status="pending"
        )
    )
    outbox.put_text("message", "msg_2", "after the call")  # not written ahead of the queued tool call
    await outbox.flush()
    assert [p["update"]["sessionUpdate"] for _, p in pipe.sent] == ["tool_call", "agent_message_chunk"]
    assert all(way == "queued" for way, _ in pipe.sent)
    await outbox.close()


async def test_a_new_message_and_a_quiet_interval_go_out_at_once() -> None:
    pipe = Pipe()
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    outbox.put_text("message", "msg_1", "one")
    outbox.put_text("thought", "msg_2", "two")  # another message: not held back by the first one's interval
    await asyncio.sleep(TEXT_INTERVAL * 1.5)
    outbox.put_text("thought", "msg_2", "three")  # the interval is past and nothing is queued
    assert pipe.texts() == [("now", "one"), ("now", "two"), ("now", "three")]
    await outbox.close()


async def test_a_pipe_that_is_behind_sends_the_text_the_queued_way() -> None:
    pipe = Pipe()
    pipe.behind = True
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    outbox.put_text("message", "msg_1", "a")
    assert pipe.sent == []
    await outbox.flush()
    assert pipe.texts() == [("queued", "a")]
    await outbox.close()


async def test_forward_joins_a_messages_deltas_and_maps_everything_else_in_order() -> None:
    """A turn's stream through ``forward``: the primary thread's text deltas of one message go out as one
    chunk after the first; a thread's delta and any other item take the mapper's way, in stream order."""
    from agentcell.events import ContentDelta, EventDelta, TextBlock

    def delta(text: str, event_id: str = "sevt_1", thread_id: str | None = None) -> EventDelta:
        content = ContentDelta(index=0, content=TextBlock(text=text))
        return EventDelta(event_id=event_id, delta=content, thread_id=thread_id)

    stream = [delta("a"), delta("b"), delta("c"), delta("t", "sevt_2", "sthr_1"), delta("d"), delta("e")]
    mapped: list[object] = []
    marker = ToolCallStart(session_update="tool_call", tool_call_id="call_1", title="thread said t")

    def mapper(item: Any) -> list[Any]:
        mapped.append(item)
        return [marker]

    async def items() -> Any:
        for item in stream:
            yield item

    pipe = Pipe()
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    await outbox.forward(items(), mapper)
    await outbox.close()
    assert mapped == [stream[3]]
    kinds = [(way, p["update"]["sessionUpdate"], p["update"].get("content", {}).get("text")) for way, p in pipe.sent]
    assert kinds == [
        ("now", "agent_message_chunk", "a"),
        ("queued", "agent_message_chunk", "bc"),
        ("queued", "tool_call", None),
        ("queued", "agent_message_chunk", "de"),
    ]


async def test_a_closed_outbox_takes_nothing_and_never_keeps_a_flush_waiting() -> None:
    pipe = Pipe()
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    outbox.put_text("message", "msg_1", "before")
    await outbox.close()
    outbox.put_text("message", "msg_1", "after")
    outbox.put(ToolCallStart(session_update="tool_call", tool_call_id="toolu_1", title="late", status="pending"))
    await outbox.flush()  # a turn's last flush after its session was closed: returns at once
    assert pipe.texts() == [("now", "before")]


async def test_thoughts_and_text_keep_the_order_they_were_put_in() -> None:
    """Coalescing joins only neighbours of the same kind and message: a thought between two pieces of text
    is sent between them."""
    pipe = Pipe()
    pipe.behind = True  # everything takes the queued way, where joining happens
    outbox = Outbox(pipe, "sesn_1", pipe.write_now)
    for kind, message_id, text in [
        ("thought", "sevt_t", "weighing "),
        ("thought", "sevt_t", "it"),
        ("message", "sevt_m", "So "),
        ("thought", "sevt_t2", "again"),
        ("message", "sevt_m", "yes."),
    ]:
        outbox.put_text(kind, message_id, text)
    await outbox.flush()
    await outbox.close()
    kinds = [(p["update"]["sessionUpdate"], p["update"]["content"]["text"]) for _, p in pipe.sent]
    assert kinds == [
        ("agent_thought_chunk", "weighing it"),
        ("agent_message_chunk", "So "),
        ("agent_thought_chunk", "again"),
        ("agent_message_chunk", "yes."),
    ]
