"""claude-bg-acp: an ACP agent that runs Claude Code and makes its background work first-class."""

from claude_bg_acp.claude.sdk_import import defer_mcp

__version__ = "0.1.0"

# Before any of our modules imports the SDK (see ``claude.sdk_import`` for why).
defer_mcp()
