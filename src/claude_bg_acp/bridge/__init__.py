"""The bridge: a sans-IO core that turns SDK messages and client requests into ACP messages and
SDK commands. Nothing here reads a pipe, a file or a clock; the time comes in as ``now``."""
