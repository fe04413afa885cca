"""The ledger: one SQLite file where every offloaded body and reducer cut waits for recall.

How it works: bodies are the whole CallToolResult JSON exactly as the
downstream returned it (canonical bytes: sorted keys, no whitespace),
zstd-compressed, keyed by `trm_` + 16 hex of sha256 of those bytes, so the
same body always gets the same id. Reducer cuts live in `stash`, keyed by their
`cg` hash. `commit()` writes bodies, stash entries and events in one
transaction; the shaper shows a stub or marker only after it returns. Any
failure (read-only file, disk full, lock held past `busy_timeout_s`) raises
`LedgerWriteError` naming the cause, and the shaper passes the result through
unmodified.

Why SQLite in WAL mode: several proxies (one per client session) can share
one file; readers never block the writer, and a committed row survives a
kill -9 of the process. Timestamps exist only here, never in model-visible
bytes. Retention is off by default; when on, the least recently used rows go
first and leave a tombstone, so a recall of an evicted id says when and why.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import sqlite_utils
import zstandard

from . import decision_v1
from .settings import LedgerSettings

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
TRM_PREFIX = "trm_"
_ZSTD_LEVEL = 3
# zstd, not zlib: measured on 2 MB of log text here, level 3 compresses in 9 ms to 12% (zlib level 1: 46 ms to 28%)
# and decompresses in 2 ms (zlib: ~40 ms). The commit sits between the downstream answer and the client's stub.
_FLUSH_INTERVAL_S = 0.25
_MAX_PENDING_EVENTS = 10_000
_codecs = threading.local()


def _compress(data: bytes) -> bytes:
    compressor = getattr(_codecs, "compressor", None)
    if compressor is None:  # zstandard objects are not thread-safe: one per thread
        compressor = _codecs.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return compressor.compress(data)


def _decompress(data: bytes, codec: str) -> bytes:
    if codec == "zlib":
        return zlib.decompress(data)
    decompressor = getattr(_codecs, "decompressor", None)
    if decompressor is None:
        decompressor = _codecs.decompressor = zstandard.ZstdDecompressor()
    return decompressor.decompress(data)


class LedgerError(Exception):
    """The ledger could not be opened or used."""


class LedgerUnavailable(LedgerError):
    """The ledger file could not be opened at all."""


class LedgerWriteError(LedgerError):
    """A write did not commit; `cause` says why in words a user can act on."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class UnknownId(LookupError):
    """No body or stash entry with this id was ever stored here (or it is out of scope)."""

    def __init__(self, id_: str, detail: str = "") -> None:
        super().__init__(detail or f"{id_} is not in the ledger")
        self.id = id_


class Evicted(UnknownId):
    """The id was stored once and removed by retention; says when and why."""

    def __init__(self, id_: str, evicted_at: float, reason: str) -> None:
        when = datetime.fromtimestamp(evicted_at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        super().__init__(id_, f"{id_} was evicted from the ledger at {when} ({reason})")
        self.evicted_at = evicted_at
        self.reason = reason


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, compact, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def trm_id_for(body_json: bytes) -> str:
    return TRM_PREFIX + hashlib.sha256(body_json).hexdigest()[:16]


def default_ledger_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("offload-mcp")) / "ledger.db"


@dataclass(frozen=True)
class BodyRecord:
    """One offloaded result, ready to commit. Build it with `BodyRecord.of(...)`."""

    trm_id: str
    body_json: bytes
    server: str
    tool: str
    arguments: Mapping[str, Any]
    session_id: str
    chars: int
    """Characters of model-visible text in the body (the size the stub reports)."""

    @classmethod
    def of(cls, body: Mapping[str, Any], *, server: str, tool: str, arguments: Mapping[str, Any], session_id: str, chars: int) -> "BodyRecord":
        raw = canonical_json(body)
        return cls(trm_id_for(raw), raw, server, tool, dict(arguments), session_id, chars)


@dataclass(frozen=True)
class LedgerEvent:
    """A decision, recall or expand event, for stats. `detail` holds the priced terms and reducer events."""

    kind: str
    session_id: str = ""
    server: str = ""
    tool: str = ""
    verdict: str = ""
    reason: str = ""
    ref_id: str = ""
    chars_in: int = 0
    chars_out: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BodyInfo:
    trm_id: str
    server: str
    tool: str
    arguments: dict[str, Any]
    session_id: str
    raw_bytes: int
    stored_bytes: int
    chars: int
    created_at: float
    last_used_at: float


