"""`offload-mcp ledger migrate`: copy a local ledger into a shared one.

    offload-mcp ledger migrate --from ~/.local/state/offload-mcp/ledger.db --to postgresql://offload@db/offload

Bodies, stash entries, ownership and statistics events are copied as stored, then every
body and stash entry is read back from the target and compared byte for byte. The source
is left as it was (its schema is brought up to date, as `serve` would). A target that
already holds data needs `--merge` (ids are content hashes, so bodies merge safely; events
copied twice would count twice).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "ledger",
        help="Ledger maintenance (migrate a local ledger to a shared one).",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    migrate = actions.add_parser(
        "migrate",
        help="Copy a local SQLite ledger into another ledger (e.g. postgresql://...).",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    migrate.add_argument(
        "--from", dest="source", required=True, metavar="SQLITE", help="The local ledger file to copy."
    )
    migrate.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="URL",
        help="The target: a postgresql:// URL (or another ledger file).",
    )
    migrate.add_argument("--merge", action="store_true", help="Copy into a target that already holds data.")
    migrate.set_defaults(func=run_migrate)


def run_migrate(args: argparse.Namespace) -> int:
    from ..store.migrate import MigrationError, migrate

    try:
        report = migrate(args.source, args.target, merge=args.merge)
    except MigrationError as err:
        print(f"offload-mcp ledger migrate: {err}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0
