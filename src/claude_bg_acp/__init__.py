"""claude-bg-acp: an ACP agent that runs Claude Code and makes its background work first-class."""

__version__ = "0.1.0"