class Ledger:
    """Thread-safe handle on one ledger file. Open with `Ledger.open(settings, path)`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, settings: LedgerSettings, writable: bool) -> None:
        self._conn = conn
        self._db = sqlite_utils.Database(conn)
        self._lock = threading.RLock()
        self.path = path
        self.settings = settings
        self.writable = writable
        # Events that guard no body (a kept result's decision) are written in batches off the call
        # path: the per-call commit was ~0.4 ms of a ~0.5 ms shape. Any commit drains them first, in
        # its own transaction, so event order still follows call order.
        self._pending: list[tuple[LedgerEvent, float]] = []
        self._pending_lock = threading.Lock()
        self._wake = threading.Event()
        self._flusher: threading.Thread | None = None
        self._closed = False

    # ---------------------------------------------------------------- opening

    @classmethod
    def open(cls, settings: LedgerSettings | None = None, path: str | os.PathLike[str] | None = None) -> "Ledger":
        """Open (creating if needed) the ledger: `path` beats `settings.path` beats the XDG default.

        A file that exists but cannot be written opens read-only (recall still
        works, every commit fails with the cause). Raises LedgerUnavailable
        when the file cannot be opened at all.
        """
        settings = settings or LedgerSettings()
        target = Path(path) if path is not None else (settings.path or default_ledger_path())
        target = target.expanduser()
        try:
            _prepare_file(target)
        except OSError as err:
            if not target.exists():
                raise LedgerUnavailable(f"cannot create ledger {target}: {err.strerror or err}") from None
        try:
            conn = sqlite3.connect(
                str(target), timeout=settings.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as err:
            raise LedgerUnavailable(f"cannot open ledger {target}: {err}") from None
        writable = True
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            _create_schema(sqlite_utils.Database(conn))
        except sqlite3.DatabaseError as err:
            # A lock held by a peer at open time is transient: stay writable; commits will wait or fail alone.
            writable = "locked" in str(err).lower() or "busy" in str(err).lower()
            log.warning("ledger %s is not writable (%s): results will pass through unmodified", target, err)
            try:
                conn.execute("SELECT 1 FROM bodies LIMIT 1")
            except sqlite3.Error:
                conn.close()
                raise LedgerUnavailable(f"cannot use ledger {target}: {err}") from None
        ledger = cls(conn, target, settings, writable)
        if writable:
            try:
                with ledger._lock:
                    decision_v1.upgrade_sqlite(conn, target)
            except sqlite3.Error as err:
                log.warning("ledger %s: decision records not upgraded (%s); stats cannot read its older rows yet", target, err)
        if writable and settings.max_age_days is not None:
            try:
                ledger.evict()
            except LedgerWriteError as err:
                log.warning("ledger retention on open failed: %s", err.cause)
        return ledger

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join(timeout=5)
        self.flush_quietly()
        with self._lock:
            self._conn.close()

    # ---------------------------------------------------------------- deferred events

    def record_later(self, event: LedgerEvent) -> None:
        """Queue an event that guards no body; a background thread writes queued events in batches.

        Readers of this handle (`events`, `call_counts`, `counts`) flush first; `close()` and
        interpreter exit flush too. A kill -9 can lose the last fraction of a second of such
        events — statistics only, never a body, a stash entry or a stub's backing.
        """
        with self._pending_lock:
            if len(self._pending) >= _MAX_PENDING_EVENTS:
                del self._pending[0]
                log.warning("ledger %s: event queue full, oldest statistics event dropped", self.path)
            self._pending.append((event, time.time()))
            if self._flusher is None and not self._closed:
                self._flusher = threading.Thread(target=self._flush_loop, name="ledger-events", daemon=True)
                self._flusher.start()
                atexit.register(self.flush_quietly)

    def flush(self) -> None:
        """Write queued events now; raises LedgerWriteError (the events stay queued)."""
        if self._pending:
            self.commit()

    def flush_quietly(self) -> None:
        try:
            self.flush()
        except (LedgerError, sqlite3.ProgrammingError) as err:  # ProgrammingError: already closed
            log.warning("ledger %s: queued statistics events not written: %s", self.path, getattr(err, "cause", err))

    def _flush_loop(self) -> None:
        failing = False
        while not self._closed:
            self._wake.wait(_FLUSH_INTERVAL_S)
            self._wake.clear()
            try:
                self.flush()
                failing = False
            except LedgerError as err:
                if not failing:
                    log.warning("ledger %s: statistics events wait in memory: %s", self.path, getattr(err, "cause", err))
                failing = True
            except sqlite3.ProgrammingError:
                return

    def _take_pending(self) -> list[tuple[LedgerEvent, float]]:
        with self._pending_lock:
            taken, self._pending = self._pending, []
        return taken

    def _requeue(self, taken: list[tuple[LedgerEvent, float]]) -> None:
        with self._pending_lock:
            self._pending[:0] = taken[-_MAX_PENDING_EVENTS:]

    # ---------------------------------------------------------------- writing

    def commit(
        self,
        bodies: Iterable[BodyRecord] = (),
        stash: Mapping[str, str] | None = None,
        events: Iterable[LedgerEvent] = (),
    ) -> None:
        """Write bodies, stash entries and events in one transaction, or raise LedgerWriteError."""
        now = time.time()
        body_rows = [
            {
                "id": b.trm_id,
                "server": b.server,
                "tool": b.tool,
                "arguments": canonical_json(dict(b.arguments)).decode(),
                "session_id": b.session_id,
                "body": _compress(b.body_json),
                "codec": "zstd",
                "raw_bytes": len(b.body_json),
                "chars": b.chars,
                "created_at": now,
                "last_used_at": now,
            }
            for b in bodies
        ]
        for row in body_rows:
            row["stored_bytes"] = len(row["body"])
        stash_rows = [
            {"hash": h, "original": _compress(text.encode("utf-8", "surrogatepass")), "codec": "zstd", "chars": len(text), "created_at": now, "last_used_at": now}
            for h, text in (stash or {}).items()
        ]
        call_rows = [
            {"trm_id": b.trm_id, "session_id": b.session_id, "server": b.server, "tool": b.tool, "at": now} for b in bodies
        ]
        queued = self._take_pending()
        event_rows = [_event_row(e, at) for e, at in queued] + [_event_row(e, now) for e in events]
        # Who was shown each marker: the sessions of this commit's bodies and events (for scope `session`).
        owners = sorted({b.session_id for b in bodies} | {e.session_id for e in events if e.session_id})
        owner_rows = [(h, owner) for h in (stash or {}) for owner in owners]
        try:
            self._commit_rows(body_rows, stash_rows, call_rows, owner_rows, event_rows)
        except LedgerError:
            self._requeue(queued)
            raise
        if (body_rows or stash_rows) and self.settings.max_total_bytes is not None:
            try:
                self.evict()
            except LedgerWriteError as err:
                log.warning("ledger retention failed: %s", err.cause)

    def _commit_rows(self, body_rows: list[dict[str, Any]], stash_rows: list[dict[str, Any]], call_rows: list[dict[str, Any]], owner_rows: list[tuple[str, str]], event_rows: list[dict[str, Any]]) -> None:
        if not (body_rows or stash_rows or event_rows):
            return
        with self._write() as conn:
            for row in body_rows:
                # Same id means the same bytes: keep the first row, refresh its recency.
                conn.execute(
                    "INSERT INTO bodies (id, server, tool, arguments, session_id, body, codec, raw_bytes, stored_bytes, chars, created_at, last_used_at)"
                    " VALUES (:id, :server, :tool, :arguments, :session_id, :body, :codec, :raw_bytes, :stored_bytes, :chars, :created_at, :last_used_at)"
                    " ON CONFLICT(id) DO UPDATE SET last_used_at = excluded.last_used_at",
                    row,
                )
                conn.execute("DELETE FROM tombstones WHERE id = ?", (row["id"],))
            for row in stash_rows:
                conn.execute(
                    "INSERT INTO stash (hash, original, codec, chars, created_at, last_used_at) VALUES (:hash, :original, :codec, :chars, :created_at, :last_used_at)"
                    " ON CONFLICT(hash) DO UPDATE SET last_used_at = excluded.last_used_at",
                    row,
                )
                conn.execute("DELETE FROM tombstones WHERE id = ?", (row["hash"],))
            conn.executemany(
                "INSERT OR IGNORE INTO calls (trm_id, session_id, server, tool, at) VALUES (:trm_id, :session_id, :server, :tool, :at)",
                call_rows,
            )
            conn.executemany("INSERT OR IGNORE INTO stash_owners (hash, session_id) VALUES (?, ?)", owner_rows)
            conn.executemany(_EVENT_INSERT, event_rows)

    def record_event(self, event: LedgerEvent) -> None:
        self.commit(events=[event])

    def record_recall(self, session_id: str, trm_id: str, *, ok: bool, chars_out: int = 0, detail: Mapping[str, Any] | None = None) -> None:
        self.commit(events=[LedgerEvent("recall", session_id=session_id, verdict="ok" if ok else "error", ref_id=trm_id, chars_out=chars_out, detail=detail or {})])

    def record_expand(self, session_id: str, cg_hash: str, *, ok: bool, chars_out: int = 0, detail: Mapping[str, Any] | None = None) -> None:
        self.commit(events=[LedgerEvent("expand", session_id=session_id, verdict="ok" if ok else "error", ref_id=cg_hash, chars_out=chars_out, detail=detail or {})])

    # ---------------------------------------------------------------- reading

    def get_body_json(self, trm_id: str, *, session_id: str | None = None) -> bytes:
        """The stored CallToolResult JSON bytes; raises UnknownId / Evicted."""
        with self._lock:
            row = self._conn.execute("SELECT body, codec FROM bodies WHERE id = ?", (trm_id,)).fetchone()
            if row is None:
                self._raise_missing(trm_id)
            if self.settings.scope == "session" and session_id is not None:
                owned = self._conn.execute(
                    "SELECT 1 FROM calls WHERE trm_id = ? AND session_id = ? LIMIT 1", (trm_id, session_id)
                ).fetchone()
                if owned is None:
                    raise UnknownId(trm_id, f"{trm_id} belongs to another session (ledger scope is `session`)")
            self._touch("bodies", "id", trm_id)
        return _decompress(row[0], row[1])

    def get_body(self, trm_id: str, *, session_id: str | None = None) -> dict[str, Any]:
        """The stored CallToolResult as a JSON object; raises UnknownId / Evicted."""
        return orjson.loads(self.get_body_json(trm_id, session_id=session_id))

    def body_info(self, trm_id: str) -> BodyInfo:
        with self._lock:
            row = self._conn.execute(
                "SELECT id, server, tool, arguments, session_id, raw_bytes, stored_bytes, chars, created_at, last_used_at FROM bodies WHERE id = ?",
                (trm_id,),
            ).fetchone()
            if row is None:
                self._raise_missing(trm_id)
        return BodyInfo(row[0], row[1], row[2], orjson.loads(row[3]), row[4], row[5], row[6], row[7], row[8], row[9])

    def get_stash(self, cg_hash: str, *, session_id: str | None = None) -> str:
        """The original text a `<<cg:HASH>>` marker replaced; raises UnknownId / Evicted.

        With scope `session` and a `session_id`, only a session that was shown the marker may read it.
        """
        with self._lock:
            row = self._conn.execute("SELECT original, codec FROM stash WHERE hash = ?", (cg_hash,)).fetchone()
            if row is None:
                self._raise_missing(cg_hash)
            if self.settings.scope == "session" and session_id is not None:
                owned = self._conn.execute(
                    "SELECT 1 FROM stash_owners WHERE hash = ? AND session_id = ? LIMIT 1", (cg_hash, session_id)
                ).fetchone()
                if owned is None:
                    raise UnknownId(cg_hash, f"<<cg:{cg_hash}>> belongs to another session (ledger scope is `session`)")
            self._touch("stash", "hash", cg_hash)
        return _decompress(row[0], row[1]).decode("utf-8", "surrogatepass")

    def has_body(self, trm_id: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM bodies WHERE id = ?", (trm_id,)).fetchone() is not None

    def events(self, since: float | None = None, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Recorded events, oldest first, as dicts (`detail` decoded)."""
        self.flush_quietly()
        sql = "SELECT id, at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail FROM events WHERE at >= ?"
        params: list[Any] = [since or 0.0]
        kinds = list(kinds or [])
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += kinds
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY id", params).fetchall()
        cols = ("id", "at", "kind", "session_id", "server", "tool", "verdict", "reason", "ref_id", "chars_in", "chars_out", "detail")
        for row in rows:
            item = dict(zip(cols, row))
            item["detail"] = orjson.loads(item["detail"]) if item["detail"] else {}
            yield item

    def call_counts(self, since: float | None = None) -> dict[tuple[str, str], int]:
        """How often each (server, downstream tool) was called since a time: for hot-tool learning."""
        self.flush_quietly()
        with self._lock:
            rows = self._conn.execute(
                "SELECT server, tool, count(*) FROM events WHERE kind = 'decision' AND at >= ? GROUP BY server, tool",
                (since or 0.0,),
            ).fetchall()
        return {(server, tool): n for server, tool, n in rows}

    def counts(self) -> dict[str, int]:
        """Row counts and stored bytes, for stats and health."""
        self.flush_quietly()
        with self._lock:
            bodies, stored = self._conn.execute("SELECT count(*), coalesce(sum(stored_bytes), 0) FROM bodies").fetchone()
            stash = self._conn.execute("SELECT count(*) FROM stash").fetchone()[0]
            tombstones = self._conn.execute("SELECT count(*) FROM tombstones").fetchone()[0]
        return {"bodies": bodies, "stored_bytes": stored, "stash": stash, "tombstones": tombstones}

    # ---------------------------------------------------------------- retention

    def evict(self, now: float | None = None) -> list[str]:
        """Apply max_age_days and max_total_bytes (least recently used first); return evicted ids."""
        now = time.time() if now is None else now
        max_age = self.settings.max_age_days
        max_total = self.settings.max_total_bytes
        evicted: list[str] = []
        if max_age is None and max_total is None:
            return evicted
        with self._write() as conn:
            if max_age is not None:
                cutoff = now - max_age * 86400.0
                reason = f"not used for more than max_age_days={max_age:g}"
                for table, key in (("bodies", "id"), ("stash", "hash")):
                    ids = [r[0] for r in conn.execute(f"SELECT {key} FROM {table} WHERE last_used_at < ?", (cutoff,))]
                    _tombstone(conn, table, key, ids, now, reason)
                    evicted += ids
            if max_total is not None:
                total = conn.execute(
                    "SELECT (SELECT coalesce(sum(stored_bytes), 0) FROM bodies) + (SELECT coalesce(sum(length(original)), 0) FROM stash)"
                ).fetchone()[0]
                if total > max_total:
                    reason = f"least recently used when the ledger exceeded max_total_bytes={max_total}"
                    rows = conn.execute(
                        "SELECT 'bodies', id, stored_bytes, last_used_at FROM bodies"
                        " UNION ALL SELECT 'stash', hash, length(original), last_used_at FROM stash ORDER BY 4, 2"
                    )
                    victims: dict[str, list[str]] = {"bodies": [], "stash": []}
                    for table, id_, size, _ in rows:
                        if total <= max_total:
                            break
                        victims[table].append(id_)
                        total -= size
                    _tombstone(conn, "bodies", "id", victims["bodies"], now, reason)
                    _tombstone(conn, "stash", "hash", victims["stash"], now, reason)
                    evicted += victims["bodies"] + victims["stash"]
        if evicted:
            log.info("ledger retention evicted %d entries", len(evicted))
        return evicted

    # ---------------------------------------------------------------- internals

    def _raise_missing(self, id_: str) -> None:
        tomb = self._conn.execute("SELECT evicted_at, reason FROM tombstones WHERE id = ?", (id_,)).fetchone()
        if tomb is not None:
            raise Evicted(id_, tomb[0], tomb[1])
        raise UnknownId(id_)

    def _touch(self, table: str, key: str, id_: str) -> None:
        if not self.writable:
            return
        try:
            # Minute granularity is plenty for LRU and keeps paging through one body from writing on every page.
            now = time.time()
            self._conn.execute(f"UPDATE {table} SET last_used_at = ? WHERE {key} = ? AND last_used_at < ?", (now, id_, now - 60))
        except sqlite3.Error as err:  # recency is a hint; a failed touch must not fail a read
            log.debug("ledger touch failed: %s", err)

    def _write(self) -> "_WriteTxn":
        return _WriteTxn(self)


