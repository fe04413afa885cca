"""The ledger's queries, written once for both SQL backends: the reads, and the writes both share.

The SQLite and PostgreSQL schemas are the same tables and columns (store/schema.py), so every
read is the same SQL; only the parameter style differs. The queries here use SQLite's `?`;
`PostgresBackend` translates it to psycopg's `%s` in its `_one`/`_all`. Values are normalised
the way both drivers need: PostgreSQL returns `bytea` as memoryview and aggregates as Decimal
(for SQLite, `bytes()` and `int()` of a bytes or int value are the value itself).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from .interfaces import Counts, Entry, EntryKind, Stored, Tombstone
from .records import BodyInfo, CheckpointRow, SessionSpan

INSERT_BODY = (
    "INSERT INTO bodies (id, server, tool, arguments, session_id, body, codec, raw_bytes, stored_bytes, chars,"
    " created_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET last_used_at = excluded.last_used_at"
)
"""A `BodyRow` (its `values()`); a body stored again only refreshes its last use."""

INSERT_STASH = (
    "INSERT INTO stash (hash, original, codec, chars, created_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (hash) DO UPDATE SET last_used_at = excluded.last_used_at"
)
"""A `StashRow` (its `values()`); an original stashed again only refreshes its last use."""

INSERT_EVENT = (
    "INSERT INTO events (at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
"""An `EventRow` (its `values()`)."""

WRITE_CHECKPOINT = (
    "INSERT INTO stats_checkpoints (scope, through_at, through_id, low_id, state, written_at) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (scope) DO UPDATE SET through_at = excluded.through_at, through_id = excluded.through_id,"
    " low_id = excluded.low_id, state = excluded.state, written_at = excluded.written_at"
    " WHERE excluded.through_id >= stats_checkpoints.through_id"
)
"""A `CheckpointRow` (its `values()`): replicas sharing a ledger share it; the one that read more events wins."""

TABLES: dict[EntryKind, tuple[str, str]] = {"body": ("bodies", "id"), "stash": ("stash", "hash")}
"""Each entry kind's table and key column."""


