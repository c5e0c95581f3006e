"""A hostile MCP server over streamable HTTP, by hand (no SDK): it starts and lists its tools as any server
does, then ``endless`` answers with a message that never ends and ``silent`` never answers at all.
``python hostile_mcp_server.py`` prints its port on its first line once it listens."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [
    {"name": "endless", "description": "Answers forever.", "inputSchema": {"type": "object"}},
    {"name": "silent", "description": "Never answers.", "inputSchema": {"type": "object"}},
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # each answer ends with its connection: an endless one needs no length

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # no stream of the server's own
        self.send_response(405)
        self.end_headers()

    def do_DELETE(self) -> None:  # no session to end
        self.do_GET()

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in message:  # a notification
            self.send_response(202)
            self.end_headers()
            return
        method = message.get("method")
        if method == "tools/call":
            name = message["params"]["name"]
            if name == "silent":
                time.sleep(3600)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            start = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": ""}]}}
            head = json.dumps(start).encode().rsplit(b'""', 1)[0] + b'"'
            try:
                self.wfile.write(b"event: message\ndata: " + head)
                while True:
                    self.wfile.write(b"w" * 65536)
            except OSError:  # the client stopped reading
                return
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()
