"""`offload-mcp docs`: write or check the configuration reference generated from the pydantic models (docs.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXAMPLES = """\
examples:
  offload-mcp docs            # rewrite docs/configuration.md
  offload-mcp docs --check    # exit 1 if it is out of date
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..docs import REFERENCE_PATH

    parser = sub.add_parser(
        "docs",
        help="write or check the configuration reference (docs/configuration.md)",
        description="Generate the configuration reference from the pydantic models.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the file differs from the models")
    parser.add_argument(
        "-o", "--output", type=Path, default=REFERENCE_PATH, help="file to write or check (default: %(default)s)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..docs import missing_descriptions, render_reference

    missing = missing_descriptions()
    if missing:
        print(f"fields without a description: {', '.join(missing)}", file=sys.stderr)
        return 1
    text = render_reference()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date: run `offload-mcp docs` (or `python -m offload_mcp.docs`)",
                file=sys.stderr,
            )
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