class SqlReads:
    """The reading half of a SQL backend; the backend supplies `_one` and `_all`."""

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        raise NotImplementedError

    def _all(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def read_body(self, trm_id: str) -> Stored | None:
        row = self._one("SELECT body, codec FROM bodies WHERE id = ?", (trm_id,))
        return None if row is None else Stored(bytes(row[0]), row[1])

    def read_stash(self, cg_hash: str) -> Stored | None:
        row = self._one("SELECT original, codec FROM stash WHERE hash = ?", (cg_hash,))
        return None if row is None else Stored(bytes(row[0]), row[1])

    def seen_by(self, kind: EntryKind, id_: str, session_id: str) -> bool:
        if kind == "body":
            sql = "SELECT 1 FROM calls WHERE trm_id = ? AND session_id = ? LIMIT 1"
        else:
            sql = "SELECT 1 FROM stash_owners WHERE hash = ? AND session_id = ? LIMIT 1"
        return self._one(sql, (id_, session_id)) is not None

    def tombstone_of(self, id_: str) -> Tombstone | None:
        row = self._one("SELECT evicted_at, reason FROM tombstones WHERE id = ?", (id_,))
        return None if row is None else Tombstone(row[0], row[1])

    def body_info(self, trm_id: str) -> BodyInfo | None:
        row = self._one(
            "SELECT id, server, tool, arguments, session_id, raw_bytes, stored_bytes, chars, created_at, last_used_at"
            " FROM bodies WHERE id = ?",
            (trm_id,),
        )
        if row is None:
            return None
        return BodyInfo(row[0], row[1], row[2], orjson.loads(row[3]), row[4], row[5], row[6], row[7], row[8], row[9])

    def events(self, since: float, kinds: Sequence[str]) -> list[tuple[Any, ...]]:
        sql = (
            "SELECT id, at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail"
            " FROM events WHERE at >= ?"
        )
        params: list[Any] = [since]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += list(kinds)
        return self._all(sql + " ORDER BY id", params)

    def events_page(
        self, since: float, kinds: Sequence[str], owner: str | None, after: tuple[float, int] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` events in (at, id) order after `after` (keyset paging: each page one range of the
        index on `at`, which holds the id beside it). The kinds are matched as `kind || ''` so that neither
        planner picks the (kind, at) index instead: its rows would be sorted afresh for every page."""
        sql, params = self._events_where(since, kinds, owner, kind_column="kind || ''")
        if after is not None:
            sql += " AND at >= ? AND (at > ? OR id > ?)"
            params += [after[0], after[0], after[1]]
        columns = "id, at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail"
        return self._all(f"SELECT {columns} FROM events WHERE {sql} ORDER BY at, id LIMIT ?", [*params, limit])

    def session_calls(self, since: float, kinds: Sequence[str], owner: str | None) -> dict[str, int]:
        """How many of these events each session holds: with it a report reads each event once, in order."""
        sql, params = self._events_where(since, kinds, owner)
        rows = self._all(f"SELECT session_id, count(*) FROM events WHERE {sql} GROUP BY session_id", params)
        return {str(session): int(n) for session, n in rows}

    def session_spans(self, since: float, kinds: Sequence[str], owner: str | None) -> dict[str, SessionSpan]:
        """Each session's count of these events and the times of its first and last (one GROUP BY)."""
        sql, params = self._events_where(since, kinds, owner)
        rows = self._all(
            f"SELECT session_id, count(*), min(at), max(at) FROM events WHERE {sql} GROUP BY session_id", params
        )
        return {str(session): SessionSpan(int(n), float(first), float(last)) for session, n, first, last in rows}

    def recorded_before(self, after_id: int, before_at: float) -> bool:
        """Whether an event with an id above `after_id` carries a time before `before_at`: a range of the
        primary key, only the events written since. `at + 0` keeps either planner off the index on `at`,
        where nearly every older event matches the time and each would be read to test its id."""
        sql = "SELECT 1 FROM events WHERE id > ? AND at + 0 < ? ORDER BY id LIMIT 1"
        return self._one(sql, (after_id, before_at)) is not None

    def read_checkpoint(self, scope: str) -> CheckpointRow | None:
        row = self._one(
            "SELECT scope, through_at, through_id, low_id, state, written_at FROM stats_checkpoints WHERE scope = ?",
            (scope,),
        )
        return (
            None
            if row is None
            else CheckpointRow(row[0], float(row[1]), int(row[2]), int(row[3]), row[4], float(row[5]))
        )

    OWNER_OF_DETAIL = "CASE WHEN json_valid(detail) THEN json_extract(detail, '$.owner') END"
    """The `owner` in an event's detail (JSON text); the PostgreSQL backend names its own."""

    def _events_where(
        self, since: float, kinds: Sequence[str], owner: str | None, kind_column: str = "kind"
    ) -> tuple[str, list[Any]]:
        sql, params = "at >= ?", list[Any]([since])
        if kinds:
            sql += f" AND {kind_column} IN ({','.join('?' * len(kinds))})"
            params += list(kinds)
        if owner is not None:
            sql += f" AND {self.OWNER_OF_DETAIL} = ?"
            params.append(owner)
        return sql, params

    def call_counts(self, since: float) -> dict[tuple[str, str], int]:
        rows = self._all(
            "SELECT server, tool, count(*) FROM events WHERE kind = 'decision' AND at >= ? GROUP BY server, tool",
            (since,),
        )
        return {(server, tool): int(n) for server, tool, n in rows}

    def events_mark(self) -> tuple[int, int]:
        # Both ends of the primary key: an index probe each on both backends, however many events there are.
        # (SQLite probes the index for a lone min() or max() only, hence two subqueries.)
        row = self._one(
            "SELECT coalesce((SELECT min(id) FROM events), 0), coalesce((SELECT max(id) FROM events), 0)", ()
        )
        return int(row[0]), int(row[1])

    def counts(self) -> Counts:
        row = self._one(
            "SELECT (SELECT count(*) FROM bodies), (SELECT coalesce(sum(stored_bytes), 0) FROM bodies),"
            " (SELECT count(*) FROM stash), (SELECT count(*) FROM tombstones)",
            (),
        )
        return Counts(int(row[0]), int(row[1]), int(row[2]), int(row[3]))

    def stored_total(self) -> int:
        row = self._one(
            "SELECT (SELECT coalesce(sum(stored_bytes), 0) FROM bodies)"
            " + (SELECT coalesce(sum(length(original)), 0) FROM stash)",
            (),
        )
        return int(row[0])

    def unused_since(self, cutoff: float) -> list[Entry]:
        rows = self._all(
            "SELECT 'body', id, stored_bytes, last_used_at FROM bodies WHERE last_used_at < ?"
            " UNION ALL SELECT 'stash', hash, length(original), last_used_at FROM stash WHERE last_used_at < ?",
            (cutoff, cutoff),
        )
        return [Entry(kind, id_, int(size), used) for kind, id_, size, used in rows]

    def by_recency(self) -> Iterator[Entry]:
        rows = self._all(
            "SELECT 'body', id, stored_bytes, last_used_at FROM bodies"
            " UNION ALL SELECT 'stash', hash, length(original), last_used_at FROM stash ORDER BY 4, 2",
            (),
        )
        for kind, id_, size, used in rows:
            yield Entry(kind, id_, int(size), used)
