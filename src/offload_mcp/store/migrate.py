"""Copy a local SQLite ledger into another ledger (a shared PostgreSQL one), byte for byte.

How it works: the source is opened like any ledger (so an old schema is brought up to date
first), its rows are read in batches of `batch` and written to the target in one transaction
per batch, as stored: compressed bodies and stash entries keep their codec and bytes, and
their creation and last-use times; ownership rows (who was shown which id or marker) and
statistics events come along. Then every body and stash entry is read back from the target
and compared with the source's bytes; any difference is an error.

Writes are idempotent for bodies, stash entries and ownership (content-hash ids), so
copying into a ledger other replicas already use is safe (`merge=True`); events are not
(copying twice counts them twice), which is why a non-empty target needs `merge=True`.
Tombstones (ids retention removed) are not copied: the target answers "not in the ledger"
for them rather than "evicted at ...".
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ledger import Ledger, LedgerError, LedgerUnavailable
from .settings import LedgerSettings

log = logging.getLogger(__name__)


class MigrationError(Exception):
    """The copy could not be made or does not match its source; says why."""


@dataclass
class MigrationReport:
    bodies: int = 0
    stash: int = 0
    calls: int = 0
    stash_owners: int = 0
    events: int = 0
    tombstones_skipped: int = 0
    verified: int = 0
    mismatches: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"copied {self.bodies} bodies, {self.stash} stash entries, {self.calls + self.stash_owners} ownership rows, "
            f"{self.events} events; verified {self.verified} entries byte for byte"
            + (f"; {self.tombstones_skipped} tombstones not copied" if self.tombstones_skipped else "")
        )


def migrate(source: str | Path, target: str | Path, *, merge: bool = False, batch: int = 500) -> MigrationReport:
    """Copy the SQLite ledger at `source` into the ledger at `target` (a path or a postgresql:// URL)."""
    source_path = Path(source).expanduser()
    if not source_path.is_file():
        raise MigrationError(f"--from {source}: no such ledger file")
    if str(target) == str(source) or (not _is_url(str(target)) and Path(target).expanduser().resolve() == source_path.resolve()):
        raise MigrationError("--from and --to name the same ledger")
    if _is_url(str(target)) and not str(target).lower().startswith(("postgresql://", "postgres://")):
        raise MigrationError(f"--to {str(target).split('://', 1)[0]}://...: unsupported ledger URL; use postgresql://user@host/db or a file path")
    try:
        src = Ledger.open(LedgerSettings(), path=source_path)
    except LedgerUnavailable as err:
        raise MigrationError(f"--from {source}: {err}") from err
    try:
        try:
            dst = Ledger.open(LedgerSettings(), path=target)
        except LedgerUnavailable as err:
            raise MigrationError(f"--to {target}: {err}") from err
        try:
            return _copy(src, dst, merge=merge, batch=batch)
        finally:
            dst.close()
    finally:
        src.close()


def _is_url(value: str) -> bool:
    return "://" in value


def _copy(src: Ledger, dst: Ledger, *, merge: bool, batch: int) -> MigrationReport:
    counts = {**dst.counts(), "events": _count(dst, "events")}
    if not merge and (counts.get("bodies") or counts.get("stash") or counts.get("events")):
        raise MigrationError(
            f"the target ledger is not empty ({counts.get('bodies', 0)} bodies, {counts.get('stash', 0)} stash entries, "
            f"{counts.get('events', 0)} events): pass --merge to copy into it anyway (events copied twice count twice)"
        )
    report = MigrationReport()
    try:
        for table, rows in _source_rows(src, batch):
            _write(dst, table, rows)
            setattr(report, table, getattr(report, table) + len(rows))
        report.tombstones_skipped = _count(src, "tombstones")
    except LedgerError as err:
        raise MigrationError(f"writing the target failed: {getattr(err, 'cause', err)} (nothing is lost: the source is unchanged; run again with --merge)") from err
    _verify(src, dst, report)
    if report.mismatches:
        raise MigrationError(f"{len(report.mismatches)} entries differ after the copy: " + ", ".join(report.mismatches[:5]))
    return report


_COLUMNS = {
    "bodies": "id, server, tool, arguments, session_id, body, codec, raw_bytes, stored_bytes, chars, created_at, last_used_at",
    "stash": "hash, original, codec, chars, created_at, last_used_at",
    "calls": "trm_id, session_id, server, tool, at",
    "stash_owners": "hash, session_id",
    "events": "at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail",
}
_ORDER = {"bodies": "id", "stash": "hash", "calls": "trm_id, session_id", "stash_owners": "hash, session_id", "events": "id"}


def _source_rows(src: Ledger, batch: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for table, columns in _COLUMNS.items():
        names = [c.strip() for c in columns.split(",")]
        offset = 0
        while True:
            with src._lock:
                fetched = src._conn.execute(
                    f"SELECT {columns} FROM {table} ORDER BY {_ORDER[table]} LIMIT ? OFFSET ?", (batch, offset)
                ).fetchall()
            if not fetched:
                break
            offset += len(fetched)
            yield table, [dict(zip(names, row, strict=True)) for row in fetched]


def _count(src: Ledger, table: str) -> int:
    with src._lock:
        return int(src._conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _write(dst: Ledger, table: str, rows: list[dict[str, Any]]) -> None:
    empty: list[Any] = []
    if table == "bodies":
        dst._commit_rows(rows, empty, empty, empty, empty)
    elif table == "stash":
        dst._commit_rows(empty, rows, empty, empty, empty)
    elif table == "calls":
        with dst._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO calls (trm_id, session_id, server, tool, at) VALUES (:trm_id, :session_id, :server, :tool, :at)", rows
            )
    elif table == "stash_owners":
        with dst._write() as conn:
            conn.executemany("INSERT OR IGNORE INTO stash_owners (hash, session_id) VALUES (:hash, :session_id)", rows)
    else:
        dst._commit_rows(empty, empty, empty, empty, rows)


def _verify(src: Ledger, dst: Ledger, report: MigrationReport) -> None:
    """Every body and stash entry of the source reads back from the target with the same bytes."""
    for table, rows in _source_rows(src, 200):
        if table == "bodies":
            for row in rows:
                same = dst.get_body_json(row["id"]) == src.get_body_json(row["id"])
                report.verified += 1
                if not same:
                    report.mismatches.append(row["id"])
        elif table == "stash":
            for row in rows:
                same = dst.get_stash(row["hash"]) == src.get_stash(row["hash"])
                report.verified += 1
                if not same:
                    report.mismatches.append(f"<<cg:{row['hash']}>>")
