"""A minimal MCP server (stdio, built with the ``mcp`` package the SDK depends on) for the test
that the editor's MCP servers reach Claude Code."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
def probe_echo(text: str) -> str:
    """Echo the text back (a tool that only the test's MCP server offers)."""
    return text


if __name__ == "__main__":
    server.run()
