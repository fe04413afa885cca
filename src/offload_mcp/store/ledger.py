"""The ledger: where every offloaded body and reducer cut waits for recall, on any backend.

How it works: bodies are the whole CallToolResult JSON exactly as the downstream returned it
(canonical bytes, `records`), compressed (`codec`), keyed by `trm_` + 16 hex of the BLAKE3 hash of those
bytes, so the same body always gets the same id, and a read checks what it decompressed against
that id (damaged bytes are `LedgerCorrupt`, never a wrong result). Reducer cuts live in the stash,
keyed by their `cg` hash and checked against it the same way. `commit()` writes bodies, stash
entries and events in one transaction; the shaper shows a stub or marker only after it returns.
Any failure raises `LedgerWriteError` naming the cause, and the shaper passes the result through
unmodified. Opened with `deadlines` (a serving proxy), every backend call runs in the ledger's own
worker threads and its caller waits at most `busy_timeout_s` + 0.5 s (store/deadline.py): a stopped
or locked database costs a call that long, and nothing at all while it stays stalled.

This class holds what every backend shares: encoding, the queue of deferred events and its
flush thread, the session-scope checks, recency and retention (`retention`). The backend
(`SqliteBackend` for a file, `PostgresBackend` for a `postgresql://` URL) only moves rows in
transactions. Timestamps exist only in the ledger, never in model-visible bytes.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

import orjson

from . import codec, retention
from .deadline import DeadlineRunner
from .errors import Evicted, LedgerCorrupt, LedgerError, LedgerUnavailable, LedgerWriteError, UnknownId
from .interfaces import BodyRow, CallRow, CommitRows, EntryKind, EventRow, LedgerBackend, Scope, StashRow, Stored
from .location import default_ledger_path, resolve
from .records import (
    BodyInfo,
    BodyRecord,
    CheckpointRow,
    LedgerEvent,
    SessionSpan,
    canonical_json,
    is_body_of,
    is_original_of,
    trm_id_for,
)
from .search import INDEX_BUDGET_S, SEARCH_TIME_LIMIT_S, Indexer, SearchPage, SearchRefused
from .settings import LedgerSettings
from .sqlite import SqliteBackend

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_FLUSH_INTERVAL_S = 0.25
_MAX_PENDING_EVENTS = 10_000
OWNED_SCOPES = ("session", "principal")
"""Ledger scopes under which reading a body or stash checks its owner (a session, or a principal)."""
_TOUCH_EVERY_S = 60.0
"""Minute granularity is plenty for LRU and keeps paging through one body from writing on every page."""
_DEADLINE_SLACK_S = 0.5
"""Beyond `busy_timeout_s`: the statement itself, once the lock or connection it waited for is there."""
_MIN_WAIT_S = 0.5
"""The least a call waits (PostgreSQL's pool waits this long for a connection even at busy_timeout_s 0)."""
_WRITE_BYTES_PER_S = 5 * 2**20
"""A large write's deadline grows by its stored bytes at this (slow disk, loaded host) rate."""
CALL_COUNTS_DEADLINE_S = 0.5
"""Hot-tool learning reads call counts while a tools/list waits: it gives up sooner than other reads
(the list then goes out without learned tools) so a locked events table never holds a listing."""
EVENT_COLUMNS = tuple("id at kind session_id server tool verdict reason ref_id chars_in chars_out detail".split())
"""The columns of an event row, as the backends' `events` and `events_page` return them."""
EVENT_PAGE_ROWS = 5_000
"""Events read per query by `events_in_order`: a page of decision records is a few MB."""
"""A large write's deadline grows by its stored bytes at this (slow disk, loaded host) rate."""


class Ledger:
    """Thread-safe ledger over one backend; offers BodyStore, StashStore, EventLog, CallHistory and
    LedgerWriter. Open with `Ledger.open(settings, path_or_url)`."""

    def __init__(self, backend: LedgerBackend, settings: LedgerSettings, *, deadlines: bool = False) -> None:
        self.backend = backend
        self.settings = settings
        # A serving proxy never lets a caller wait on the database past a deadline (store/deadline.py);
        # one-off commands (stats, replay, migrate) read as long as the database takes.
        self._runner = (
            DeadlineRunner(settings.pool_size + 2, "ledger-io", stall_after_s=self.read_deadline_s)
            if deadlines
            else None
        )
        # Events that guard no body (a kept result's decision) are written in batches off the call
        # path, where a commit of its own would cost most of the shaping (docs/design.md, "The ledger's
        # writes"). Any commit drains them first, in its own transaction, so event order follows call order.
        self._pending: list[tuple[LedgerEvent, float]] = []
        self._writing: list[list[tuple[LedgerEvent, float]]] = []
        """Queued events a commit has taken and not yet written (or given back)."""
        self._pending_lock = threading.Lock()
        self._wake = threading.Event()
        self._flusher: threading.Thread | None = None
        self._closed = False
        self._indexer = Indexer(self)

    # ---------------------------------------------------------------- opening

    @classmethod
    def open(
        cls,
        settings: LedgerSettings | None = None,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        connect_now: bool = False,
        deadlines: bool = False,
    ) -> Ledger:
        """Open (creating if needed) the ledger at the first of `path` (a file or a `postgresql://`
        URL), OFFLOAD_MCP_LEDGER, `settings.url`, `settings.path`, the XDG default.

        A SQLite file that exists but cannot be written opens read-only (recall still works, every
        commit fails with the cause); `read_only=True` asks for that. Raises LedgerUnavailable when
        the ledger cannot be opened at all. A PostgreSQL ledger connects in the background (a
        proxy's start never waits on it) unless `connect_now`, for one-off commands: an unreachable
        server is then this LedgerUnavailable, at once and with its reason.

        `deadlines`, for a serving proxy: every call waits on the database at most `busy_timeout_s`
        plus a little (`read_deadline_s`, `write_deadline_s`) and fails at once while it is stalled.
        """
        settings = settings or LedgerSettings()
        target = resolve(settings, path)
        backend: LedgerBackend
        if target.url is not None:
            if read_only:
                raise LedgerUnavailable(f"ledger {target.display}: read-only opening is for SQLite files")
            from .postgres import PostgresBackend

            backend = PostgresBackend.open(target.url, settings, connect_now=connect_now)
        else:
            assert target.path is not None
            backend = SqliteBackend.open(target.path, settings, read_only=read_only)
        ledger = cls(backend, settings, deadlines=deadlines)
        if isinstance(backend, SqliteBackend) and backend.writable and backend.searchable:
            # Entries queued before this process (a ledger from before the index, a process that exited
            # mid-queue) are indexed in the background from now on, not only when a search asks.
            try:
                if backend.search_queued():
                    ledger._indexer.wake()
            except LedgerError as err:
                log.warning("ledger %s: search queue not read: %s", ledger.location, err)
        if backend.writable and settings.max_age_days is not None:
            try:
                ledger.evict()
            except LedgerError as err:
                log.warning("ledger retention on open failed: %s", err)
        return ledger

    @property
    def path(self) -> Path | None:
        """The local file (SQLite), or None for a server-backed ledger."""
        return self.backend.path

    @property
    def location(self) -> str:
        """What names this ledger in logs and errors: the file, or the URL without its password."""
        return self.backend.location

    def for_client(self, err: BaseException) -> str:
        """`err` in words a client (the model's context) may see: this ledger named only as "the ledger",
        no password, host, port, user or database name (redaction.py)."""
        from ..redaction import ledger_for_client

        return ledger_for_client(str(err), self.location)

    @property
    def writable(self) -> bool:
        return self.backend.writable

    @property
    def scope(self) -> Scope:
        return self.settings.scope

    def reachable(self, deadline_s: float | None = None) -> tuple[bool, str]:
        """Whether the ledger answers now (within `deadline_s`, default `read_deadline_s`), and why not
        (for health checks: a stalled database is unreachable at once)."""
        try:
            return self._read(self.backend.reachable, "health check", deadline_s)
        except LedgerUnavailable as err:
            return False, str(err)

    def integrity(self) -> str:
        """ "ok" when the storage is sound, else what is wrong (SQLite's integrity check)."""
        return self.backend.integrity()

    @property
    def read_deadline_s(self) -> float:
        """How long a read waits on the database before it fails (with `deadlines`)."""
        return max(self.settings.busy_timeout_s, _MIN_WAIT_S) + _DEADLINE_SLACK_S

    def write_deadline_s(self, stored_bytes: int = 0) -> float:
        """How long a write of `stored_bytes` waits on the database before it fails (with `deadlines`)."""
        return self.read_deadline_s + stored_bytes / _WRITE_BYTES_PER_S

    def stalled(self) -> str | None:
        """Why the database counts as stalled now (a call is past its deadline), or None."""
        if self._runner is None:
            return None
        late = self._runner.stalled_for()
        return None if late is None else f"ledger {self.location}: no answer for {late:.1f}s"

    def _read(self, fn: Callable[[], _T], what: str, deadline_s: float | None = None) -> _T:
        if self._runner is None:
            return fn()
        return self._runner.run(
            fn,
            deadline_s=self.read_deadline_s if deadline_s is None else deadline_s,
            error=LedgerUnavailable,
            what=f"ledger {self.location}: {what}",
        )

    def _write(
        self, fn: Callable[[], _T], what: str, stored_bytes: int = 0, on_abandoned: Callable[[], None] | None = None
    ) -> _T:
        if self._runner is None:
            return fn()
        return self._runner.run(
            fn,
            deadline_s=self.write_deadline_s(stored_bytes),
            error=LedgerWriteError,
            what=f"ledger {self.location}: {what}",
            on_abandoned=on_abandoned,
        )

    @property
    def sqlite(self) -> SqliteBackend:
        """The SQLite backend, for file-level checks (WAL mode, checkpoint, size cap); TypeError otherwise."""
        if not isinstance(self.backend, SqliteBackend):
            raise TypeError(f"ledger {self.location} is not a SQLite file")
        return self.backend

    def close(self) -> None:
        self._closed = True
        self._indexer.close()
        self._wake.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join(timeout=5)
        self.flush_quietly()
        if self._runner is not None:
            self._runner.close()
        self.backend.close()

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
                log.warning("ledger %s: event queue full, oldest statistics event dropped", self.location)
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
        except LedgerError as err:
            log.warning("ledger %s: queued statistics events not written: %s", self.location, err)

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
                    log.warning("ledger %s: statistics events wait in memory: %s", self.location, err)
                failing = True

    def _take_pending(self) -> list[tuple[LedgerEvent, float]]:
        with self._pending_lock:
            taken, self._pending = self._pending, []
            self._writing.append(taken)
        return taken

    def _settled(self, taken: list[tuple[LedgerEvent, float]]) -> None:
        with self._pending_lock:
            self._writing = [batch for batch in self._writing if batch is not taken]

    def _unwritten(self) -> list[tuple[LedgerEvent, float]]:
        """Events queued or being written: what a read that does not flush first adds from memory."""
        with self._pending_lock:
            return [*self._pending, *(item for batch in self._writing for item in batch)]

    def _requeue(self, taken: list[tuple[LedgerEvent, float]]) -> None:
        with self._pending_lock:
            self._pending[:0] = taken[-_MAX_PENDING_EVENTS:]

    # ---------------------------------------------------------------- writing

    def commit(
        self,
        bodies: Sequence[BodyRecord] = (),
        stash: Mapping[str, str] | None = None,
        events: Sequence[LedgerEvent] = (),
        owner: str | None = None,
    ) -> None:
        """Write bodies, stash entries and events in one transaction, or raise LedgerWriteError.

        `bodies` and `events` are read more than once: any iterable given is taken whole first,
        so a generator cannot silently drop the rows that record who made each call.
        `owner` is the caller's ownership key (`principal:<name>` under scope `principal`,
        upstream/identity.py); without it the bodies' and events' sessions own what this commit hands out.
        """
        bodies = tuple(bodies)
        events = tuple(events)
        stash = dict(stash or {})
        now = time.time()
        body_rows = []
        for b in bodies:
            packed = b.packed()
            body_rows.append(
                BodyRow(
                    b.trm_id,
                    b.server,
                    b.tool,
                    canonical_json(dict(b.arguments)).decode(),
                    b.session_id,
                    packed,
                    codec.CODEC,
                    len(b.body_json),
                    len(packed),
                    b.chars,
                    now,
                    now,
                )
            )
        stash_rows = [
            StashRow(h, codec.compress(text.encode("utf-8", "surrogatepass")), codec.CODEC, len(text), now, now)
            for h, text in stash.items()
        ]
        call_rows = [CallRow(b.trm_id, owner or b.session_id, b.server, b.tool, now) for b in bodies]
        queued = self._take_pending()
        event_rows = [_event_row(e, at) for e, at in queued] + [_event_row(e, now) for e in events]
        # Who was shown each marker: the caller's owner key, else the sessions of this commit's bodies and events.
        owners = (
            [owner]
            if owner
            else sorted({b.session_id for b in bodies} | {e.session_id for e in events if e.session_id})
        )
        owner_rows = [(h, owner) for h in stash for owner in owners]
        rows = CommitRows(body_rows, stash_rows, call_rows, owner_rows, event_rows)

        def write() -> None:
            # The queued events go back to the queue only when this write fails, which its caller may no
            # longer be waiting to hear (a write past its deadline can still commit them).
            try:
                self.backend.write(rows)
            except LedgerError:
                self._requeue(queued)
                raise
            finally:
                self._settled(queued)

        def abandoned() -> None:
            self._requeue(queued)
            self._settled(queued)

        stored = sum(r.stored_bytes for r in body_rows) + sum(len(r.original) for r in stash_rows)
        self._write(write, "commit", stored, on_abandoned=abandoned)
        if (body_rows or stash_rows) and getattr(self.backend, "searchable", False):
            self._indexer.wake()
        if (body_rows or stash_rows) and self.settings.max_total_bytes is not None:
            try:
                self.evict()
            except LedgerError as err:
                log.warning("ledger retention failed: %s", err)

    def record_event(self, event: LedgerEvent) -> None:
        self.commit(events=[event])

    def record_recall(
        self, session_id: str, trm_id: str, *, ok: bool, chars_out: int = 0, detail: Mapping[str, Any] | None = None
    ) -> None:
        self._record_retrieval("recall", session_id, trm_id, ok=ok, chars_out=chars_out, detail=detail)

    def record_expand(
        self, session_id: str, cg_hash: str, *, ok: bool, chars_out: int = 0, detail: Mapping[str, Any] | None = None
    ) -> None:
        self._record_retrieval("expand", session_id, cg_hash, ok=ok, chars_out=chars_out, detail=detail)

    def _record_retrieval(
        self,
        kind: Literal["recall", "expand"],
        session_id: str,
        ref_id: str,
        *,
        ok: bool,
        chars_out: int,
        detail: Mapping[str, Any] | None,
    ) -> None:
        verdict = "ok" if ok else "error"
        event = LedgerEvent(
            kind, session_id=session_id, verdict=verdict, ref_id=ref_id, chars_out=chars_out, detail=detail or {}
        )
        self.commit(events=[event])

    # ---------------------------------------------------------------- reading

    def get_body_json(self, trm_id: str, *, session_id: str | None = None) -> bytes:
        """The stored CallToolResult JSON bytes; raises UnknownId / Evicted (LedgerUnavailable when unreachable,
        LedgerCorrupt when the stored bytes cannot be read back or are not the body the id names)."""
        stored = self._read(lambda: self._owned("body", trm_id, session_id), f"reading {trm_id}")
        raw = self._unpacked(trm_id, stored.data, stored.codec)
        if not is_body_of(trm_id, raw):
            raise LedgerCorrupt(f"ledger {self.location}: the stored body of {trm_id} does not match its id (damaged)")
        return raw

    def get_body(self, trm_id: str, *, session_id: str | None = None) -> dict[str, Any]:
        """The stored CallToolResult as a JSON object; raises UnknownId / Evicted (LedgerCorrupt when not JSON)."""
        try:
            body: dict[str, Any] = orjson.loads(self.get_body_json(trm_id, session_id=session_id))
        except orjson.JSONDecodeError as err:
            raise LedgerCorrupt(f"ledger {self.location}: the stored body of {trm_id} is not JSON ({err})") from None
        return body

    def body_info(self, trm_id: str) -> BodyInfo:
        def read() -> BodyInfo:
            info = self.backend.body_info(trm_id)
            if info is None:
                self._raise_missing(trm_id)
            return info

        return self._read(read, f"reading {trm_id}")

    def get_stash(self, cg_hash: str, *, session_id: str | None = None) -> str:
        """The original text a `<<cg:HASH>>` marker replaced; raises UnknownId / Evicted.

        With scope `session` (or `principal`) and a `session_id` (the caller's ownership key), only an
        owner that was shown the marker may read it.
        """
        stored = self._read(lambda: self._owned("stash", cg_hash, session_id), f"reading <<cg:{cg_hash}>>")
        raw = self._unpacked(f"<<cg:{cg_hash}>>", stored.data, stored.codec)
        if not is_original_of(cg_hash, raw):
            raise LedgerCorrupt(
                f"ledger {self.location}: the stored original of <<cg:{cg_hash}>> does not match its hash (damaged)"
            )
        try:
            return raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as err:
            raise LedgerCorrupt(
                f"ledger {self.location}: the stored original of <<cg:{cg_hash}>> is not text ({err})"
            ) from None

    def _unpacked(self, what: str, data: bytes, codec_name: str) -> bytes:
        try:
            return codec.decompress(data, codec_name)
        except codec.Undecompressable as err:
            raise LedgerCorrupt(
                f"ledger {self.location}: the stored copy of {what} does not decompress ({err})"
            ) from None

    def has_body(self, trm_id: str) -> bool:
        return self._read(lambda: self.backend.read_body(trm_id), f"reading {trm_id}") is not None

    def events(self, since: float | None = None, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Recorded events, oldest first, as dicts (`detail` decoded)."""
        self.flush_quietly()
        rows = self._read(lambda: self.backend.events(since or 0.0, list(kinds or [])), "reading events")
        cols = (
            "id",
            "at",
            "kind",
            "session_id",
            "server",
            "tool",
            "verdict",
            "reason",
            "ref_id",
            "chars_in",
            "chars_out",
            "detail",
        )
        for row in rows:
            item = dict(zip(cols, row, strict=True))
            item["detail"] = orjson.loads(item["detail"]) if item["detail"] else {}
            yield item

    def events_in_order(
        self, since: float | None, kinds: Sequence[str], owner: str | None = None, page_rows: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Recorded events in (at, id) order, as `events()` has them but with `detail` left as its JSON text
        (a reader parses only what it needs), read page by page so that only one page is held at a time.
        `owner` (an ownership key): only the events whose detail names it."""
        self.flush_quietly()
        cols = EVENT_COLUMNS
        page_rows = page_rows or EVENT_PAGE_ROWS
        after: tuple[float, int] | None = None
        while True:

            def page(after: tuple[float, int] | None = after) -> list[tuple[Any, ...]]:
                return self.backend.events_page(since or 0.0, list(kinds), owner, after, page_rows)

            rows = self._read(page, "reading events")
            for row in rows:
                yield dict(zip(cols, row, strict=True))
            if len(rows) < page_rows:
                return
            after = (float(rows[-1][1]), int(rows[-1][0]))

    def session_calls(self, since: float | None, kinds: Sequence[str], owner: str | None = None) -> dict[str, int]:
        """How many of these events each session holds (GROUP BY in the database)."""
        self.flush_quietly()
        return self._read(lambda: self.backend.session_calls(since or 0.0, list(kinds), owner), "reading events")

    def session_spans(
        self, since: float | None, kinds: Sequence[str], owner: str | None = None
    ) -> dict[str, SessionSpan]:
        """Each session's count of these events and the times of its first and last (GROUP BY in the database)."""
        self.flush_quietly()
        return self._read(lambda: self.backend.session_spans(since or 0.0, list(kinds), owner), "reading events")

    def recorded_before(self, after_id: int, before_at: float) -> bool:
        """Whether an event written after id `after_id` carries a time before `before_at`."""
        self.flush_quietly()
        return self._read(lambda: self.backend.recorded_before(after_id, before_at), "reading events")

    def read_checkpoint(self, scope: str) -> CheckpointRow | None:
        """The stats checkpoint stored for `scope` (analysis/stats_checkpoint.py), if any."""
        return self._read(lambda: self.backend.read_checkpoint(scope), "reading the stats checkpoint")

    def write_checkpoint(self, row: CheckpointRow) -> None:
        """Store a stats checkpoint; one that read fewer events than the stored one is not written."""
        self._write(lambda: self.backend.write_checkpoint(row), "writing the stats checkpoint", len(row.state))

    def call_counts(self, since: float | None = None) -> dict[tuple[str, str], int]:
        """How often each (server, downstream tool) was called since a time: for hot-tool learning.

        With `deadlines` the queued events are counted from memory instead of flushed first (a write
        would wait on a locked events table) and the read waits at most CALL_COUNTS_DEADLINE_S."""
        since = since or 0.0
        if self._runner is None:
            self.flush_quietly()
            return self.backend.call_counts(since)
        deadline = min(CALL_COUNTS_DEADLINE_S, self.read_deadline_s)
        counts = Counter(self._read(lambda: self.backend.call_counts(since), "reading call counts", deadline))
        for event, at in self._unwritten():
            if event.kind == "decision" and at >= since:
                counts[(event.server, event.tool)] += 1
        return dict(counts)

    def events_mark(self) -> tuple[int, int]:
        """(lowest, highest event id): it changes whenever an event is written (ids only grow) or the oldest
        are removed, on every replica alike, so a view computed from the events can be kept until it does
        (the dashboard's cache)."""
        self.flush_quietly()
        return self._read(self.backend.events_mark, "reading the events mark")

    def counts(self) -> dict[str, int]:
        """Row counts and stored bytes, for stats and health."""
        self.flush_quietly()
        return self._read(lambda: self.backend.counts().as_dict(), "reading counts")

    # ---------------------------------------------------------------- search (store/search.py)

    def index_queued(self, budget_s: float, max_entries: int | None = None) -> tuple[int, int]:
        """Index entries stored but not yet indexed (see store/search.py); returns (indexed now, still queued)."""
        if not getattr(self.backend, "searchable", False) or not self.writable:
            return 0, self.search_queued()
        index: Any = self.backend
        done, left = index.index_queued(budget_s, max_entries)
        return int(done), int(left)

    def search_queued(self) -> int:
        """Entries stored but not yet indexed (0 when the backend has no search index)."""
        if not getattr(self.backend, "searchable", False):
            return 0
        index: Any = self.backend
        return int(index.search_queued())

    def search(self, terms: list[str], *, owner: str | None, limit: int) -> SearchPage:
        """The best `limit` stored bodies and originals holding `terms` that `owner` (the caller's ownership
        key) may read, after indexing what is queued for up to INDEX_BUDGET_S. Every term first; when no
        entry holds them all, any of them (the page says which). Raises SearchRefused."""
        if not getattr(self.backend, "searchable", False):
            raise SearchRefused(
                "the ledger has no search index"
                + ("" if self.writable else " (it is read-only, and was last written by a version without search)")
            )
        index: Any = self.backend
        scoped = owner if self.scope in OWNED_SCOPES else None

        def run() -> SearchPage:
            queued = self.index_queued(INDEX_BUDGET_S)[1] if self.writable else self.search_queued()
            hits = index.search(terms, every_term=True, owner=scoped, limit=limit)
            every = True
            if not hits and len(terms) > 1:
                hits, every = index.search(terms, every_term=False, owner=scoped, limit=limit), False
            return SearchPage(list(hits), queued, every)

        # The indexing budget and the query's own time limit come on top of the usual wait for the database.
        return self._read(run, "searching", deadline_s=self.read_deadline_s + INDEX_BUDGET_S + SEARCH_TIME_LIMIT_S)

    # ---------------------------------------------------------------- retention

    def evict(self, now: float | None = None) -> list[str]:
        """Apply max_age_days and max_total_bytes (least recently used first); return evicted ids."""
        if self.settings.max_age_days is None and self.settings.max_total_bytes is None:
            return []
        at = time.time() if now is None else now
        return self._write(lambda: retention.evict(self.backend, self.settings, at), "retention")

    def set_last_used(self, id_: str, at: float) -> None:
        """Set when a body (`trm_` id) or stash entry (hash) was last used: ages entries for
        retention tests and maintenance; reads only ever move it forward."""
        kind: EntryKind = "body" if id_.startswith("trm_") else "stash"
        self._write(lambda: self.backend.set_last_used(kind, id_, at), f"setting the last use of {id_}")

    # ---------------------------------------------------------------- internals

    def _owned(self, kind: EntryKind, id_: str, session_id: str | None) -> Stored:
        """The stored entry, checked against the caller's scope and touched; raises UnknownId / Evicted."""
        stored = self.backend.read_body(id_) if kind == "body" else self.backend.read_stash(id_)
        if stored is None:
            self._raise_missing(id_)
        if self.scope in OWNED_SCOPES and session_id is not None and not self.backend.seen_by(kind, id_, session_id):
            shown = id_ if kind == "body" else f"<<cg:{id_}>>"
            raise UnknownId(id_, f"{shown} belongs to another {self.scope} (ledger scope is `{self.scope}`)")
        self._touch(kind, id_)
        return stored

    def _raise_missing(self, id_: str) -> NoReturn:
        tomb = self.backend.tombstone_of(id_)
        if tomb is not None:
            raise Evicted(id_, tomb.evicted_at, tomb.reason)
        raise UnknownId(id_)

    def _touch(self, kind: EntryKind, id_: str) -> None:
        if self.writable:
            now = time.time()
            self.backend.touch(kind, id_, now, now - _TOUCH_EVERY_S)


def _event_row(e: LedgerEvent, at: float) -> EventRow:
    detail = canonical_json(dict(e.detail)).decode() if e.detail else ""
    return EventRow(
        at, e.kind, e.session_id, e.server, e.tool, e.verdict, e.reason, e.ref_id, e.chars_in, e.chars_out, detail
    )


# Re-exported: callers imported these from `store.ledger` before the split.
__all__ = [
    "BodyInfo",
    "BodyRecord",
    "Evicted",
    "Ledger",
    "LedgerCorrupt",
    "LedgerError",
    "LedgerEvent",
    "LedgerUnavailable",
    "LedgerWriteError",
    "UnknownId",
    "canonical_json",
    "default_ledger_path",
    "trm_id_for",
]
