"""`offload-mcp ledger migrate`: copy a local ledger into a shared one.

    offload-mcp ledger migrate --from ~/.local/state/offload-mcp/ledger.db --to postgresql://offload@db/offload

Bodies, stash entries, ownership and statistics events are copied as stored, then every
body and stash entry is read back from the target and compared byte for byte. Nothing is
removed from the source, but it is opened as `serve` opens a ledger, which writes to it:
tables a newer version needs are added, decision records from older versions are rewritten
in the current format, the file is switched to WAL mode, and reading each entry back for the
check marks it as used now (retention evicts the least recently used first). Copy the file
first if it must stay as it was. A target that already holds data needs `--merge` (ids are
content hashes, so bodies merge safely; an event the target already holds is not copied again,
so a run that stopped, run again with `--merge`, finishes the copy without counting twice).
A run that stops (an error, Ctrl-C, SIGTERM) says what it had copied.
Exit status: 0 copied and verified, 1 the copy failed or differs, 2 bad usage (fix the command),
130 interrupted.
"""

from __future__ import annotations

import argparse
import signal
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
    index = actions.add_parser(
        "index",
        help="Index every stored result the search index lacks (a ledger from an older version), now.",
        description=(
            "Index every stored body and reducer original still queued for search (docs/search.md). A serving "
            "proxy does this in the background, and each search indexes for up to a second first; this "
            "finishes the queue at once. Exit status: 0 done, 1 the ledger could not be indexed."
        ),
    )
    index.add_argument("ledger", metavar="LEDGER", help="The ledger file or postgresql:// URL.")
    index.set_defaults(func=run_index)
    checkpoint = actions.add_parser(
        "checkpoint",
        help="Write the stats checkpoint (the fold of every event so far), so the dashboard opens at once.",
        description=(
            "Fold every statistics event once and store the fold's state in the ledger (docs/dashboard.md, "
            "'How fast'): `stats` and the dashboard then fold only the events recorded after it. A serving "
            "proxy writes it in the background; this writes it now, e.g. for a ledger an older version filled. "
            "Pass the configuration `serve` runs with: a checkpoint holds for the settings that priced it. "
            "Exit status: 0 written, 1 the ledger could not be read or written."
        ),
    )
    checkpoint.add_argument("ledger", metavar="LEDGER", help="The ledger file or postgresql:// URL.")
    checkpoint.add_argument("--config", metavar="PATH", help="The configuration file `serve` runs with.")
    checkpoint.add_argument(
        "--principal",
        action="append",
        default=[],
        metavar="NAME",
        help="Also write the checkpoint of this caller's own rows (ledger.scope: principal); repeatable.",
    )
    checkpoint.set_defaults(func=run_checkpoint)


def run_migrate(args: argparse.Namespace) -> int:
    from ..store.migrate import MigrationError, MigrationInterrupted, MigrationRefused, migrate

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the copy stops between statements and says where

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        report = migrate(args.source, args.target, merge=args.merge)
    except MigrationError as err:
        print(f"offload-mcp ledger migrate: {err}", file=sys.stderr)
        if isinstance(err, MigrationInterrupted):
            return 130
        return 2 if isinstance(err, MigrationRefused) else 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(report.summary())
    return 0


def run_index(args: argparse.Namespace) -> int:
    from ..store import Ledger, LedgerError

    try:
        ledger = Ledger.open(None, args.ledger, connect_now=True)
    except LedgerError as err:
        print(f"offload-mcp ledger index: {err}", file=sys.stderr)
        return 1
    try:
        done, left = ledger.index_queued(budget_s=float("inf"))
    except LedgerError as err:
        print(f"offload-mcp ledger index: {err}", file=sys.stderr)
        return 1
    finally:
        ledger.close()
    print(f"indexed {done:,} piece(s) of stored results for search; {left:,} still queued")
    return 0 if not left else 1


def run_checkpoint(args: argparse.Namespace) -> int:
    from ..analysis.stats_checkpoint import SAFETY_S, report_with_checkpoint, scope_of
    from ..config import OffloadSettings, load_config
    from ..record import DecisionRecordError
    from ..store import Ledger, LedgerError

    settings = load_config(args.config).offload if args.config else OffloadSettings()
    try:
        ledger = Ledger.open(None, args.ledger, connect_now=True)
    except LedgerError as err:
        print(f"offload-mcp ledger checkpoint: {err}", file=sys.stderr)
        return 1
    try:
        for owner in [None, *(f"principal:{name}" for name in args.principal)]:
            report_with_checkpoint(ledger, settings.policy, owner=owner, min_new=1)
            stored = ledger.read_checkpoint(scope_of(owner))
            if stored is None:
                print(
                    f"offload-mcp ledger checkpoint: none written for {scope_of(owner)}: no session ended "
                    f"more than {SAFETY_S:g} s ago, or the ledger is read-only",
                    file=sys.stderr,
                )
                return 1
            print(
                f"checkpoint of {scope_of(owner)}: every event before {stored.through_at:.3f} ({len(stored.state):,} bytes)"
            )
    except (LedgerError, DecisionRecordError) as err:
        print(f"offload-mcp ledger checkpoint: {err}", file=sys.stderr)
        return 1
    finally:
        ledger.close()
    return 0
