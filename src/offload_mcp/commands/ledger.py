"""`offload-mcp ledger migrate`: copy a local ledger into a shared one.

    offload-mcp ledger migrate --from ~/.local/state/offload-mcp/ledger.db --to postgresql://offload@db/offload

Bodies, stash entries, ownership and statistics events are copied as stored, then every
body and stash entry is read back from the target and compared byte for byte. Nothing is
removed from the source, but it is opened as `serve` opens a ledger, which writes to it:
tables a newer version needs are added, decision records from older versions are rewritten
in the current format, the file is switched to WAL mode, and reading each entry back for the
check marks it as used now (retention evicts the least recently used first). Copy the file
first if it must stay as it was. A target that already holds data needs `--merge` (ids are
content hashes, so bodies merge safely; events copied twice would count twice).
Exit status: 0 copied and verified, 1 the copy failed or differs, 2 bad usage (fix the command).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
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

    problem = _usage_problem(args)
    if problem is not None:
        print(f"offload-mcp ledger migrate: {problem}", file=sys.stderr)
        return 2
    try:
        report = migrate(args.source, args.target, merge=args.merge)
    except MigrationError as err:
        print(f"offload-mcp ledger migrate: {err}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What the command line itself got wrong (exit 2), told apart from a copy that failed (exit 1).
    Checked before any copy: a refused command creates no new file. An existing target is opened to
    count its entries, which brings its schema up to date as any open does (it gains nothing else)."""
    from ..store import Ledger, LedgerError
    from ..store.location import file_problem, is_url, url_problem
    from ..store.settings import LedgerSettings

    source = Path(args.source).expanduser()
    if not source.is_file():
        return f"--from {args.source}: no such ledger file"
    target = str(args.target)
    if target == str(args.source) or (not is_url(target) and Path(target).expanduser().resolve() == source.resolve()):
        return "--from and --to name the same ledger"
    if is_url(target):
        problem = url_problem(target)
        if problem is not None:
            return f"--to: {problem}"
    else:
        problem = file_problem(Path(target).expanduser(), writable=True)
        if problem is not None:
            return f"--to: {problem}"
        if not Path(target).expanduser().exists():
            return None  # a new file is empty
    if args.merge:
        return None
    try:
        dst = Ledger.open(LedgerSettings(), path=target)
        try:
            counts = dst.counts()
        finally:
            dst.close()
    except LedgerError:
        return None  # a database that does not answer is no usage error: the copy reports it (exit 1)
    if counts.get("bodies") or counts.get("stash"):
        return (
            f"the target ledger is not empty ({counts.get('bodies', 0)} bodies, {counts.get('stash', 0)} stash entries): "
            "pass --merge to copy into it anyway (events copied twice count twice)"
        )
    return None
