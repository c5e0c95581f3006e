"""An MCP stdio server (the SDK's MCPServer) with one tool that answers with as many megabytes of text as
asked for: ``python huge_mcp_server.py``."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("huge")
LINE = "0123456789abcdef" * 64 + "\n"


@server.tool()
def huge(megabytes: int) -> str:
    """Text of about the given size, in lines of 1,025 characters."""
    return LINE * (megabytes * 1024 * 1024 // len(LINE))


if __name__ == "__main__":
    server.run("stdio")
