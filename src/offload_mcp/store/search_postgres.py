"""The search index in a PostgreSQL ledger, shared by every replica: full-text search over whole
tokens, pg_trgm for substrings inside them.

Tables (store/schema.py): `search_queue` (entries stored but not yet wholly indexed, written in the
offload's own transaction, with where the next piece starts) and `search_docs` (each indexed piece's
text, keyed by its entry's id and its start; `tsv`, its `to_tsvector('simple', text)` under a GIN
index; and a pg_trgm GIN index on the text). An entry is indexed in pieces (store/search.py,
`piece_bounds`), one transaction each; a hit is an entry, its pieces merged, ranked by its best
piece's `ts_rank`. Replicas share the queue: each takes the oldest entry no other replica holds
(`FOR UPDATE SKIP LOCKED`) and indexes its next piece.

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
from .search import SEARCH_TIME_LIMIT_S, WHOLE_TOKEN, SearchHit, SearchRefused, entry_text, last_text, piece_bounds


class PostgresConnections(Protocol):
    """The connections of postgres.py's backend that the index uses (a protocol: postgres.py imports this module)."""

    def _transaction(self) -> AbstractContextManager[Any]: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Any: ...


log = logging.getLogger(__name__)

SEARCH_SCHEMA_VERSION = 5
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


def index_queued(backend: PostgresConnections, budget_s: float, max_pieces: int | None) -> tuple[int, int]:
    """Index queued entries, one piece per transaction, until none is left, `max_pieces` are done or
    `budget_s` has passed (at least one is done). Returns (pieces indexed now, entries still queued)."""
    if not _any_queued(backend):  # the usual case: one query, where a transaction takes four round trips
        return 0, 0
    deadline = time.monotonic() + budget_s
    done = 0
    while True:
        with backend._transaction() as conn:
            row = conn.execute(
                "SELECT seq, ref, kind, next_offset FROM search_queue ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED"
            ).fetchone()
            if row is None:
                busy = conn.execute("SELECT count(*) FROM search_queue").fetchone()[0]
            else:
                _index_piece(conn, *row)
        if row is None:
            # What is left is being indexed by another thread or replica: wait for it within the budget.
            if busy and time.monotonic() < deadline:
                time.sleep(_BUSY_WAIT_S)
                continue
            break
        done += 1
        if (max_pieces is not None and done >= max_pieces) or time.monotonic() >= deadline:
            break
    return done, queued(backend)


def _index_piece(conn: Any, seq: int, ref: str, kind: str, start: int) -> None:
    """The entry's piece at `start`; the entry leaves the queue with its last piece. One that cannot be
    read leaves it with its pieces so far dropped, so the same content stored again is queued again."""
    text = last_text.get(kind, ref, lambda: _entry_text(conn, ref, kind))
    if text is None or not _stored(conn, ref, kind):  # the text kept from an earlier piece outlives an eviction
        last_text.forget(kind, ref)  # the same content stored again is read again
        conn.execute("DELETE FROM search_docs WHERE ref = %s", (ref,))
        conn.execute("DELETE FROM search_queue WHERE seq = %s", (seq,))
        return
    end, following = piece_bounds(text, start)
    _insert_doc(conn, ref, kind, start, text[start:end])
    if end >= len(text):
        conn.execute("DELETE FROM search_queue WHERE seq = %s", (seq,))
        last_text.forget(kind, ref)
    else:
        conn.execute("UPDATE search_queue SET next_offset = %s WHERE seq = %s", (following, seq))


def _stored(conn: Any, ref: str, kind: str) -> bool:
    sql = "SELECT 1 FROM bodies WHERE id = %s" if kind == "body" else "SELECT 1 FROM stash WHERE hash = %s"
    return conn.execute(sql, (ref,)).fetchone() is not None


def _entry_text(conn: Any, ref: str, kind: str) -> str | None:
    if kind == "body":
        stored = conn.execute("SELECT body, codec FROM bodies WHERE id = %s", (ref,)).fetchone()
    else:
        stored = conn.execute("SELECT original, codec FROM stash WHERE hash = %s", (ref,)).fetchone()
    return None if stored is None else entry_text(bytes(stored[0]), stored[1], kind)


