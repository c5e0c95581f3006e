"""A small MCP server for notebooks/mcp.ipynb: a library catalogue, written with the mcp SDK's MCPServer.

Run by the notebook as ``%mcp add library -- python mcp_server.py`` (stdio). Its answers come from the table
below, so a run always gives the same results.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("library")

CATALOGUE = {
    "dune": ("Frank Herbert", 1965),
    "emma": ("Jane Austen", 1815),
    "neuromancer": ("William Gibson", 1984),
    "the hobbit": ("J. R. R. Tolkien", 1937),
}


@server.tool()
def find_book(title: str) -> str:
    """Find a book in the catalogue by its title; returns its author and year."""
    found = CATALOGUE.get(title.strip().strip("\"'.").lower())
    if found is None:
        return f"{title!r} is not in the catalogue; it has: {', '.join(t.title() for t in CATALOGUE)}"
    author, year = found
    return f"{title.strip()} by {author}, {year}"


@server.tool()
def count_words(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


if __name__ == "__main__":
    server.run("stdio")
