"""`offload-mcp docs`: write or check the configuration reference generated from the pydantic models (docs.py)."""

from __future__ import annotations

import argparse

EXAMPLES = """\
examples:
  offload-mcp docs            # rewrite docs/configuration.md
  offload-mcp docs --check    # exit 1 if it is out of date
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..docs import add_arguments

    parser = sub.add_parser(
        "docs",
        help="write or check the configuration reference (docs/configuration.md)",
        description="Generate the configuration reference from the pydantic models.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..docs import write_or_check

    return write_or_check(args.output, check=args.check)
