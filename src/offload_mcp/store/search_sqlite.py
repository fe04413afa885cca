"""The search index in a SQLite ledger: FTS5 with the trigram tokenizer, in the ledger file itself.

Tables (added beside the others; a ledger written before them gets them at open, with every body and
stash entry it already holds queued): `search_queue` (entries stored but not yet wholly indexed,
written in the offload's own transaction, with where the next piece starts), `search_docs` (each
indexed piece's entry id, kind and start, keyed by the FTS rowid), `search_fts` (trigrams: any
substring of 3 characters or more) and `search_tokens` (whole tokens, which a value's lookup finds in
constant time at any size); both contentless: the index only, the text stays compressed in
`bodies`/`stash`. An entry is indexed in pieces (store/search.py, `piece_bounds`), one transaction
each; a hit is an entry, its pieces merged.

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

import orjson

from .interfaces import CommitRows
from .search import (
    SEARCH_TIME_LIMIT_S,
    TOKEN_CHARS,
    WHOLE_TOKEN,
    SearchHit,
    SearchRefused,
    entry_text,
    fts_string,
    last_text,
    piece_bounds,
)


class SqliteConnections(Protocol):
    """The connections of sqlite.py's backend that the index uses (a protocol: sqlite.py imports this module)."""

    def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Any: ...


log = logging.getLogger(__name__)


_TABLES = (
    "CREATE TABLE IF NOT EXISTS search_queue (ref TEXT PRIMARY KEY, kind TEXT NOT NULL, next_offset INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS search_docs (id INTEGER PRIMARY KEY, ref TEXT NOT NULL, kind TEXT NOT NULL,"
    " start INTEGER NOT NULL DEFAULT 0)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(text, content='', tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_tokens USING fts5(text, content='', detail=none,"
    f" tokenize=\"unicode61 tokenchars '{TOKEN_CHARS}'\")",
)
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS search_docs_ref ON search_docs (ref)",
    # The entries of more than one piece: the only ones whose terms can lie in different rows.
    "CREATE INDEX IF NOT EXISTS search_docs_pieces ON search_docs (ref) WHERE start > 0",
)
OLD_INDEX_CAP = 2_000_000
"""Ledgers written before pieces indexed an entry's first this many characters only."""
RANK_BY_BM25_OVER = 200
"""Matches above which a search ranks by bm25 (see `search`)."""
_PROGRESS_STEPS = 20_000
"""SQLite VM steps between checks of a search's deadline (about a millisecond of work)."""


def search_ready(conn: sqlite3.Connection) -> bool:
    """Whether this ledger file has the search tables, in pieces (a ledger written before pieces is
    migrated when opened for writing, `ensure_search_schema`)."""
    return _tables_exist(conn) and _in_pieces(conn)


def _tables_exist(conn: sqlite3.Connection) -> bool:
    try:
        row = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('search_queue', 'search_fts', 'search_tokens')"
        ).fetchone()
    except sqlite3.Error:
        return False
    return bool(row and row[0] == 3)


def _in_pieces(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "next_offset" for row in conn.execute("PRAGMA table_info(search_queue)"))