def _insert_doc(conn: Any, ref: str, kind: str, start: int, text: str) -> None:
    """Store a piece's text with its tokens, in one write (an update after the insert would leave a
    dead row in every index until vacuum). A piece indexed before (an entry indexed before schema
    version 3, queued again to get its tokens) gets its text and tokens. A text with more distinct
    tokens than a tsvector holds is stored without: it is searched by substring."""
    import psycopg.errors

    try:
        with conn.transaction():  # a savepoint: the error leaves the rest of the transaction in place
            conn.execute(
                "INSERT INTO search_docs (ref, kind, start, chars, text, tsv)"
                " SELECT %s, %s, %s, %s, t, to_tsvector('simple', t) FROM (SELECT %s::text AS t) AS entry"
                " ON CONFLICT (ref, start) DO UPDATE SET chars = excluded.chars, text = excluded.text, tsv = excluded.tsv"
                " WHERE search_docs.tsv IS NULL OR search_docs.chars <> excluded.chars",
                (ref, kind, start, len(text), text),
            )
    except psycopg.errors.ProgramLimitExceeded as err:
        log.info("search index: %s is searched by substring only: %s", ref, str(err).splitlines()[0])
        conn.execute(
            "INSERT INTO search_docs (ref, kind, start, chars, text) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (ref, kind, start, len(text), text),
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
    """The best `limit` live entries holding every term (or any), that `owner` may read (None: any),
    one hit per entry however many of its pieces match: those holding every term as whole tokens when
    some do (ranked by their best piece's ts_rank), else by substring. An entry of several pieces
    holding the terms in different pieces is found too (`_across_pieces`)."""
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
    query = _EntryQuery(live, scope, terms, every_term, limit)
    try:
        with backend._transaction() as conn:
            # 0 would turn the limit off: at least one millisecond.
            conn.execute(f"SET LOCAL statement_timeout = '{max(int(SEARCH_TIME_LIMIT_S * 1000), 1)}ms'")
            rows = []
            if every_term and all(_tokenizable(t) for t in terms):
                rows = query.run(conn, by_tokens=True)
            if not rows:
                rows = query.run(conn, by_tokens=False)
    except Exception as err:
        if isinstance(err.__context__, psycopg.errors.QueryCanceled) or "statement timeout" in str(err):
            raise SearchRefused(
                f"the search took longer than {SEARCH_TIME_LIMIT_S:g} s (its terms occur in too many stored "
                "results); search for something more distinctive"
            ) from None
        raise
    return [SearchHit(ref, kind, tool, float(at)) for ref, kind, tool, at, *_ in rows]


_ENTRY = "SELECT d.ref, d.kind, coalesce(b.tool, ''), coalesce(b.created_at, s.created_at), coalesce(b.chars, s.chars)"
_BY_ENTRY = " GROUP BY d.ref, d.kind, b.tool, b.created_at, s.created_at, b.chars, s.chars"
_MULTI_PIECE = " AND d.ref IN (SELECT ref FROM search_docs WHERE start > 0)"


class _EntryQuery:
    """One search's SQL, by whole tokens or by substring: the entries whose pieces match, grouped, each
    with its score (column 6: the best piece's ts_rank, or how many terms it holds) and its size."""

    def __init__(self, live: str, scope: list[Any], terms: list[str], every_term: bool, limit: int) -> None:
        self.live, self.scope, self.terms, self.every_term, self.limit = live, scope, terms, every_term, limit
        self.patterns = [_like(t) for t in terms]

    def run(self, conn: Any, *, by_tokens: bool) -> list[Any]:
        """The best `limit` entries, merged from the pieces holding the terms together and, when every
        term must be held, the entries holding them across pieces (`_across_pieces`)."""
        rows: list[Any] = conn.execute(*self._together(by_tokens)).fetchall()
        if self.every_term and len(self.terms) > 1:
            seen = {row[0] for row in rows}
            rows += [row for row in conn.execute(*self._across_pieces(by_tokens)).fetchall() if row[0] not in seen]
            rows.sort(key=lambda row: (-row[5], row[4], row[0]))
        return rows[: self.limit]

    def _term_held(self, by_tokens: bool) -> tuple[list[str], list[Any]]:
        """Per term, the SQL of "this piece holds it", and each one's parameters in order."""
        if by_tokens:
            one = "(d.tsv @@ phraseto_tsquery('simple', %s) OR (d.tsv IS NULL AND d.text ILIKE %s))"
            return [one] * len(self.terms), [p for pair in zip(self.terms, self.patterns, strict=True) for p in pair]
        return ["d.text ILIKE %s"] * len(self.terms), list(self.patterns)

    def _score(self, by_tokens: bool) -> tuple[str, list[Any]]:
        if by_tokens:
            tsquery = "(" + " && ".join(["phraseto_tsquery('simple', %s)"] * len(self.terms)) + ")"
            return f"max(ts_rank(coalesce(d.tsv, ''::tsvector), {tsquery}))", list(self.terms)
        return " + ".join(["bool_or(d.text ILIKE %s)::int"] * len(self.terms)), list(self.patterns)

    def _together(self, by_tokens: bool) -> tuple[str, list[Any]]:
        """The entries with a piece holding every term (or any), scored and ordered."""
        score, score_params = self._score(by_tokens)
        held, held_params = self._term_held(by_tokens)
        where = (" AND " if self.every_term else " OR ").join(held)
        sql = f"{_ENTRY}, {score}{self.live} AND ({where}){_BY_ENTRY} ORDER BY 6 DESC, 5, 1 LIMIT %s"
        return sql, [*score_params, *self.scope, *held_params, self.limit]

    def _across_pieces(self, by_tokens: bool) -> tuple[str, list[Any]]:
        """The entries of several pieces holding every term, some in one piece and some in another
        (only such entries' pieces are read: the partial index search_docs_pieces lists them)."""
        score, score_params = self._score(by_tokens)
        held, held_params = self._term_held(by_tokens)
        every = " AND ".join(f"bool_or({one})" for one in held)
        sql = (
            f"{_ENTRY}, {score}{self.live}{_MULTI_PIECE} AND ({' OR '.join(held)}){_BY_ENTRY}"
            f" HAVING {every} ORDER BY 6 DESC, 5, 1 LIMIT %s"
        )
        return sql, [*score_params, *self.scope, *held_params, *held_params, self.limit]
