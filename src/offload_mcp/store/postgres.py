"""The PostgreSQL backend: one shared ledger for several replicas (`postgresql://` URL).

How it works: psycopg 3 with a connection pool (`offload-mcp[postgres]`). The proxy creates and
migrates its own tables (versioned in `offload_meta`, one migration at a time under an advisory
lock, so replicas starting together do not race). Rows are the same as in SQLite: bodies and cuts
compressed by `store.codec`, ids derived from content, so writes are idempotent: two replicas
committing the same result at once both succeed and leave one row (rows are written in id order,
so two such transactions never deadlock). Retention and tombstones are shared by all replicas.

When it is unreachable: every write raises LedgerWriteError and every read LedgerUnavailable with
the cause, so the shaper passes results through untouched and recall says why; nothing waits
longer than `busy_timeout_s` for a connection, and the server itself ends any statement that waits
on a lock longer than that (`lock_timeout`) or runs past the ledger's deadline (`statement_timeout`),
so a `LOCK TABLE` elsewhere hands the connection back instead of holding it. A server that does not
answer at all (stopped, partitioned) is bounded by the ledger's deadline (store/deadline.py). The pool checks a connection before handing it
out and keeps reconnecting in the background, so the replica recovers by itself when the server
returns; the schema is (re)checked on first use if it could not be at start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from . import search_postgres
from .errors import LedgerUnavailable, LedgerWriteError
from .interfaces import CommitRows, Entry, EntryKind
from .location import redact, scrub
from .queries import INSERT_BODY, INSERT_EVENT, INSERT_STASH, TABLES, WRITE_CHECKPOINT, SqlReads
from .records import CheckpointRow
from .schema import migrate_postgres
from .search import SearchHit
from .settings import LedgerSettings

try:  # optional extra: `pip install "offload-mcp[postgres]"`
    import psycopg
    import psycopg.errors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]
    ConnectionPool = None  # type: ignore[assignment,misc]

log = logging.getLogger(__name__)

_TABLES = TABLES


class PostgresBackend(SqlReads):
    """Rows in and out of a PostgreSQL ledger through a connection pool. Thread-safe."""

    path: Path | None = None
    OWNER_OF_DETAIL = "CASE WHEN left(detail, 1) = '{' THEN detail::jsonb ->> 'owner' END"

    def __init__(self, url: str, settings: LedgerSettings, *, connect_now: bool = False) -> None:
        if psycopg is None or ConnectionPool is None:
            raise LedgerUnavailable(
                f'ledger {redact(url)}: PostgreSQL support is not installed; run `pip install "offload-mcp[postgres]"`'
            )
        self.location = redact(url)
        try:
            conninfo_to_dict(url)
        except psycopg.Error as err:
            # Refused before any pool: libpq quotes what it cannot read, and the pool would log that
            # (the password, when that is the bad piece) at every reconnect.
            raise LedgerUnavailable(f"ledger {self.location}: not a URL libpq reads ({_reason(err, url)})") from None
        self._url = url
        self._wait = max(settings.busy_timeout_s, 0.5)
        connect_timeout = max(1, round(self._wait))  # libpq takes whole seconds
        if connect_now:
            self._connect_once(connect_timeout)
        self.settings = settings
        # A serving proxy's statements end a little after its deadline; a one-off command (stats over a
        # large ledger, migrate) runs its statements as long as they take.
        self._bounded_statements = not connect_now
        self.writable = True
        self._schema_lock = threading.Lock()
        self._schema_ready = False
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=settings.pool_size,
            kwargs={"autocommit": True, "connect_timeout": connect_timeout},
            configure=self._configure,
            check=ConnectionPool.check_connection,
            timeout=self._wait,
            reconnect_timeout=5.0,  # then start over on the next request: recovery does not wait out a long backoff
            name="offload-mcp-ledger",
            open=False,
        )
        try:
            self._pool.open(wait=False)
        except psycopg.Error as err:
            raise LedgerUnavailable(f"ledger {self.location}: {_reason(err, url)}") from None

    @classmethod
    def open(cls, url: str, settings: LedgerSettings, *, connect_now: bool = False) -> PostgresBackend:
        """Open the pool and start migrating the schema in the background: the proxy's start-up
        never waits on the database. Every operation waits for the schema (or checks it again if
        the server was unreachable), so nothing is written before the tables are right.

        `connect_now`, for a one-off command (stats, ledger migrate, catalog): one connection first, then the
        schema, before returning. A server that does not answer is then one LedgerUnavailable naming
        libpq's reason, where the pool would log a warning per retry until `busy_timeout_s` and end
        with a serving proxy's "results pass through unmodified until it answers"."""
        backend = cls(url, settings, connect_now=connect_now)
        if not connect_now:
            threading.Thread(target=backend._warm_up, name="ledger-schema", daemon=True).start()
            return backend
        try:
            backend._ensure_schema()
        except BaseException:
            backend.close()
            raise
        return backend

    @property
    def _lock_timeout_ms(self) -> int:
        # 0 would mean "wait forever" to PostgreSQL, where busy_timeout_s 0 means "do not wait".
        return max(1, int(self.settings.busy_timeout_s * 1000))

    def _statement_timeout_ms(self, stored_bytes: int = 0) -> int:
        """The server ends a statement a little after the ledger's own deadline (store/ledger.py) for it."""
        wait = max(self.settings.busy_timeout_s, 0.5) + 1.0 + stored_bytes / (5 * 2**20)
        return int(wait * 1000)

    def _configure(self, conn: Any) -> None:
        """Every pooled connection: bounded lock waits and statements, whoever reads or writes through it."""
        conn.execute(f"SET lock_timeout = {self._lock_timeout_ms}")
        if self._bounded_statements:
            conn.execute(f"SET statement_timeout = {self._statement_timeout_ms()}")

    def _connect_once(self, timeout: int) -> None:
        try:
            psycopg.connect(self._url, connect_timeout=timeout, autocommit=True).close()
        except psycopg.Error as err:
            raise LedgerUnavailable(
                f"ledger {self.location}: PostgreSQL is unreachable ({_reason(err, self._url)})"
            ) from None

    def _warm_up(self) -> None:
        try:
            self._ensure_schema()
        except LedgerUnavailable as err:
            log.warning("%s: results pass through unmodified until it answers", err)

    def close(self) -> None:
        self._pool.close(timeout=2.0)

    # ---------------------------------------------------------------- schema

    def _ensure_schema(self) -> None:
        if self._schema_ready:
            return
        with self._schema_lock:
            if self._schema_ready:
                return
            with self._connection(LedgerUnavailable) as conn, conn.transaction():
                migrate_postgres(conn, self.location)
            self._schema_ready = True

    def schema_version(self) -> int:
        row = self._one("SELECT value FROM offload_meta WHERE key = 'schema_version'", ())
        return int(row[0]) if row else 0

    # ---------------------------------------------------------------- writing

    def write(self, rows: CommitRows) -> None:
        if not rows:
            return
        bodies = sorted(rows.bodies, key=lambda b: b.id)  # one lock order for every writer: no deadlocks
        stash = sorted(rows.stash, key=lambda s: s.hash)
        revived = sorted({b.id for b in bodies} | {s.hash for s in stash})
        stored = sum(b.stored_bytes for b in bodies) + sum(len(s.original) for s in stash)
        with self._transaction() as conn:
            if stored and self._bounded_statements:
                conn.execute(f"SET LOCAL statement_timeout = {self._statement_timeout_ms(stored)}")
            cur = conn.cursor()
            if bodies:
                cur.executemany(_pg(INSERT_BODY), [b.values() for b in bodies])
            if stash:
                cur.executemany(_pg(INSERT_STASH), [s.values() for s in stash])
            if revived:
                cur.execute("DELETE FROM tombstones WHERE id = ANY(%s)", (revived,))
            calls = sorted(
                {(c.trm_id, c.session_id): c for c in rows.calls}.values(), key=lambda c: (c.trm_id, c.session_id)
            )
            if calls:
                cur.executemany(
                    "INSERT INTO calls (trm_id, session_id, server, tool, at) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [c.values() for c in calls],
                )
            owners = sorted(set(rows.stash_owners))
            if owners:
                cur.executemany(
                    "INSERT INTO stash_owners (hash, session_id) VALUES (%s, %s) ON CONFLICT DO NOTHING", owners
                )
            if rows.events:
                cur.executemany(_pg(INSERT_EVENT), [e.values() for e in rows.events])
            search_postgres.queue(cur, rows)

    def tombstone(self, entries: Sequence[Entry], now: float, reason: str) -> list[str]:
        removed: list[str] = []
        if not entries:
            return removed
        with self._transaction() as conn:
            for entry in entries:
                table, key = _TABLES[entry.kind]
                gone = conn.execute(
                    f"DELETE FROM {table} WHERE {key} = %s AND last_used_at <= %s",
                    (entry.id, entry.last_used_at),
                ).rowcount
                if not gone:
                    continue
                conn.execute(
                    "INSERT INTO tombstones (id, kind, evicted_at, reason) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (id) DO UPDATE SET evicted_at = excluded.evicted_at, reason = excluded.reason",
                    (entry.id, entry.kind, now, reason),
                )
                search_postgres.forget(conn, entry.id)
                removed.append(entry.id)
        return removed

    def touch(self, kind: EntryKind, id_: str, now: float, not_since: float) -> None:
        table, key = _TABLES[kind]
        try:
            with self._connection(LedgerUnavailable) as conn:
                conn.execute(
                    f"UPDATE {table} SET last_used_at = %s WHERE {key} = %s AND last_used_at < %s",
                    (now, id_, not_since),
                )
        except (LedgerUnavailable, psycopg.Error) as err:  # recency is a hint; a failed touch must not fail a read
            log.debug("ledger touch failed: %s", err)

    def write_checkpoint(self, row: CheckpointRow) -> None:
        with self._transaction() as conn:
            conn.execute(_pg(WRITE_CHECKPOINT), row.values())

    def set_last_used(self, kind: EntryKind, id_: str, at: float) -> None:
        table, key = _TABLES[kind]
        with self._transaction() as conn:
            conn.execute(f"UPDATE {table} SET last_used_at = %s WHERE {key} = %s", (at, id_))

    # ---------------------------------------------------------------- search (store/search_postgres.py)

    searchable = True
    """The schema this code migrates to has the search tables (version 2)."""

    def index_queued(self, budget_s: float, max_entries: int | None = None) -> tuple[int, int]:
        return search_postgres.index_queued(self, budget_s, max_entries)

    def search_queued(self) -> int:
        return search_postgres.queued(self)

    def search(self, terms: list[str], *, every_term: bool, owner: str | None, limit: int) -> list[SearchHit]:
        return search_postgres.search(self, terms, every_term=every_term, owner=owner, limit=limit)

    # ---------------------------------------------------------------- reading

    def reachable(self) -> tuple[bool, str]:
        try:
            self._one("SELECT 1", ())
        except LedgerUnavailable as err:
            return False, str(err)
        return True, "ok"

    def integrity(self) -> str:
        """The server keeps its own pages sound; what we can check is that our tables answer."""
        self.counts()
        return "ok"

    # ---------------------------------------------------------------- internals

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        self._ensure_schema()
        with self._connection(LedgerUnavailable) as conn:
            return conn.execute(_pg(sql), params).fetchone()

    def _all(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        self._ensure_schema()
        with self._connection(LedgerUnavailable) as conn:
            rows: list[tuple[Any, ...]] = conn.execute(_pg(sql), params).fetchall()
        return rows

    def _connection(self, error: type[Exception]) -> _Checkout:
        return _Checkout(self, error, transaction=False)

    def _transaction(self) -> _Checkout:
        try:
            self._ensure_schema()
        except LedgerUnavailable as err:
            raise LedgerWriteError(str(err)) from None
        return _Checkout(self, LedgerWriteError, transaction=True)

    def describe(self, err: BaseException) -> str:
        text = scrub(" ".join(str(err).split()), self._url) or type(err).__name__
        if isinstance(err, psycopg.errors.LockNotAvailable):
            hint = f"locked by another writer for longer than busy_timeout_s={self.settings.busy_timeout_s:g}"
        elif isinstance(err, psycopg.errors.DiskFull):
            hint = "the database server's disk is full"
        elif isinstance(err, psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction):
            hint = "the database user may not write (read-only)"
        elif isinstance(err, psycopg.OperationalError | psycopg.InterfaceError):
            hint = "PostgreSQL is unreachable"
        else:
            hint = "write failed"
        return f"ledger {self.location}: {hint} ({text})"


def _reason(err: BaseException, url: str) -> str:
    """A driver error's first line (libpq adds a hint on the next), without the URL's password."""
    return scrub((str(err).strip().splitlines() or [type(err).__name__])[0], url)


class _Checkout:
    """A pooled connection (in a transaction with a lock timeout, for writes); driver errors become
    the ledger's own: `error` for reads, LedgerWriteError for writes."""

    def __init__(self, backend: PostgresBackend, error: type[Exception], *, transaction: bool) -> None:
        self.backend = backend
        self.error = error
        self.transaction = transaction
        self._cm: Any = None
        self._txn: Any = None

    def __enter__(self) -> Any:
        try:
            self._cm = self.backend._pool.connection(timeout=self.backend._wait)
            conn = self._cm.__enter__()
            if self.transaction:
                self._txn = conn.transaction()
                self._txn.__enter__()
                conn.execute(f"SET LOCAL lock_timeout = {self.backend._lock_timeout_ms}")
            return conn
        except psycopg.Error as err:
            self._unwind(type(err), err)
            raise self.error(self.backend.describe(err)) from None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        try:
            self._unwind(exc_type, exc)
        except psycopg.Error as err:  # the COMMIT itself failed
            raise self.error(self.backend.describe(err)) from None
        if isinstance(exc, psycopg.Error):
            raise self.error(self.backend.describe(exc)) from None
        return False

    def _unwind(self, exc_type: Any, exc: Any) -> None:
        try:
            if self._txn is not None:
                txn, self._txn = self._txn, None
                try:
                    txn.__exit__(exc_type, exc, None)
                except psycopg.Error:
                    if exc is None:
                        raise  # the COMMIT failed: the caller must know
        finally:
            if self._cm is not None:
                cm, self._cm = self._cm, None
                try:
                    cm.__exit__(exc_type, exc, None)
                except psycopg.Error:
                    pass


def _pg(sql: str) -> str:
    """The shared queries (store/queries.py) use `?` placeholders; psycopg's are `%s`."""
    return sql.replace("?", "%s")
