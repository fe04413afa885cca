"""The search index in a PostgreSQL ledger, shared by every replica: full-text search over whole
tokens, pg_trgm for substrings inside them.

Tables (store/schema.py): `search_queue` (entries stored but not yet indexed, written in the
offload's own transaction) and `search_docs` (each indexed entry's text; `tsv`, its
`to_tsvector('simple', text)` under a GIN index; and a pg_trgm GIN index on the text). Replicas
share the queue: each takes the oldest entry no other replica holds (`FOR UPDATE SKIP LOCKED`).

A search whose terms are all token-shaped (letters and digits joined by TOKEN_CHARS) is first
answered from `tsv`: each term becomes `phraseto_tsquery('simple', term)`, so it is split by the
same parser that split the stored text (LAPTOP-14-M3 is `laptop <-> -14 <-> m3` on both sides;
`trm_00ff...` is `trm <-> 00ff...`; 1,299.00 is `1 <-> 299.00`), user text is never tsquery syntax,
and the `simple` configuration keeps every word (no stop words, no stemming). Hits are ranked by
`ts_rank`, then the shortest, then by id. When no readable entry holds the terms as tokens (a
value inside a longer token: `pool.py` in `src/pool.py`, a sha's prefix), or a term is not
token-shaped, each term is matched as a substring, case-insensitively (`ILIKE '%term%'`, its `%`,
`_` and `\\` escaped, so user text is never a pattern), which the trigram index answers for terms of
3 characters or more; ranked by the terms held, then the shortest, then by id. An entry whose `tsv`
is NULL (queued to be filled after the migration to version 3, or with more distinct tokens than a
tsvector holds, 1 MB) is matched by substring in the token search too, so it is never missed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .interfaces import CommitRows
from .search import SEARCH_TIME_LIMIT_S, WHOLE_TOKEN, SearchHit, SearchRefused, entry_text


class PostgresConnections(Protocol):
    """The connections of postgres.py's backend that the index uses (a protocol: postgres.py imports this module)."""

    def _transaction(self) -> AbstractContextManager[Any]: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Any: ...


log = logging.getLogger(__name__)

SEARCH_SCHEMA_VERSION = 3
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
    if not _any_queued(backend):  # the usual case: one query, where a transaction takes four round trips
        return 0, 0
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
        _insert_doc(conn, ref, kind, text)
    conn.execute("DELETE FROM search_queue WHERE seq = %s", (seq,))


def _insert_doc(conn: Any, ref: str, kind: str, text: str) -> None:
    """Store an entry's text with its tokens, in one write (an update after the insert would leave a
    dead row in every index until vacuum). An entry indexed before schema version 3 (queued again
    for this) gets its tokens. A text with more distinct tokens than a tsvector holds is stored
    without: it is searched by substring."""
    import psycopg.errors

    try:
        with conn.transaction():  # a savepoint: the error leaves the rest of the transaction in place
            conn.execute(
                "INSERT INTO search_docs (ref, kind, chars, text, tsv)"
                " SELECT %s, %s, %s, t, to_tsvector('simple', t) FROM (SELECT %s::text AS t) AS entry"
                " ON CONFLICT (ref) DO UPDATE SET tsv = excluded.tsv WHERE search_docs.tsv IS NULL",
                (ref, kind, len(text), text),
            )
    except psycopg.errors.ProgramLimitExceeded as err:
        log.info("search index: %s is searched by substring only: %s", ref, str(err).splitlines()[0])
        conn.execute(
            "INSERT INTO search_docs (ref, kind, chars, text) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (ref, kind, len(text), text),
        )


def _any_queued(backend: Any) -> bool:
    row = backend._one("SELECT EXISTS (SELECT 1 FROM search_queue)", ())
    return bool(row and row[0])


def queued(backend: PostgresConnections) -> int:
    row = backend._one("SELECT count(*) FROM search_queue", ())
    return int(row[0]) if row else 0


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _tokenizable(term: str) -> bool:
    """Whether PostgreSQL's parser splits `term` as it split the same characters in a stored text:
    token-shaped, with a letter or digit (a term of punctuation alone has no lexeme, and an empty
    tsquery would drop out of the AND)."""
    return WHOLE_TOKEN.fullmatch(term) is not None and any(ch.isalnum() for ch in term)


def search(
    backend: PostgresConnections, terms: list[str], *, every_term: bool, owner: str | None, limit: int
) -> list[SearchHit]:
    """The best `limit` live entries holding every term (or any), that `owner` may read (None: any):
    those holding every term as whole tokens when some do (ranked by ts_rank), else by substring."""
    import psycopg.errors

    live = (
        " FROM search_docs d LEFT JOIN bodies b ON d.kind = 'body' AND b.id = d.ref"
        " LEFT JOIN stash s ON d.kind = 'stash' AND s.hash = d.ref"
        " WHERE (b.id IS NOT NULL OR s.hash IS NOT NULL)"
    )
    scope: list[Any] = []
    if owner is not None:
        live += (
            " AND CASE d.kind WHEN 'body' THEN EXISTS (SELECT 1 FROM calls c WHERE c.trm_id = d.ref AND c.session_id = %s)"
            " ELSE EXISTS (SELECT 1 FROM stash_owners o WHERE o.hash = d.ref AND o.session_id = %s) END"
        )
        scope = [owner, owner]
    columns = "SELECT d.ref, d.kind, coalesce(b.tool, ''), coalesce(b.created_at, s.created_at)"
    patterns = [_like(t) for t in terms]
    try:
        with backend._transaction() as conn:
            # 0 would turn the limit off: at least one millisecond.
            conn.execute(f"SET LOCAL statement_timeout = '{max(int(SEARCH_TIME_LIMIT_S * 1000), 1)}ms'")
            rows = []
            if every_term and all(_tokenizable(t) for t in terms):
                tsquery = "(" + " && ".join(["phraseto_tsquery('simple', %s)"] * len(terms)) + ")"
                substrings = " AND ".join(["d.text ILIKE %s"] * len(terms))
                sql = (
                    f"{columns}{live} AND (d.tsv @@ {tsquery} OR (d.tsv IS NULL AND {substrings}))"
                    f" ORDER BY ts_rank(coalesce(d.tsv, ''::tsvector), {tsquery}) DESC, d.chars, d.ref LIMIT %s"
                )
                rows = conn.execute(sql, [*scope, *terms, *patterns, *terms, limit]).fetchall()
            if not rows:
                held = " + ".join(["(d.text ILIKE %s)::int"] * len(terms))
                where = (" AND " if every_term else " OR ").join(["d.text ILIKE %s"] * len(terms))
                sql = f"{columns}, {held} AS held{live} AND ({where}) ORDER BY held DESC, d.chars, d.ref LIMIT %s"
                rows = [row[:4] for row in conn.execute(sql, [*patterns, *scope, *patterns, limit]).fetchall()]
    except Exception as err:
        if isinstance(err.__context__, psycopg.errors.QueryCanceled) or "statement timeout" in str(err):
            raise SearchRefused(
                f"the search took longer than {SEARCH_TIME_LIMIT_S:g} s (its terms occur in too many stored "
                "results); search for something more distinctive"
            ) from None
        raise
    return [SearchHit(ref, kind, tool, float(at)) for ref, kind, tool, at in rows]
