"""A chat server on 127.0.0.1, OpenAI-compatible (``/v1/chat/completions``) and Anthropic Messages
(``/v1/messages``), that answers every request by itself and records it (body and headers).

For the kernel's conversation tests: each reply names the prompt it answers ("reply to: …"), so a test
reads from the request log exactly what the model was sent. A prompt containing ``FAIL`` gets a 400.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["EchoServer", "echo_server", "prompts"]


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return ""


def prompts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """A request's conversation as (role, text) pairs, without the system prompt."""
    pairs = []
    for message in body.get("messages", []):
        if message.get("role") == "system":
            continue
        content = message.get("content")
        if not isinstance(content, str):
            content = "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
        pairs.append((message["role"], content.strip()))
    return pairs


def _chunk(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n".encode()


def _anthropic_stream(text: str) -> bytes:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": []}
    usage = {"input_tokens": 10, "output_tokens": 1}
    return b"".join(
        [
            _event("message_start", {"message": {**message, "usage": usage}}),
            _event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            _event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
            _event("content_block_stop", {"index": 0}),
            _event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
            _event("message_stop", {}),
        ]
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if not self.path.endswith("/count_tokens"):
            self.server.owner.requests.append(body)
        if self.path.endswith("/count_tokens"):  # Anthropic's token count: a plain JSON answer
            self._respond(200, "application/json", json.dumps({"input_tokens": 20}).encode())
            return
        self.server.owner.headers.append({k.lower(): v for k, v in self.headers.items()})
        prompt = _last_user_text(body)
        if self.path.endswith("/messages"):
            self._respond(200, "text/event-stream", _anthropic_stream(f"reply to: {prompt.strip()}"))
            return
        if "FAIL" in prompt:
            payload = json.dumps({"error": {"message": "this prompt is refused", "type": "invalid_request"}})
            self._respond(400, "application/json", payload.encode())
            return
        text = f"reply to: {prompt.strip()}"
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": body.get("model", "echo")}
        stream = b"".join(
            [
                _chunk({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
                _chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                _chunk({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
                b"data: [DONE]\n\n",
            ]
        )
        self._respond(200, "text/event-stream", stream)

    def _respond(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: EchoServer


class EchoServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.start()

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL; the Anthropic one is :attr:`root`."""
        return f"{self.root}/v1"

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def conversations(self) -> list[list[tuple[str, str]]]:
        return [prompts(body) for body in self.requests]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@contextmanager
def echo_server() -> Iterator[EchoServer]:
    server = EchoServer()
    try:
        yield server
    finally:
        server.close()
