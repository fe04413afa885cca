"""Copy a local SQLite ledger into another ledger (a shared PostgreSQL one), byte for byte.

How it works: the source is opened like any ledger (so an old schema is brought up to date
first), its rows are read in batches of `batch` and written to the target in one transaction
per batch, as stored: compressed bodies and stash entries keep their codec and bytes, and
their creation and last-use times; ownership rows (who was shown which id or marker) and
statistics events come along. Then every body and stash entry is read back from the target
and compared with the source's bytes; any difference is an error.

Writes are idempotent for bodies, stash entries and ownership (content-hash ids), so
copying into a ledger other replicas already use is safe (`merge=True`). Events have no such
id: each is keyed by what it holds (its time to the microsecond and every field), and one the
target already holds as many times as the source is skipped. So a run that was interrupted, or
a second one, copied again with `merge=True` counts each event once (before, 786 became 1,572).
A run that stops (an error, Ctrl-C, SIGTERM) says what it had copied, and that running it again
with `merge=True` finishes the copy.
Tombstones (ids retention removed) are not copied: the target answers "not in the ledger"
for them rather than "evicted at ...".
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .errors import LedgerCorrupt, LedgerError, LedgerUnavailable
from .interfaces import BodyRow, CallRow, CommitRows, EventRow, StashRow
from .ledger import Ledger
from .location import file_problem, is_url, url_problem
from .queries import SqlReads
from .settings import LedgerSettings
from .sqlite import SqliteBackend

log = logging.getLogger(__name__)


class MigrationError(Exception):
    """The copy could not be made or does not match its source; says why."""


class MigrationRefused(MigrationError):
    """The call itself asked for what cannot be done (the CLI's bad usage, exit 2); nothing was copied."""


class MigrationInterrupted(MigrationError):
    """Ctrl-C or SIGTERM stopped the copy; says what had been copied (each batch commits whole)."""


@dataclass
class MigrationReport:
    bodies: int = 0
    stash: int = 0
    calls: int = 0
    stash_owners: int = 0
    events: int = 0
    events_already_there: int = 0
    tombstones_skipped: int = 0
    verified: int = 0
    mismatches: list[str] = field(default_factory=list)
    source_events: int = 0

    def summary(self) -> str:
        return (
            f"copied {self.bodies} bodies, {self.stash} stash entries, {self.calls + self.stash_owners} ownership rows, "
            f"{self.events} events; verified {self.verified} entries byte for byte"
            + (f"; {self.tombstones_skipped} tombstones not copied" if self.tombstones_skipped else "")
            + (
                f"; {self.events_already_there} events already in the target not copied again"
                if self.events_already_there
                else ""
            )
        )

    def progress(self) -> str:
        """Where a stopped run stopped: what is in the target now (each batch commits whole)."""
        return (
            f"stopped after copying {self.bodies} bodies, {self.stash} stash entries and {self.events} events "
            f"(of {self.source_events} in the source); run the same command with --merge to finish: what is "
            "already in the target is skipped, events included"
        )


def migrate(source: str | Path, target: str | Path, *, merge: bool = False, batch: int = 500) -> MigrationReport:
    """Copy the SQLite ledger at `source` into the ledger at `target` (a path or a postgresql:// URL).

    What the caller asked wrongly raises MigrationRefused before anything is written: no source, the
    same ledger twice, a target that cannot be one, a non-empty target without `merge` (then only
    the target has been opened, to count it). Other failures raise MigrationError."""
    source_path = Path(source).expanduser()
    if not source_path.is_file():
        raise MigrationRefused(f"--from {source}: no such ledger file")
    target_path = None if is_url(str(target)) else Path(target).expanduser()
    if str(target) == str(source) or (target_path is not None and target_path.resolve() == source_path.resolve()):
        raise MigrationRefused("--from and --to name the same ledger")
    problem = url_problem(str(target)) if target_path is None else file_problem(target_path, writable=True)
    if problem is not None:
        raise MigrationRefused(f"--to: {problem}")
    dst: Ledger | None = None
    if not merge and (target_path is None or target_path.exists()):
        # Counted before the source is opened (which writes to it): a refused run leaves both as they were.
        dst = _open_target(target)
        try:
            counts = dst.counts()
        except BaseException:
            dst.close()
            raise
        if counts.get("bodies") or counts.get("stash"):
            dst.close()
            raise MigrationRefused(
                f"the target ledger is not empty ({counts.get('bodies', 0)} bodies, {counts.get('stash', 0)} stash "
                "entries): pass --merge to copy into it anyway (what it already holds is not copied twice)"
            )
    try:
        try:
            src = Ledger.open(LedgerSettings(), path=source_path)
        except LedgerUnavailable as err:
            raise MigrationError(f"--from {source}: {err}") from err
        try:
            if dst is None:  # a new file is made only once the source has opened
                dst = _open_target(target)
            return _copy(src, dst, batch=batch)
        finally:
            src.close()
    finally:
        if dst is not None:
            dst.close()


def _open_target(target: str | Path) -> Ledger:
    try:
        return Ledger.open(LedgerSettings(), path=target, connect_now=True)
    except LedgerUnavailable as err:
        # err names the ledger, a URL with its password redacted: "--to {target}" put the password back
        raise MigrationError(f"--to: {err}") from err


def _copy(src: Ledger, dst: Ledger, *, batch: int) -> MigrationReport:
    source = src.sqlite
    report = MigrationReport(source_events=int(source._one("SELECT count(*) FROM events", ())[0]))
    try:
        for rows in _source_rows(source, batch):
            if rows.events:
                events = _not_in_target(dst, rows.events)
                report.events_already_there += len(rows.events) - len(events)
                if not events:
                    continue
                rows = CommitRows(events=events)
            dst.backend.write(rows)
            report.bodies += len(rows.bodies)
            report.stash += len(rows.stash)
            report.calls += len(rows.calls)
            report.stash_owners += len(rows.stash_owners)
            report.events += len(rows.events)
        report.tombstones_skipped = src.counts().get("tombstones", 0)
    except LedgerError as err:
        raise MigrationError(f"writing the target failed: {err}; {report.progress()}") from err
    except KeyboardInterrupt:
        raise MigrationInterrupted(f"interrupted: {report.progress()}") from None
    _verify(src, dst, report, batch)
    if report.mismatches:
        raise MigrationError(
            f"{len(report.mismatches)} entries differ after the copy: " + ", ".join(report.mismatches[:5])
        )
    return report


def _page(source: SqliteBackend, sql: str, batch: int, start: Any = "") -> Iterator[list[tuple[Any, ...]]]:
    """Rows of `sql` (ending in `WHERE key > ? ORDER BY key`, the key first) in batches, by keyset."""
    last = start
    while True:
        rows = source._all(sql + " LIMIT ?", (last, batch))  # store-internal: migrate reads the file row by row
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _source_rows(source: SqliteBackend, batch: int) -> Iterator[CommitRows]:
    """One CommitRows per batch: bodies with who made their calls, stash with who was shown it, events.

    Ownership rows travel with their entries because a backend writes nothing for a commit that
    holds neither bodies, stash nor events.
    """
    for rows in _page(
        source,
        "SELECT id, server, tool, arguments, session_id, body, codec, raw_bytes, stored_bytes, chars, created_at, last_used_at"
        " FROM bodies WHERE id > ? ORDER BY id",
        batch,
    ):
        bodies = [BodyRow(*row) for row in rows]
        ids = [b.id for b in bodies]
        marks = ",".join("?" * len(ids))
        calls = [
            CallRow(*row)
            for row in source._all(
                f"SELECT trm_id, session_id, server, tool, at FROM calls WHERE trm_id IN ({marks})", ids
            )
        ]
        yield CommitRows(bodies=bodies, calls=calls)
    for rows in _page(
        source,
        "SELECT hash, original, codec, chars, created_at, last_used_at FROM stash WHERE hash > ? ORDER BY hash",
        batch,
    ):
        stash = [StashRow(*row) for row in rows]
        hashes = [s.hash for s in stash]
        marks = ",".join("?" * len(hashes))
        owners = [
            (h, o) for h, o in source._all(f"SELECT hash, session_id FROM stash_owners WHERE hash IN ({marks})", hashes)
        ]
        yield CommitRows(stash=stash, stash_owners=owners)
    for rows in _page(
        source,
        "SELECT id, at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail"
        " FROM events WHERE id > ? ORDER BY id",
        batch,
        start=-1,
    ):
        yield CommitRows(events=[EventRow(*row[1:]) for row in rows])


def _not_in_target(dst: Ledger, events: Sequence[EventRow]) -> list[EventRow]:
    """`events` without those the target holds already: keyed by time and every field, counted, so an
    event the source holds twice is copied until the target holds it twice too."""
    low, high = min(e.at for e in events), max(e.at for e in events)
    held = Counter(
        EventRow(*row)
        for row in cast(SqlReads, dst.backend)._all(  # store-internal, as the source's reads: rows as stored
            "SELECT at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail"
            " FROM events WHERE at >= ? AND at <= ?",
            (low, high),
        )
    )
    missing: list[EventRow] = []
    for event in events:
        if held[event] > 0:
            held[event] -= 1
        else:
            missing.append(event)
    return missing


def _verify(src: Ledger, dst: Ledger, report: MigrationReport, batch: int) -> None:
    """Every body and stash entry of the source reads back from the target with the same bytes."""
    source = src.sqlite
    for rows in _page(source, "SELECT id FROM bodies WHERE id > ? ORDER BY id", batch):
        for (trm_id,) in rows:
            _compare(trm_id, trm_id, src.get_body_json, dst.get_body_json, report)
    for rows in _page(source, "SELECT hash FROM stash WHERE hash > ? ORDER BY hash", batch):
        for (hash_,) in rows:
            _compare(f"<<cg:{hash_}>>", hash_, src.get_stash, dst.get_stash, report)


def _compare(
    name: str,
    key: str,
    read_source: Callable[[str], object],
    read_target: Callable[[str], object],
    report: MigrationReport,
) -> None:
    """A mismatch, named, when the target's copy differs from the source's or either one's bytes are damaged
    (a damaged source row is copied as it was: the report says which ids were damaged before the copy)."""
    report.verified += 1
    try:
        expected = read_source(key)
    except LedgerCorrupt:
        report.mismatches.append(f"{name} (damaged in the source: its bytes do not read back as what it names)")
        return
    try:
        same = read_target(key) == expected
    except LedgerCorrupt:
        same = False
    if not same:
        report.mismatches.append(name)
