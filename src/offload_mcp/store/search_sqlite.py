"""The search index in a SQLite ledger: FTS5 with the trigram tokenizer, in the ledger file itself.

Tables (added beside the others; a ledger written before them gets them at open, with every body and
stash entry it already holds queued): `search_queue` (entries stored but not yet indexed, written in
the offload's own transaction), `search_docs` (each indexed entry's id and kind, keyed by the FTS
rowid), `search_fts` (trigrams: any substring of 3 characters or more) and `search_tokens` (whole
tokens, which a value's lookup finds in constant time at any size); both contentless: the index
only, the text stays compressed in `bodies`/`stash`.

Contentless rows cannot be deleted on this SQLite (3.40, no `contentless_delete`), so an evicted
entry's index rows stay behind: a search joins them to the live `bodies` and `stash` rows, so they
are never answered; storing the same content again (same id) finds them valid again.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .interfaces import CommitRows
from .search import SEARCH_TIME_LIMIT_S, TOKEN_CHARS, WHOLE_TOKEN, SearchHit, SearchRefused, entry_text, fts_string


class SqliteConnections(Protocol):
    """The connections of sqlite.py's backend that the index uses (a protocol: sqlite.py imports this module)."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Any: ...


log = logging.getLogger(__name__)


_TABLES = (
    "CREATE TABLE IF NOT EXISTS search_queue (ref TEXT PRIMARY KEY, kind TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS search_docs (id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, kind TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(text, content='', tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_tokens USING fts5(text, content='', detail=none,"
    f" tokenize=\"unicode61 tokenchars '{TOKEN_CHARS}'\")",
)
RANK_BY_BM25_OVER = 200
"""Matches above which a search ranks by bm25 (see `search`)."""
_PROGRESS_STEPS = 20_000
"""SQLite VM steps between checks of a search's deadline (about a millisecond of work)."""


def search_ready(conn: sqlite3.Connection) -> bool:
    """Whether this ledger file has the search tables."""
    try:
        row = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('search_queue', 'search_fts', 'search_tokens')"
        ).fetchone()
    except sqlite3.Error:
        return False
    return bool(row and row[0] == 3)


