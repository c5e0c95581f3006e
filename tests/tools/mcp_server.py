"""A real MCP server for the tests, written with the SDK's MCPServer (FastMCP's name in mcp 2).

``python mcp_server.py stdio`` serves on stdin/stdout; ``python mcp_server.py http`` serves streamable HTTP
on 127.0.0.1 at a free port, which it prints on its first line once it listens, answering in event streams
(``http json``: in JSON bodies).
"""

from __future__ import annotations

import base64
import os
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

server = MCPServer("test-server")

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def pixel() -> Image:
    """A one-pixel PNG."""
    return Image(data=PIXEL, format="png")


@server.tool()
def fail(reason: str) -> str:
    """Fail with the given reason."""
    raise ToolError(reason)


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name has a character tool names may not carry."""
    return "dotted"


@server.tool()
def huge(kilobytes: int) -> str:
    """Text of about the given size, in lines of 1,025 characters."""
    line = "0123456789abcdef" * 64 + "\n"
    return line * (kilobytes * 1024 // len(line))


@server.tool()
def crash() -> str:
    """End the server process at once, as a crash would."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)


async def _serve_http(json_response: bool) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    config = uvicorn.Config(server.streamable_http_app(json_response=json_response), log_level="warning")
    print(sock.getsockname()[1], flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        anyio.run(_serve_http, sys.argv[2:] == ["json"])
    else:
        server.run("stdio")
