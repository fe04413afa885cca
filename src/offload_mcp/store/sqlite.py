"""The SQLite backend: one local file in WAL mode (the embedded default).

How it works: one connection per process under a lock; every write is BEGIN IMMEDIATE ... COMMIT,
so several proxies (one per client session) can share one file: readers never block the writer,
and a committed row survives a kill -9. Any sqlite or OS error becomes LedgerWriteError naming the
cause (locked past `busy_timeout_s`, read-only, disk full).

A file deleted or replaced while serving: before each operation the path is checked against the
inode opened (one stat). If the file is gone, it is recreated from this process's still-open copy
(SQLite's online backup), so every id handed out so far stays readable by future processes; if
another process already recreated it, this process's bodies, cuts and tombstones are merged into
it. If neither works the write fails, and the shaper passes results through with a warning: no
id is ever handed out that only an unlinked file holds.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from . import decision_v1, search_sqlite
from .errors import LedgerCorrupt, LedgerUnavailable, LedgerWriteError
from .interfaces import CommitRows, Entry, EntryKind
from .queries import INSERT_BODY, INSERT_EVENT, INSERT_STASH, TABLES, WRITE_CHECKPOINT, SqlReads
from .records import CheckpointRow
from .schema import ensure_sqlite_schema
from .search import SearchHit
from .settings import LedgerSettings

log = logging.getLogger(__name__)

CREATED_MARKER = ".offload-mcp-created"
"""Left in a directory the ledger created, so the start-up permission check knows it is ours."""

_TABLES = TABLES
_KEYED_TABLES = ("bodies", "stash", "calls", "stash_owners", "tombstones")
_Ident = tuple[int, int]


class SqliteBackend(SqlReads):
    """Thread-safe rows in and out of one ledger file. Open with `SqliteBackend.open(...)`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, settings: LedgerSettings, writable: bool) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self.path: Path | None = path
        self._file = path
        self.location = str(path)
        self.settings = settings
        self.writable = writable
        self._ident: _Ident | None = _ident(path)
        self._searchable: bool | None = None

    # ---------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: Path, settings: LedgerSettings, *, read_only: bool = False) -> SqliteBackend:
        """Open (creating if needed) the file. One that exists but cannot be written opens read-only
        (recall still works, every commit fails with the cause). Raises LedgerUnavailable when the
        file cannot be opened at all."""
        if read_only:
            try:
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
                conn.execute("SELECT 1 FROM bodies LIMIT 1")
            except sqlite3.Error as err:
                raise LedgerUnavailable(f"cannot open ledger {path} read-only: {err}") from None
            return cls(conn, path, settings, writable=False)
        try:
            _prepare_file(path)
        except OSError as err:
            if not path.exists():
                raise LedgerUnavailable(f"cannot create ledger {path}: {err.strerror or err}") from None
        try:
            conn = _connect(path, settings)
        except sqlite3.Error as err:
            raise LedgerUnavailable(f"cannot open ledger {path}: {err}") from None
        writable = True
        try:
            _set_up_waiting(conn, settings.busy_timeout_s)
        except sqlite3.DatabaseError as err:
            # A lock held by a peer at open time is transient: stay writable; commits will wait or fail alone.
            writable = "locked" in str(err).lower() or "busy" in str(err).lower()
            log.warning("ledger %s is not writable (%s): results will pass through unmodified", path, err)
            try:
                conn.execute("SELECT 1 FROM bodies LIMIT 1")
            except sqlite3.Error:
                conn.close()
                raise LedgerUnavailable(f"cannot use ledger {path}: {err}") from None
        if writable:
            try:
                decision_v1.upgrade_sqlite(conn, path)
            except sqlite3.Error as err:
                log.warning(
                    "ledger %s: decision records not upgraded (%s); stats cannot read its older rows yet", path, err
                )
        return cls(conn, path, settings, writable)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # ---------------------------------------------------------------- writing

    def write(self, rows: CommitRows) -> None:
        if not rows:
            return
        with self._write() as conn:
            for b in rows.bodies:
                conn.execute(INSERT_BODY, b.values())
                conn.execute("DELETE FROM tombstones WHERE id = ?", (b.id,))
            for s in rows.stash:
                conn.execute(INSERT_STASH, s.values())
                conn.execute("DELETE FROM tombstones WHERE id = ?", (s.hash,))
            conn.executemany(
                "INSERT OR IGNORE INTO calls (trm_id, session_id, server, tool, at) VALUES (?, ?, ?, ?, ?)",
                [c.values() for c in rows.calls],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO stash_owners (hash, session_id) VALUES (?, ?)", list(rows.stash_owners)
            )
            conn.executemany(INSERT_EVENT, [e.values() for e in rows.events])
            if (rows.bodies or rows.stash) and self.searchable:
                search_sqlite.queue(conn, rows)

    def write_checkpoint(self, row: CheckpointRow) -> None:
        with self._write() as conn:
            conn.execute(WRITE_CHECKPOINT, row.values())

    def tombstone(self, entries: Sequence[Entry], now: float, reason: str) -> list[str]:
        removed: list[str] = []
        if not entries:
            return removed
        with self._write() as conn:
            for entry in entries:
                table, key = _TABLES[entry.kind]
                gone = conn.execute(
                    f"DELETE FROM {table} WHERE {key} = ? AND last_used_at <= ?", (entry.id, entry.last_used_at)
                ).rowcount
                if not gone:
                    continue
                conn.execute(
                    "INSERT INTO tombstones (id, kind, evicted_at, reason) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at, reason = excluded.reason",
                    (entry.id, entry.kind, now, reason),
                )
                search_sqlite.forget(conn, entry.id)
                removed.append(entry.id)
        return removed

    def touch(self, kind: EntryKind, id_: str, now: float, not_since: float) -> None:
        if not self.writable:
            return
        table, key = _TABLES[kind]
        try:
            with self._lock:
                self._conn.execute(
                    f"UPDATE {table} SET last_used_at = ? WHERE {key} = ? AND last_used_at < ?", (now, id_, not_since)
                )
        except sqlite3.Error as err:  # recency is a hint; a failed touch must not fail a read
            log.debug("ledger touch failed: %s", err)

    def set_last_used(self, kind: EntryKind, id_: str, at: float) -> None:
        table, key = _TABLES[kind]
        with self._write() as conn:
            conn.execute(f"UPDATE {table} SET last_used_at = ? WHERE {key} = ?", (at, id_))

    # ---------------------------------------------------------------- search (store/search_sqlite.py)

    @property
    def searchable(self) -> bool:
        """Whether this file has the search tables (a writable ledger gets them at open)."""
        if self._searchable is None:
            with self._lock:
                self._searchable = search_sqlite.search_ready(self._conn)
        return self._searchable

    def index_queued(self, budget_s: float, max_entries: int | None = None) -> tuple[int, int]:
        return search_sqlite.index_queued(self, budget_s, max_entries)

    def search_queued(self) -> int:
        return search_sqlite.queued(self)

    def search(self, terms: list[str], *, every_term: bool, owner: str | None, limit: int) -> list[SearchHit]:
        return search_sqlite.search(self, terms, every_term=every_term, owner=owner, limit=limit)

    # ---------------------------------------------------------------- reading

    def reachable(self) -> tuple[bool, str]:
        try:
            self._one("SELECT count(*) FROM meta", ())
        except LedgerUnavailable as err:
            return False, str(err)
        return True, "ok"

    # ---------------------------------------------------------------- file-level checks (SQLite only)

    def journal_mode(self) -> str:
        row = self._one("PRAGMA journal_mode", ())
        return str(row[0]) if row else ""

    def integrity(self) -> str:
        """`PRAGMA integrity_check`: "ok" for a sound file."""
        row = self._one("PRAGMA integrity_check", ())
        return str(row[0]) if row else ""

    def checkpoint(self) -> None:
        """Move the WAL into the main file (before copying or freezing the file on its own)."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def cap_file_size(self, extra_bytes: int | None) -> None:
        """Let the file grow by at most `extra_bytes` (None: no cap). Writes past it fail as on a full
        disk, which is how tests make a disk full without filling one."""
        with self._lock:
            if extra_bytes is None:
                self._conn.execute("PRAGMA max_page_count = 4294967294")
                return
            pages, size = self._conn.execute("SELECT * FROM pragma_page_count(), pragma_page_size()").fetchone()
            self._conn.execute(f"PRAGMA max_page_count = {pages + extra_bytes // size}")

    # ---------------------------------------------------------------- internals

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        with self._reading() as conn:
            return conn.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._reading() as conn:
            return conn.execute(sql, params).fetchall()

    def _reading(self) -> _Read:
        return _Read(self)

    def _write(self) -> _WriteTxn:
        return _WriteTxn(self)

    def _ensure_file(self) -> None:
        """Called under the lock: reattach if the file was deleted or replaced since it was opened."""
        if not self.writable or self._ident is None:
            return
        try:
            now = _ident(self._file)
        except OSError:
            now = None
        if now == self._ident:
            return
        self._reattach()

    def _reattach(self) -> None:
        path, old = self._file, self._conn
        try:
            created = _prepare_file(path)
            new = _connect(path, self.settings)
        except (OSError, sqlite3.Error) as err:
            raise LedgerWriteError(
                f"ledger {path}: the file was deleted while serving and cannot be recreated ({err}); results pass through unmodified"
            ) from None
        try:
            if created:
                old.backup(new)  # the whole ledger as this process still sees it, schema included
                _set_up(new)
                how = "recreated it from this process's open copy"
            else:
                _set_up(new)
                copied = _merge(old, new)
                search_sqlite.queue_unindexed(new)
                how = f"another process recreated it; merged {copied} rows from this process's open copy"
        except sqlite3.Error as err:
            new.close()
            raise LedgerWriteError(
                f"ledger {path}: the file was deleted while serving and could not be restored ({err})"
            ) from None
        self._conn = new
        self._ident = _ident(path)
        old.close()
        log.warning(
            "ledger %s was deleted or replaced while serving: %s; every id handed out stays recallable", path, how
        )


class _Read:
    """The lock, a file check, and sqlite errors as LedgerUnavailable."""

    def __init__(self, backend: SqliteBackend) -> None:
        self.backend = backend

    def __enter__(self) -> sqlite3.Connection:
        self.backend._lock.acquire()
        try:
            self.backend._ensure_file()
        except LedgerWriteError as err:
            log.warning("%s", err.cause)  # reads go on from the open copy
        return self.backend._conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        self.backend._lock.release()
        if isinstance(exc, sqlite3.ProgrammingError):
            raise LedgerUnavailable(f"ledger {self.backend.location} is closed ({exc})") from exc
        if isinstance(exc, sqlite3.Error) and _damaged(exc):
            raise LedgerCorrupt(f"ledger {self.backend.location}: the file is damaged ({exc})") from exc
        if isinstance(exc, (sqlite3.Error, OSError)):
            raise LedgerUnavailable(f"ledger {self.backend.location}: read failed ({exc})") from exc
        return False


def _damaged(err: sqlite3.Error) -> bool:
    """A read that fails the same way every time: SQLite found the file corrupt or not a database, or a
    TEXT column holds bytes that are not UTF-8 (the sqlite3 module's own error, without an error code)."""
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    return str(err).startswith("Could not decode to UTF-8")


class _WriteTxn:
    """BEGIN IMMEDIATE ... COMMIT under the lock; any sqlite/OS error becomes LedgerWriteError."""

    def __init__(self, backend: SqliteBackend) -> None:
        self.backend = backend

    def __enter__(self) -> sqlite3.Connection:
        self.backend._lock.acquire()
        try:
            self.backend._ensure_file()
            conn = self.backend._conn
            conn.execute("BEGIN IMMEDIATE")
        except (sqlite3.Error, OSError) as err:
            self.backend._lock.release()
            raise LedgerWriteError(_describe(err, self.backend)) from err
        except BaseException:
            self.backend._lock.release()
            raise
        return conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        conn = self.backend._conn
        try:
            if exc_type is None:
                try:
                    conn.execute("COMMIT")
                    return False
                except (sqlite3.Error, OSError) as err:
                    _rollback(conn)
                    raise LedgerWriteError(_describe(err, self.backend)) from err
            _rollback(conn)
            if isinstance(exc, (sqlite3.Error, OSError)):
                raise LedgerWriteError(_describe(exc, self.backend)) from exc
            return False
        finally:
            self.backend._lock.release()


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def _describe(err: BaseException, backend: SqliteBackend) -> str:
    text = str(err)
    low = text.lower()
    if "locked" in low or "busy" in low:
        hint = f"locked by another process for longer than busy_timeout_s={backend.settings.busy_timeout_s:g}"
    elif "readonly" in low or "read-only" in low or "permission" in low:
        hint = "the file or its directory is read-only"
    elif "full" in low or "no space" in low:
        hint = "the disk (or the database size limit) is full"
    elif "closed" in low:
        hint = "the ledger is closed"
    else:
        hint = "write failed"
    return f"ledger {backend.location}: {hint} ({text})"


def _ident(path: Path) -> _Ident:
    info = os.stat(path)
    return (info.st_dev, info.st_ino)


def _connect(path: Path, settings: LedgerSettings) -> sqlite3.Connection:
    return sqlite3.connect(str(path), timeout=settings.busy_timeout_s, isolation_level=None, check_same_thread=False)


def _prepare_file(target: Path) -> bool:
    """Directory 0700 (marked as ours) when we create it; file 0600 (its -wal/-shm files inherit
    the mode). Returns whether the file was created now."""
    parent = target.parent
    if not parent.exists():
        parent.mkdir(parents=True, mode=0o700)
        os.chmod(parent, 0o700)  # mkdir's mode is filtered by the umask
        mark_created(parent)
    try:
        fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    os.chmod(target, 0o600)
    return True


def mark_created(directory: Path) -> None:
    try:
        (directory / CREATED_MARKER).write_text(
            "This directory was created by offload-mcp for its ledger; its mode is kept at 0700.\n"
        )
    except OSError as err:  # the mark only widens what the start-up check may narrow
        log.debug("cannot mark %s as created by offload-mcp: %s", directory, err)


def created_by_offload_mcp(directory: Path) -> bool:
    """Whether the ledger created this directory (only such a directory's mode is ours to narrow)."""
    return (directory / CREATED_MARKER).is_file()


def _set_up(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    ensure_sqlite_schema(conn)
    search_sqlite.ensure_search_schema(conn)


def _set_up_waiting(conn: sqlite3.Connection, wait_s: float) -> None:
    """Set up, retrying while a peer holds the lock: two proxies opening a new file at the same
    moment race to create its schema, and switching to WAL does not wait on the busy handler."""
    deadline = time.monotonic() + max(wait_s, 0.5)
    while True:
        try:
            _set_up(conn)
            return
        except sqlite3.OperationalError as err:
            low = str(err).lower()
            if not ("locked" in low or "busy" in low) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def _merge(old: sqlite3.Connection, new: sqlite3.Connection) -> int:
    """Copy the keyed rows (bodies, cuts, who saw them, tombstones) the new file lacks. Events are
    statistics and would be counted twice by every process that merges, so they stay behind."""
    copied = 0
    new.execute("BEGIN IMMEDIATE")
    try:
        for table in _KEYED_TABLES:
            cols = [r[1] for r in old.execute(f"PRAGMA table_info({table})")]
            rows = old.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            marks = ", ".join("?" * len(cols))
            before = new.total_changes
            new.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES ({marks})", rows)
            copied += new.total_changes - before
        new.execute("COMMIT")
    except sqlite3.Error:
        _rollback(new)
        raise
    return copied
