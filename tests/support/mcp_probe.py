"""A minimal MCP server (stdio, built with the ``mcp`` package the SDK depends on) for the tests
that the editor's MCP servers reach Claude Code. Given a file as its first argument, it adds a
line to it each time it starts (a test counts Claude Code's restarts of it)."""

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
def probe_echo(text: str) -> str:
    """Echo the text back (a tool that only the test's MCP server offers)."""
    return text


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a") as starts:
            starts.write(f"{os.getpid()}\n")
    server.run()
