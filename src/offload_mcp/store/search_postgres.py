"""The search index in a PostgreSQL ledger, shared by every replica: pg_trgm over the stored text.

Tables (schema version 2, store/schema.py): `search_queue` (entries stored but not yet indexed,
written in the offload's own transaction) and `search_docs` (each indexed entry's text, with a GIN
trigram index). Each term is matched as a substring, case-insensitively (`ILIKE '%term%'`, its `%`,
`_` and `\\` escaped, so user text is never a pattern), which the trigram index answers for terms of
3 characters or more; PostgreSQL's word-based `tsvector` would miss an identifier inside a longer
token (`pool.py` in `src/pool.py`). Replicas share the queue: each takes the oldest entry no other
replica holds (`FOR UPDATE SKIP LOCKED`). Ranking: the entries holding the most terms, then the
shortest (a value in a short result says more about it), then by id.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .interfaces import CommitRows
from .search import SEARCH_TIME_LIMIT_S, SearchHit, SearchRefused, entry_text


class PostgresConnections(Protocol):
    """The connections of postgres.py's backend that the index uses (a protocol: postgres.py imports this module)."""

    def _transaction(self) -> AbstractContextManager[Any]: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Any: ...


SEARCH_SCHEMA_VERSION = 2
_BUSY_WAIT_S = 0.01


def queue(cur: Any, rows: CommitRows) -> None:
    """Queue this commit's bodies and stash entries (inside its transaction), in id order like its other writes."""
    entries = sorted([(b.id, "body") for b in rows.bodies] + [(s.hash, "stash") for s in rows.stash])
    if entries:
        cur.executemany(
            "INSERT INTO search_queue (ref, kind) SELECT %s, %s"
            " WHERE NOT EXISTS (SELECT 1 FROM search_docs WHERE ref = %s) ON CONFLICT DO NOTHING",
            [(ref, kind, ref) for ref, kind in entries],
        )


def forget(conn: Any, ref: str) -> None:
    """An evicted entry's indexed text goes with it (a tombstone keeps only why it went)."""
    conn.execute("DELETE FROM search_docs WHERE ref = %s", (ref,))


def index_queued(backend: PostgresConnections, budget_s: float, max_entries: int | None) -> tuple[int, int]:
    """Index queued entries, one per transaction, until none is left, `max_entries` are done or
    `budget_s` has passed (at least one is done). Returns (indexed now, still queued)."""
    deadline = time.monotonic() + budget_s
    done = 0
    while True:
        with backend._transaction() as conn:
            row = conn.execute(
                "SELECT seq, ref, kind FROM search_queue ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED"
            ).fetchone()
            if row is None:
                busy = conn.execute("SELECT count(*) FROM search_queue").fetchone()[0]
            else:
                _index(conn, *row)
        if row is None:
            # What is left is being indexed by another thread or replica: wait for it within the budget.
            if busy and time.monotonic() < deadline:
                time.sleep(_BUSY_WAIT_S)
                continue
            break
        done += 1
        if (max_entries is not None and done >= max_entries) or time.monotonic() >= deadline:
            break
    return done, queued(backend)


def _index(conn: Any, seq: int, ref: str, kind: str) -> None:
    if kind == "body":
        stored = conn.execute("SELECT body, codec FROM bodies WHERE id = %s", (ref,)).fetchone()
    else:
        stored = conn.execute("SELECT original, codec FROM stash WHERE hash = %s", (ref,)).fetchone()
    text = None if stored is None else entry_text(bytes(stored[0]), stored[1], kind)
    if text is not None:
        conn.execute(
            "INSERT INTO search_docs (ref, kind, chars, text) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (ref, kind, len(text), text),
        )
    conn.execute("DELETE FROM search_queue WHERE seq = %s", (seq,))


def queued(backend: PostgresConnections) -> int:
    row = backend._one("SELECT count(*) FROM search_queue", ())
    return int(row[0]) if row else 0


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def search(
    backend: PostgresConnections, terms: list[str], *, every_term: bool, owner: str | None, limit: int
) -> list[SearchHit]:
    """The best `limit` live entries holding every term (or any), that `owner` may read (None: any)."""
    import psycopg.errors

    held = " + ".join(["(d.text ILIKE %s)::int"] * len(terms))
    where = (" AND " if every_term else " OR ").join(["d.text ILIKE %s"] * len(terms))
    sql = (
        f"SELECT d.ref, d.kind, coalesce(b.tool, ''), coalesce(b.created_at, s.created_at), {held} AS held"
        " FROM search_docs d LEFT JOIN bodies b ON d.kind = 'body' AND b.id = d.ref"
        " LEFT JOIN stash s ON d.kind = 'stash' AND s.hash = d.ref"
        f" WHERE ({where}) AND (b.id IS NOT NULL OR s.hash IS NOT NULL)"
    )
    patterns = [_like(t) for t in terms]
    params: list[Any] = patterns + patterns
    if owner is not None:
        sql += (
            " AND CASE d.kind WHEN 'body' THEN EXISTS (SELECT 1 FROM calls c WHERE c.trm_id = d.ref AND c.session_id = %s)"
            " ELSE EXISTS (SELECT 1 FROM stash_owners o WHERE o.hash = d.ref AND o.session_id = %s) END"
        )
        params += [owner, owner]
    sql += " ORDER BY held DESC, d.chars, d.ref LIMIT %s"
    params.append(limit)
    try:
        with backend._transaction() as conn:
            # 0 would turn the limit off: at least 1 ms.
            conn.execute(f"SET LOCAL statement_timeout = '{max(int(SEARCH_TIME_LIMIT_S * 1000), 1)}ms'")
            rows = conn.execute(sql, params).fetchall()
    except Exception as err:
        if isinstance(err.__context__, psycopg.errors.QueryCanceled) or "statement timeout" in str(err):
            raise SearchRefused(
                f"the search took longer than {SEARCH_TIME_LIMIT_S:g} s (its terms occur in too many stored "
                "results); search for something more distinctive"
            ) from None
        raise
    return [SearchHit(ref, kind, tool, float(at)) for ref, kind, tool, at, _held in rows]