class _WriteTxn:
    """BEGIN IMMEDIATE ... COMMIT under the ledger's lock; any sqlite/OS error becomes LedgerWriteError."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def __enter__(self) -> sqlite3.Connection:
        self.ledger._lock.acquire()
        conn = self.ledger._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except (sqlite3.Error, OSError) as err:
            self.ledger._lock.release()
            raise LedgerWriteError(_describe(err, self.ledger)) from err
        return conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        conn = self.ledger._conn
        try:
            if exc_type is None:
                try:
                    conn.execute("COMMIT")
                    return False
                except (sqlite3.Error, OSError) as err:
                    _rollback(conn)
                    raise LedgerWriteError(_describe(err, self.ledger)) from err
            _rollback(conn)
            if isinstance(exc, (sqlite3.Error, OSError)):
                raise LedgerWriteError(_describe(exc, self.ledger)) from exc
            return False
        finally:
            self.ledger._lock.release()


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def _describe(err: BaseException, ledger: Ledger) -> str:
    text = str(err)
    low = text.lower()
    if "locked" in low or "busy" in low:
        hint = f"locked by another process for longer than busy_timeout_s={ledger.settings.busy_timeout_s:g}"
    elif "readonly" in low or "read-only" in low or "permission" in low:
        hint = "the file or its directory is read-only"
    elif "full" in low or "no space" in low:
        hint = "the disk (or the database size limit) is full"
    else:
        hint = "write failed"
    return f"ledger {ledger.path}: {hint} ({text})"


def _tombstone(conn: sqlite3.Connection, table: str, key: str, ids: list[str], now: float, reason: str) -> None:
    for id_ in ids:
        conn.execute(f"DELETE FROM {table} WHERE {key} = ?", (id_,))
        conn.execute(
            "INSERT INTO tombstones (id, kind, evicted_at, reason) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at, reason = excluded.reason",
            (id_, "body" if table == "bodies" else "stash", now, reason),
        )


_EVENT_INSERT = (
    "INSERT INTO events (at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail)"
    " VALUES (:at, :kind, :session_id, :server, :tool, :verdict, :reason, :ref_id, :chars_in, :chars_out, :detail)"
)


def _event_row(e: LedgerEvent, now: float) -> dict[str, Any]:
    return {
        "at": now,
        "kind": e.kind,
        "session_id": e.session_id,
        "server": e.server,
        "tool": e.tool,
        "verdict": e.verdict,
        "reason": e.reason,
        "ref_id": e.ref_id,
        "chars_in": e.chars_in,
        "chars_out": e.chars_out,
        "detail": canonical_json(dict(e.detail)).decode() if e.detail else "",
    }


def _prepare_file(target: Path) -> None:
    """Directory 0700 when we create it; file 0600 (its -wal/-shm files inherit the mode)."""
    parent = target.parent
    if not parent.exists():
        parent.mkdir(parents=True, mode=0o700)
        os.chmod(parent, 0o700)  # mkdir's mode is filtered by the umask
    if not target.exists():
        fd = os.open(target, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        os.chmod(target, 0o600)


_ADDED_COLUMNS = {("bodies", "codec"): "zlib", ("stash", "codec"): "zlib"}


def _create_schema(db: sqlite_utils.Database) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
    db["bodies"].create(
        {
            "id": str, "server": str, "tool": str, "arguments": str, "session_id": str, "body": bytes, "codec": str,
            "raw_bytes": int, "stored_bytes": int, "chars": int, "created_at": float, "last_used_at": float,
        },
        pk="id",
        if_not_exists=True,
    )
    db["stash"].create(
        {"hash": str, "original": bytes, "codec": str, "chars": int, "created_at": float, "last_used_at": float}, pk="hash", if_not_exists=True
    )
    db["calls"].create(
        {"trm_id": str, "session_id": str, "server": str, "tool": str, "at": float}, pk=("trm_id", "session_id"), if_not_exists=True
    )
    db["stash_owners"].create({"hash": str, "session_id": str}, pk=("hash", "session_id"), if_not_exists=True)
    db["tombstones"].create({"id": str, "kind": str, "evicted_at": float, "reason": str}, pk="id", if_not_exists=True)
    db["events"].create(
        {
            "id": int, "at": float, "kind": str, "session_id": str, "server": str, "tool": str, "verdict": str,
            "reason": str, "ref_id": str, "chars_in": int, "chars_out": int, "detail": str,
        },
        pk="id",
        if_not_exists=True,
    )
    # Columns added after ledgers were first written, filled with what their old rows imply:
    # before `codec` existed every body and stash entry was zlib-compressed.
    for (table, column), default in _ADDED_COLUMNS.items():
        if column not in db[table].columns_dict:
            db[table].add_column(column, str, not_null_default=default)
    db["bodies"].create_index(["last_used_at"], if_not_exists=True)
    db["stash"].create_index(["last_used_at"], if_not_exists=True)
    db["events"].create_index(["at"], if_not_exists=True)
    db["events"].create_index(["kind", "at"], if_not_exists=True)
    db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])

