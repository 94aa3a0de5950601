"""``python -m claude_bg_acp.scripted_model --scenario NAME [--port 0]``.

Prints ``listening http://127.0.0.1:PORT`` on stdout once bound (scripts wait for that
line), logs to stderr, and serves until killed.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys

import anyio

from claude_bg_acp.scripted_model.scenarios import DEFAULT_SCENARIO, SCENARIOS
from claude_bg_acp.scripted_model.server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claude_bg_acp.scripted_model")
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO, choices=sorted(SCENARIOS))
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(_serve_forever, args.scenario, args.port)
    return 0


async def _serve_forever(scenario: str, port: int) -> None:
    async with serve(scenario=scenario, port=port) as model:
        print(f"listening {model.base_url}", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    sys.exit(main())
