"""`offload-mcp` entry point: one subcommand per module in `commands/`.

Each command module defines `add_parser(subparsers)`, which registers its
parser and sets `func`; heavy imports happen inside the command, so `--help`
stays fast. Exit codes: 0 ok, 1 runtime failure, 2 bad usage or config.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys

from . import __version__
from .commands import catalog, demo, docs, init, ledger, replay, serve, stats, toolset_config

COMMANDS = (serve, demo, replay, stats, catalog, toolset_config, init, ledger, docs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offload-mcp",
        description="An MCP proxy that shapes tool results so the model pays only for the bytes it needs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `offload-mcp COMMAND --help` for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"offload-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def setup_logging(level: str) -> None:
    # stdout is the protocol channel on stdio: logs go to stderr only.
    root = logging.getLogger()
    before = list(root.handlers)
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from .logs import install

    for handler in root.handlers:
        if handler not in before:  # ours, not a handler someone embedding us installed
            install(handler)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    if args.func is not serve.run:
        gc.enable()  # paused for start-up by __main__; serve turns it on after freezing its start-up heap
    setup_logging(getattr(args, "log_level", "warning"))
    from .config import ConfigError

    try:
        return int(args.func(args) or 0)
    except ConfigError as err:
        from .redaction import redact_secrets

        print(f"offload-mcp: {redact_secrets(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