def ensure_search_schema(conn: sqlite3.Connection) -> None:
    """Create the search tables if missing, queueing every entry already stored, in one transaction.
    A SQLite without FTS5's trigram tokenizer leaves the ledger without search (logged once)."""
    if search_ready(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not search_ready(conn):  # another process may have created them while this one waited
            # The index is derived data: a partial one (some tables only) is rebuilt whole, never trusted.
            for table in ("search_queue", "search_docs", "search_fts", "search_tokens"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for sql in _TABLES:
                conn.execute(sql)
            conn.execute("INSERT OR IGNORE INTO search_queue (ref, kind) SELECT id, 'body' FROM bodies ORDER BY id")
            conn.execute("INSERT OR IGNORE INTO search_queue (ref, kind) SELECT hash, 'stash' FROM stash ORDER BY hash")
        conn.execute("COMMIT")
    except sqlite3.OperationalError as err:
        conn.execute("ROLLBACK")
        if "trigram" in str(err) or "fts5" in str(err):
            log.warning(
                "SQLite %s has no FTS5 trigram tokenizer: this ledger cannot be searched", sqlite3.sqlite_version
            )
            return
        raise


def queue(conn: sqlite3.Connection, rows: CommitRows) -> None:
    """Queue this commit's bodies and stash entries for indexing (inside the commit's transaction);
    an entry indexed before (the same content stored again) is not queued again."""
    entries = [(b.id, "body") for b in rows.bodies] + [(s.hash, "stash") for s in rows.stash]
    conn.executemany(
        "INSERT OR IGNORE INTO search_queue (ref, kind) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM search_docs WHERE ref = ?1)",
        entries,
    )


def queue_unindexed(conn: sqlite3.Connection) -> None:
    """Queue every stored entry the index lacks (rows merged in from another copy of the file)."""
    if not search_ready(conn):
        return
    conn.execute(
        "INSERT OR IGNORE INTO search_queue (ref, kind)"
        " SELECT id, 'body' FROM bodies WHERE id NOT IN (SELECT ref FROM search_docs) ORDER BY id"
    )
    conn.execute(
        "INSERT OR IGNORE INTO search_queue (ref, kind)"
        " SELECT hash, 'stash' FROM stash WHERE hash NOT IN (SELECT ref FROM search_docs) ORDER BY hash"
    )


def index_queued(backend: SqliteConnections, budget_s: float, max_entries: int | None) -> tuple[int, int]:
    """Index queued entries, one per transaction, until the queue is empty, `max_entries` are done,
    or `budget_s` has passed (at least one is done). Returns (indexed now, still queued)."""
    if not _any_queued(backend):  # the usual case: a read, not the write lock every search would wait for
        return 0, 0
    deadline = time.monotonic() + budget_s
    done = 0
    while True:
        with backend._write() as conn:
            row = conn.execute("SELECT rowid, ref, kind FROM search_queue ORDER BY rowid LIMIT 1").fetchone()
            if row is None:
                return done, 0
            rowid, ref, kind = row
            if conn.execute("SELECT 1 FROM search_docs WHERE ref = ?", (ref,)).fetchone() is None:
                text = _entry_text(conn, ref, kind)
                if text is not None:
                    doc = conn.execute("INSERT INTO search_docs (ref, kind) VALUES (?, ?)", (ref, kind)).lastrowid
                    conn.execute("INSERT INTO search_fts (rowid, text) VALUES (?, ?)", (doc, text))
                    conn.execute("INSERT INTO search_tokens (rowid, text) VALUES (?, ?)", (doc, text))
            conn.execute("DELETE FROM search_queue WHERE rowid = ?", (rowid,))
        done += 1
        if (max_entries is not None and done >= max_entries) or time.monotonic() >= deadline:
            break
    return done, queued(backend)


def _live_in_scope(conn: sqlite3.Connection, found: list[int], live: str, scope: list[Any]) -> list[int]:
    """The entries of `found` still stored and readable by the caller (a token hit elsewhere does not
    stop the substring search)."""
    marks = ",".join("?" * len(found))
    return [row[0] for row in conn.execute(f"SELECT d.id{live} AND d.id IN ({marks})", [*scope, *found])]


def _any_queued(backend: SqliteConnections) -> bool:
    row = backend._one("SELECT EXISTS (SELECT 1 FROM search_queue)", ())
    return bool(row and row[0])


def queued(backend: SqliteConnections) -> int:
    row = backend._one("SELECT count(*) FROM search_queue", ())
    return int(row[0]) if row else 0


def _entry_text(conn: sqlite3.Connection, ref: str, kind: str) -> str | None:
    if kind == "body":
        row = conn.execute("SELECT body, codec FROM bodies WHERE id = ?", (ref,)).fetchone()
    else:
        row = conn.execute("SELECT original, codec FROM stash WHERE hash = ?", (ref,)).fetchone()
    return None if row is None else entry_text(bytes(row[0]), row[1], kind)


def search(
    backend: SqliteConnections, terms: list[str], *, every_term: bool, owner: str | None, limit: int
) -> list[SearchHit]:
    """The best `limit` live entries holding every term (or any, `every_term=False`), that `owner` may
    read (None: any), best first.

    Found two ways: when every term is one token (TOKEN_CHARS join them) and some readable entry holds each
    as a whole token, those entries (the token index); else the entries holding them anywhere, inside
    longer tokens too (the trigram index). Ranked two ways, by how many entries match. Up to RANK_BY_BM25_OVER (a distinctive value, the usual
    search): the shortest entries first, then by id, read from the matches alone. More: FTS5's bm25,
    which first counts each term's matches over the whole index (far more than a distinctive value's
    matches; docs/design.md, "Search"), within the search's time limit."""
    match = (" AND " if every_term else " OR ").join(fts_string(t) for t in terms)
    live = (
        " FROM search_docs d LEFT JOIN bodies b ON d.kind = 'body' AND b.id = d.ref"
        " LEFT JOIN stash s ON d.kind = 'stash' AND s.hash = d.ref"
        " WHERE (b.id IS NOT NULL OR s.hash IS NOT NULL)"
    )
    scope: list[Any] = []
    if owner is not None:
        live += (
            " AND CASE d.kind WHEN 'body' THEN EXISTS (SELECT 1 FROM calls c WHERE c.trm_id = d.ref AND c.session_id = ?)"
            " ELSE EXISTS (SELECT 1 FROM stash_owners o WHERE o.hash = d.ref AND o.session_id = ?) END"
        )
        scope = [owner, owner]
    columns = "SELECT d.ref, d.kind, coalesce(b.tool, ''), coalesce(b.created_at, s.created_at)"
    deadline = time.monotonic() + SEARCH_TIME_LIMIT_S
    with backend._reading() as conn:
        conn.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
        try:
            found: list[int] = []
            if every_term and all(WHOLE_TOKEN.fullmatch(t) for t in terms):
                # A value held as a whole token is found in the token index at any size, where the trigram
                # index reads each of its trigrams' lists (docs/design.md, "Search").
                tokens = "SELECT rowid FROM search_tokens WHERE search_tokens MATCH ? LIMIT ?"
                found = [row[0] for row in conn.execute(tokens, (match, RANK_BY_BM25_OVER + 1))]
                found = _live_in_scope(conn, found, live, scope) if found else []
            if not found:
                trigrams = "SELECT rowid FROM search_fts WHERE search_fts MATCH ? LIMIT ?"
                found = [row[0] for row in conn.execute(trigrams, (match, RANK_BY_BM25_OVER + 1))]
            if len(found) <= RANK_BY_BM25_OVER:
                marks = ",".join("?" * len(found))
                sql = f"{columns}{live} AND d.id IN ({marks}) ORDER BY coalesce(b.chars, s.chars), d.ref LIMIT ?"
                rows = conn.execute(sql, [*scope, *found, limit]).fetchall() if found else []
            else:
                sql = (
                    f"{columns}{live.replace(' FROM search_docs d', ' FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid', 1)}"
                    " AND search_fts MATCH ? ORDER BY bm25(search_fts), d.ref LIMIT ?"
                )
                rows = conn.execute(sql, [*scope, match, limit]).fetchall()
        except sqlite3.OperationalError as err:
            if "interrupted" in str(err):
                raise SearchRefused(
                    f"the search took longer than {SEARCH_TIME_LIMIT_S:g} s (its terms occur in too many stored "
                    "results); search for something more distinctive"
                ) from None
            raise
        finally:
            conn.set_progress_handler(None, 0)
    return [SearchHit(ref, kind, tool, float(at)) for ref, kind, tool, at in rows]