def ensure_search_schema(conn: sqlite3.Connection) -> None:
    """Create the search tables if missing, queueing every entry already stored, in one transaction;
    move an index written before pieces to pieces (`_migrate_to_pieces`). A SQLite without FTS5's
    trigram tokenizer leaves the ledger without search (logged once)."""
    if search_ready(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _tables_exist(conn):  # another process may have created or migrated them while this one waited
            if not _in_pieces(conn):
                _migrate_to_pieces(conn)
        else:
            # The index is derived data: a partial one (some tables only) is rebuilt whole, never trusted.
            for table in ("search_queue", "search_docs", "search_fts", "search_tokens"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for sql in (*_TABLES, *_INDEXES):
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


def _migrate_to_pieces(conn: sqlite3.Connection) -> None:
    """An index written before pieces (one row per entry, `ref` unique, of its first OLD_INDEX_CAP
    characters only) becomes pieces: each row is its entry's first piece, and an entry that may have
    been cut (stored chars over half the old cap: its text view can be longer than its chars) is
    queued again, whole; its old rows leave `search_docs`, so they are never answered."""
    conn.execute("ALTER TABLE search_queue ADD COLUMN next_offset INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE search_docs RENAME TO search_docs_before_pieces")
    conn.execute(_TABLES[1])
    conn.execute(
        "INSERT INTO search_docs (id, ref, kind, start) SELECT id, ref, kind, 0 FROM search_docs_before_pieces ORDER BY id"
    )
    conn.execute("DROP TABLE search_docs_before_pieces")
    for sql in _INDEXES:
        conn.execute(sql)
    cut = OLD_INDEX_CAP // 2
    for kind, table, key in (("body", "bodies", "id"), ("stash", "stash", "hash")):
        long_ones = f"SELECT {key} FROM {table} WHERE chars >= ?"
        conn.execute(f"DELETE FROM search_docs WHERE kind = ? AND ref IN ({long_ones})", (kind, cut))
        conn.execute(
            f"INSERT OR IGNORE INTO search_queue (ref, kind) SELECT {key}, ? FROM {table} WHERE chars >= ? ORDER BY {key}",
            (kind, cut),
        )
    log.info("search index: moved to pieces; entries over %d chars are indexed again, whole", cut)


def queue(conn: sqlite3.Connection, rows: CommitRows) -> None:
    """Queue this commit's bodies and stash entries for indexing (inside the commit's transaction);
    an entry indexed before (the same content stored again) is not queued again."""
    entries = [(b.id, "body") for b in rows.bodies] + [(s.hash, "stash") for s in rows.stash]
    conn.executemany(
        "INSERT OR IGNORE INTO search_queue (ref, kind) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM search_docs WHERE ref = ?1)",
        entries,
    )


def forget(conn: sqlite3.Connection, ref: str) -> None:
    """An evicted entry's pieces go with it (their FTS rows stay, contentless, matched by no piece)."""
    try:
        conn.execute("DELETE FROM search_docs WHERE ref = ?", (ref,))
    except sqlite3.OperationalError as err:
        if "no such table" not in str(err):  # a ledger without search (no FTS5 trigram tokenizer)
            raise


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


def index_queued(backend: SqliteConnections, budget_s: float, max_pieces: int | None) -> tuple[int, int]:
    """Index queued entries, one piece per transaction (the connection is free between pieces, so a
    waiting commit or read goes first), until the queue is empty, `max_pieces` are done, or `budget_s`
    has passed (at least one is done). Returns (pieces indexed now, entries still queued)."""
    if not _any_queued(backend):  # the usual case: a read, not the write lock every search would wait for
        return 0, 0
    deadline = time.monotonic() + budget_s
    done = 0
    while index_one_piece(backend):
        done += 1
        if (max_pieces is not None and done >= max_pieces) or time.monotonic() >= deadline:
            break
    return done, queued(backend)


def index_one_piece(backend: SqliteConnections) -> bool:
    """Index the next piece of the oldest queued entry, in one transaction; False when none is queued.
    The entry's text is decoded before that transaction (a large body's decoding would hold the
    connection as long as a few pieces' indexing), once per entry (`last_text`). An entry leaves the
    queue with its last piece; one that cannot be read (gone, or damaged) leaves it with its pieces so
    far dropped from `search_docs`, so the same content stored again is queued again."""
    head = "SELECT rowid, ref, kind, next_offset FROM search_queue ORDER BY rowid LIMIT 1"
    with backend._reading() as conn:
        row = conn.execute(head).fetchone()
    if row is None:
        return False
    rowid, ref, kind, start = row
    text = last_text.get(kind, ref, lambda: _entry_text(backend, ref, kind))
    with backend._write() as conn:
        if conn.execute(head).fetchone() != row:
            return True  # another indexer moved the queue on meanwhile: read it again
        if text is None or not _stored(conn, ref, kind):  # the text kept from an earlier piece outlives an eviction
            last_text.forget(kind, ref)  # the same content stored again is read again
            conn.execute("DELETE FROM search_docs WHERE ref = ?", (ref,))
            conn.execute("DELETE FROM search_queue WHERE rowid = ?", (rowid,))
            return True
        end, following = piece_bounds(text, start)
        if not conn.execute("SELECT 1 FROM search_docs WHERE ref = ? AND start = ?", (ref, start)).fetchone():
            piece = text[start:end]
            doc = conn.execute(
                "INSERT INTO search_docs (ref, kind, start) VALUES (?, ?, ?)", (ref, kind, start)
            ).lastrowid
            conn.execute("INSERT INTO search_fts (rowid, text) VALUES (?, ?)", (doc, piece))
            conn.execute("INSERT INTO search_tokens (rowid, text) VALUES (?, ?)", (doc, piece))
        if end >= len(text):
            conn.execute("DELETE FROM search_queue WHERE rowid = ?", (rowid,))
            last_text.forget(kind, ref)
        else:
            conn.execute("UPDATE search_queue SET next_offset = ? WHERE rowid = ?", (following, rowid))
    return True


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


def _stored(conn: sqlite3.Connection, ref: str, kind: str) -> bool:
    sql = "SELECT 1 FROM bodies WHERE id = ?" if kind == "body" else "SELECT 1 FROM stash WHERE hash = ?"
    return conn.execute(sql, (ref,)).fetchone() is not None


def _entry_text(backend: SqliteConnections, ref: str, kind: str) -> str | None:
    """The entry's text: its stored bytes read under the connection's lock, decoded outside it."""
    if kind == "body":
        row = backend._one("SELECT body, codec FROM bodies WHERE id = ?", (ref,))
    else:
        row = backend._one("SELECT original, codec FROM stash WHERE hash = ?", (ref,))
    return None if row is None else entry_text(bytes(row[0]), row[1], kind)


def search(
    backend: SqliteConnections, terms: list[str], *, every_term: bool, owner: str | None, limit: int
) -> list[SearchHit]:
    """The best `limit` live entries holding every term (or any, `every_term=False`), that `owner` may
    read (None: any), best first, one hit per entry however many of its pieces match.

    Found two ways: when every term is one token (TOKEN_CHARS join them) and some readable entry holds each
    as a whole token, those entries (the token index); else the entries holding them anywhere, inside
    longer tokens too (the trigram index). An entry of several pieces holding the terms in different
    pieces is found too (`_across_pieces`). Ranked two ways, by how many pieces match. Up to
    RANK_BY_BM25_OVER (a distinctive value, the usual search): the shortest entries first, then by id,
    read from the matches alone. More: FTS5's bm25 of each entry's best piece, which first counts each
    term's matches over the whole index (far more than a distinctive value's matches; docs/design.md,
    "Search"), within the search's time limit."""
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
    columns = (
        "SELECT d.ref AS ref, d.kind AS kind, coalesce(b.tool, '') AS tool,"
        " coalesce(b.created_at, s.created_at) AS at, coalesce(b.chars, s.chars) AS size"
    )
    deadline = time.monotonic() + SEARCH_TIME_LIMIT_S
    with backend._reading() as conn:
        conn.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
        try:
            found: list[int] = []
            across = every_term and len(terms) > 1
            if every_term and all(WHOLE_TOKEN.fullmatch(t) for t in terms):
                # A value held as a whole token is found in the token index at any size, where the trigram
                # index reads each of its trigrams' lists (docs/design.md, "Search").
                found = _matching(conn, "search_tokens", match, terms if across else [])
                found = _live_in_scope(conn, found, live, scope) if found else []
            if not found:
                found = _matching(conn, "search_fts", match, terms if across else [])
            if len(found) <= RANK_BY_BM25_OVER:
                marks = ",".join("?" * len(found))
                sql = f"{columns}{live} AND d.id IN ({marks}) GROUP BY d.ref ORDER BY size, d.ref LIMIT ?"
                rows = conn.execute(sql, [*scope, *found, limit]).fetchall() if found else []
            else:
                by_piece = live.replace(
                    " FROM search_docs d", " FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid", 1
                )
                # Materialized: bm25 can only be computed in the MATCH's own query, not in the grouping.
                sql = (
                    f"WITH scored AS MATERIALIZED ({columns}, bm25(search_fts) AS score{by_piece} AND search_fts MATCH ?)"
                    " SELECT ref, kind, tool, at, size FROM scored GROUP BY ref ORDER BY min(score), ref LIMIT ?"
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
    return [SearchHit(ref, kind, tool, float(at)) for ref, kind, tool, at, _size in rows]


def _matching(conn: sqlite3.Connection, table: str, match: str, across: list[str]) -> list[int]:
    """The rowids (pieces) of `table` matching `match`, at most RANK_BY_BM25_OVER + 1; with `across`
    (the terms, when all must be held), also a piece of each entry holding them in different pieces."""
    found = [
        row[0]
        for row in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?", (match, RANK_BY_BM25_OVER + 1)
        )
    ]
    if across and len(found) <= RANK_BY_BM25_OVER:
        found += [doc for doc in _across_pieces(conn, table, across) if doc not in found]
    return found


def _across_pieces(conn: sqlite3.Connection, table: str, terms: list[str]) -> list[int]:
    """A piece of each entry of several pieces that holds every term in some piece of it. Only such
    entries' pieces are looked up (each term's match checked against their rowids), so this costs
    nothing on a ledger of small entries."""
    pieces = conn.execute(
        "SELECT d.id, d.ref FROM search_docs d WHERE d.ref IN (SELECT ref FROM search_docs WHERE start > 0)"
    ).fetchall()
    if not pieces:
        return []
    entry_of = dict(pieces)
    ids = orjson.dumps(list(entry_of)).decode()
    held: dict[str, int] = {}
    first: dict[str, int] = {}
    for term in terms:
        holding = {
            entry_of[row[0]]: row[0]
            for row in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
                (fts_string(term), ids),
            )
        }
        for ref, doc in holding.items():
            held[ref] = held.get(ref, 0) + 1
            first.setdefault(ref, doc)
    return sorted(first[ref] for ref, count in held.items() if count == len(terms))
