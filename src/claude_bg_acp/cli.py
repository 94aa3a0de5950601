"""The ``claude-bg-acp`` command: parse flags, set up logging, and serve ACP on stdio
(``claude-bg-acp demo`` runs the offline demo instead, see ``claude_bg_acp.demo``;
``claude-bg-acp login`` and ``logout`` run Claude Code's own, see ``claude_bg_acp.claude.login``).

stdout carries the protocol alone: before anything else runs, fd 1 is duplicated for the
endpoint and pointed at stderr, so nothing else can write a stray line into the stream.

One way out: when stdin closes (the editor went away), stdout breaks, or SIGTERM, SIGINT or
SIGHUP arrives, the endpoint stops reading and every session is closed, which stops its Claude
Code and the background work it runs and sends each terminal's exit and a final state, before
the process exits. On Linux the agent is a child subreaper: what a Claude Code leaves running
becomes the agent's child (``claude.orphans``), is stopped with it, and never outlives it;
elsewhere it is found by the output files it holds (``claude.leftovers``). Windows has no POSIX
signals: there Ctrl-C (SIGINT) and a console's close (SIGBREAK) end the connection
(``platform``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from claude_bg_acp import __version__
from claude_bg_acp.claude.sdk_import import defer_mcp
from claude_bg_acp.platform import host

if TYPE_CHECKING:
    from claude_bg_acp.acp.stdio import Endpoint

log = logging.getLogger("claude_bg_acp")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="claude-bg-acp",
        description="An ACP agent (JSON-RPC on stdin/stdout) that runs Claude Code and makes its "
        "background work visible to the editor. Editors launch it; it is not interactive.",
    )
    parser.add_argument("--version", action="version", version=f"claude-bg-acp {__version__}")
    parser.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="how much to log (default: WARNING)",
    )
    parser.add_argument(
        "--cli-path",
        metavar="PATH",
        help="the Claude Code executable to run (default: the one bundled with the SDK)",
    )
    parser.add_argument(
        "--trust-all-folders",
        action="store_true",
        help="let every folder's own Claude Code settings (hooks, MCP servers, env, apiKeyHelper, "
        "permissions) act without asking whether the folder is trusted, as a folder you trust does; "
        "a cloned repository can then run commands and redirect your API key "
        "(also CLAUDE_BG_ACP_TRUST_ALL_FOLDERS=1)",
    )
    parser.add_argument(
        "--output-backlog",
        metavar="MIB",
        type=int,
        default=32,
        help="how far (MiB) a terminal's output may run ahead of the editor before the agent sends "
        "a snapshot of the latest output instead of every byte (default: 32)",
    )
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    commands.add_parser(
        "demo",
        help="watch background work offline, in the terminal: no API key, no editor, no Node.js "
        "(ends by itself in well under a minute)",
    )
    commands.add_parser(
        "login",
        help="log Claude Code in, in this terminal (Claude Code's `auth login`, whose options it takes: "
        "a Claude subscription by default, --console for an Anthropic Console account); editors run it "
        "to log in",
    )
    commands.add_parser("logout", help="log Claude Code out (Claude Code's `auth logout`)")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "login":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.login_args = rest
    return args


def setup_logging(log_file: str | None, level: str) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def main(argv: Sequence[str] | None = None) -> None:
    defer_mcp()  # before anything imports the SDK (see ``claude.sdk_import`` for why)
    args = parse_args(argv)
    if args.command == "demo":
        if not host().posix:
            sys.exit("claude-bg-acp demo: not supported on Windows yet (it stops the agent by process group)")
        from claude_bg_acp.demo import run

        sys.exit(run())
    if args.command in ("login", "logout"):
        from claude_bg_acp.claude import login

        if args.command == "login":
            login.login(args.cli_path, args.login_args)
        sys.exit(0 if anyio.run(login.logout, args.cli_path) else 1)
    setup_logging(args.log_file, args.log_level)
    if args.trust_all_folders:
        from claude_bg_acp.claude.trust import TRUST_ALL_ENV

        os.environ[TRUST_ALL_ENV] = "1"  # read where each session starts (``claude.trust``)
    from claude_bg_acp.acp.stdio import protect_stdout
    from claude_bg_acp.claude.orphans import become_subreaper

    protocol_fd = protect_stdout()
    if not become_subreaper():
        log.info("not a child subreaper: what a crashed Claude Code leaves running goes to init")
    anyio.run(serve, protocol_fd, args.cli_path, args.output_backlog << 20)
    # Everything is closed. The interpreter's last collections would walk every object the SDK
    # and its dependencies made, close to a second on a busy machine, to free memory that the
    # process gives back anyway as it ends.
    gc.freeze()


async def serve(protocol_fd: int, cli_path: str | None, output_backlog: int) -> None:
    from claude_bg_acp.acp.stdio import Endpoint, stdio_streams
    from claude_bg_acp.agent import Agent
    from claude_bg_acp.claude import leftovers, lifeline

    source, sink = await stdio_streams(0, protocol_fd)
    endpoint = Endpoint(source, sink)
    async with anyio.create_task_group() as tg:
        agent = Agent(endpoint, tg, cli_path, output_backlog)
        if host().posix:
            tg.start_soon(_hang_up_on_signal, endpoint)
        else:
            _hang_up_on_console_signal(endpoint)
        if host().linux:
            tg.start_soon(_reap_orphans)
        try:
            await endpoint.serve(tg, agent.on_request, agent.on_notification)
        finally:
            with anyio.CancelScope(shield=True):
                await agent.close_all()
                await leftovers.stop_left_by(None, None, None)  # whatever is left: nothing outlives us
            lifeline.close()
            tg.cancel_scope.cancel()


async def _hang_up_on_signal(endpoint: Endpoint) -> None:
    """A stop signal ends the connection the way a closed stdin does."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.warning("received %s; closing sessions", signal.Signals(signum).name)
            endpoint.hang_up()


def _hang_up_on_console_signal(endpoint: Endpoint) -> None:
    """Windows: the event loop takes no signal handlers, Python's own handlers run in the main
    thread, between the loop's steps; the hang-up is handed to the loop from there."""
    loop = asyncio.get_running_loop()

    def hang_up(signum: int, _frame: object) -> None:
        log.warning("received %s; closing sessions", signal.Signals(signum).name)
        loop.call_soon_threadsafe(endpoint.hang_up)

    for name in ("SIGINT", "SIGBREAK"):
        signal.signal(getattr(signal, name), hang_up)


async def _reap_orphans() -> None:
    from claude_bg_acp.claude.orphans import reap_strays

    with anyio.open_signal_receiver(signal.SIGCHLD) as signals:
        async for _ in signals:
            reap_strays()
