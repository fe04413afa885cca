"""The ledger's schema in each backend, and how an older ledger is brought up to date.

SQLite: tables created if missing, columns added since ledgers were first written filled with
what their old rows imply (`schema_version` recorded in `meta`). PostgreSQL: numbered steps in
`POSTGRES_MIGRATIONS`, applied in order inside one transaction under an advisory lock (replicas
starting together do not race), the version recorded in `offload_meta`; a ledger newer than this
code is refused with the reason rather than written wrongly. Both hold the same rows.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from .codec import LEGACY_CODEC
from .errors import LedgerUnavailable

log = logging.getLogger(__name__)

SQLITE_SCHEMA_VERSION = 1
_ADDED_COLUMNS = {("bodies", "codec"): LEGACY_CODEC, ("stash", "codec"): LEGACY_CODEC}


_SQLITE_TABLES: dict[str, tuple[dict[str, type], str | tuple[str, ...]]] = {
    "meta": ({"key": str, "value": str}, "key"),
    "bodies": (
        {
            "id": str,
            "server": str,
            "tool": str,
            "arguments": str,
            "session_id": str,
            "body": bytes,
            "codec": str,
            "raw_bytes": int,
            "stored_bytes": int,
            "chars": int,
            "created_at": float,
            "last_used_at": float,
        },
        "id",
    ),
    "stash": (
        {"hash": str, "original": bytes, "codec": str, "chars": int, "created_at": float, "last_used_at": float},
        "hash",
    ),
    "calls": ({"trm_id": str, "session_id": str, "server": str, "tool": str, "at": float}, ("trm_id", "session_id")),
    "stash_owners": ({"hash": str, "session_id": str}, ("hash", "session_id")),
    "tombstones": ({"id": str, "kind": str, "evicted_at": float, "reason": str}, "id"),
    "events": (
        {
            "id": int,
            "at": float,
            "kind": str,
            "session_id": str,
            "server": str,
            "tool": str,
            "verdict": str,
            "reason": str,
            "ref_id": str,
            "chars_in": int,
            "chars_out": int,
            "detail": str,
        },
        "id",
    ),
    "stats_checkpoints": (
        {"scope": str, "through_at": float, "through_id": int, "low_id": int, "state": str, "written_at": float},
        "scope",
    ),
}
"""Each table's columns and primary key, as sqlite-utils creates them."""
_SQLITE_INDEXES = (
    ("bodies", ("last_used_at",)),
    ("stash", ("last_used_at",)),
    ("events", ("at",)),
    ("events", ("kind", "at")),
)


def sqlite_schema_is_current(conn: sqlite3.Connection) -> bool:
    """Whether `ensure_sqlite_schema` has nothing to create: every table with every column, every index
    and the version row are there. Read with plain queries, so a process opening a ledger seen before
    never imports sqlite-utils, which imports numpy when it is installed (docs/design.md, "The
    ledger's writes")."""
    for table, (columns, _pk) in _SQLITE_TABLES.items():
        if not columns.keys() <= {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            return False
    for table, wanted in _SQLITE_INDEXES:
        indexed = {
            tuple(row[2] for row in conn.execute(f"PRAGMA index_info({_quoted(index[1])})"))
            for index in conn.execute(f"PRAGMA index_list({table})")
        }
        if wanted not in indexed:
            return False
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return row is not None and row[0] == str(SQLITE_SCHEMA_VERSION)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def ensure_sqlite_schema(conn: sqlite3.Connection) -> None:
    """Create what is missing (tables, columns added since, indexes), then write the version row.

    That last write changes nothing on a ledger seen before, but it is a write either way: a file
    that cannot be written fails here, at open, and the backend opens it read-only with the cause."""
    if not sqlite_schema_is_current(conn):
        _create_missing(conn)
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", [str(SQLITE_SCHEMA_VERSION)])


def _create_missing(conn: sqlite3.Connection) -> None:
    import sqlite_utils  # only here: see sqlite_schema_is_current

    db = sqlite_utils.Database(conn)
    for table, (columns, pk) in _SQLITE_TABLES.items():
        db.table(table).create(columns, pk=pk, if_not_exists=True)
    # Columns added after ledgers were first written, filled with what their old rows imply:
    # before `codec` existed every body and stash entry was zlib-compressed.
    for (table, column), default in _ADDED_COLUMNS.items():
        if column not in db.table(table).columns_dict:
            db.table(table).add_column(column, str, not_null_default=default)
    for table, index in _SQLITE_INDEXES:
        db.table(table).create_index(list(index), if_not_exists=True)


# ---- PostgreSQL ------------------------------------------------------------------------------

POSTGRES_SCHEMA_VERSION = 5
_MIGRATION_LOCK = 0x6F66_666C_6F61_64  # "offload": one key for pg_advisory_xact_lock

POSTGRES_MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "bodies, stash, calls, stash_owners, tombstones, events",
        (
            "CREATE TABLE IF NOT EXISTS bodies (id text PRIMARY KEY, server text NOT NULL, tool text NOT NULL, arguments text NOT NULL,"
            " session_id text NOT NULL, body bytea NOT NULL, codec text NOT NULL, raw_bytes bigint NOT NULL, stored_bytes bigint NOT NULL,"
            " chars bigint NOT NULL, created_at double precision NOT NULL, last_used_at double precision NOT NULL)",
            "CREATE TABLE IF NOT EXISTS stash (hash text PRIMARY KEY, original bytea NOT NULL, codec text NOT NULL, chars bigint NOT NULL,"
            " created_at double precision NOT NULL, last_used_at double precision NOT NULL)",
            "CREATE TABLE IF NOT EXISTS calls (trm_id text NOT NULL, session_id text NOT NULL, server text NOT NULL, tool text NOT NULL,"
            " at double precision NOT NULL, PRIMARY KEY (trm_id, session_id))",
            "CREATE TABLE IF NOT EXISTS stash_owners (hash text NOT NULL, session_id text NOT NULL, PRIMARY KEY (hash, session_id))",
            "CREATE TABLE IF NOT EXISTS tombstones (id text PRIMARY KEY, kind text NOT NULL, evicted_at double precision NOT NULL, reason text NOT NULL)",
            "CREATE TABLE IF NOT EXISTS events (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at double precision NOT NULL,"
            " kind text NOT NULL, session_id text NOT NULL, server text NOT NULL, tool text NOT NULL, verdict text NOT NULL,"
            " reason text NOT NULL, ref_id text NOT NULL, chars_in bigint NOT NULL, chars_out bigint NOT NULL, detail text NOT NULL)",
            "CREATE INDEX IF NOT EXISTS bodies_last_used ON bodies (last_used_at)",
            "CREATE INDEX IF NOT EXISTS stash_last_used ON stash (last_used_at)",
            "CREATE INDEX IF NOT EXISTS events_at ON events (at)",
            "CREATE INDEX IF NOT EXISTS events_kind_at ON events (kind, at)",
        ),
    ),
    (
        2,
        "search index: search_queue, search_docs with a pg_trgm GIN index; every stored entry queued",
        (
            "CREATE TABLE IF NOT EXISTS search_queue (seq bigint GENERATED BY DEFAULT AS IDENTITY, ref text PRIMARY KEY,"
            " kind text NOT NULL)",
            "CREATE TABLE IF NOT EXISTS search_docs (ref text PRIMARY KEY, kind text NOT NULL, chars bigint NOT NULL,"
            " text text NOT NULL)",
            # pg_trgm is a trusted extension (any user with CREATE on the database may add it); without it
            # searches still answer, by scanning. Its operator class is named by the schema it lives in,
            # which need not be on this ledger's search_path.
            "DO $$ DECLARE ns text; BEGIN"
            " BEGIN CREATE EXTENSION IF NOT EXISTS pg_trgm;"
            " EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN"
            " RAISE WARNING 'offload-mcp: pg_trgm is not available, so searches scan the stored text'; END;"
            " SELECT n.nspname INTO ns FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'pg_trgm';"
            " IF ns IS NOT NULL THEN EXECUTE format("
            "'CREATE INDEX IF NOT EXISTS search_docs_trgm ON search_docs USING gin (text %I.gin_trgm_ops)', ns);"
            " END IF; END $$",
            "INSERT INTO search_queue (ref, kind) SELECT id, 'body' FROM bodies ORDER BY id ON CONFLICT DO NOTHING",
            "INSERT INTO search_queue (ref, kind) SELECT hash, 'stash' FROM stash ORDER BY hash ON CONFLICT DO NOTHING",
        ),
    ),
    (
        3,
        "search by whole tokens: search_docs.tsv (to_tsvector('simple', text)) with a GIN index; indexed entries queued to fill it",
        (
            # NULL until the indexer fills it (or when the text has more distinct tokens than a tsvector holds,
            # 1 MB): such an entry is still searched, by substring (search_docs_untokenized lists them).
            "ALTER TABLE search_docs ADD COLUMN IF NOT EXISTS tsv tsvector",
            # fastupdate off: a GIN index's pending list (recent rows, until a vacuum) is read whole by every
            # search (docs/design.md, "Search"). Each entry is indexed off the call path, so its insert pays instead.
            "CREATE INDEX IF NOT EXISTS search_docs_tsv ON search_docs USING gin (tsv) WITH (fastupdate = off)",
            "DO $$ BEGIN IF to_regclass('search_docs_trgm') IS NOT NULL THEN"
            " ALTER INDEX search_docs_trgm SET (fastupdate = off);"
            " PERFORM gin_clean_pending_list(to_regclass('search_docs_trgm')); END IF; END $$",
            "CREATE INDEX IF NOT EXISTS search_docs_untokenized ON search_docs (ref) WHERE tsv IS NULL",
            "INSERT INTO search_queue (ref, kind) SELECT ref, kind FROM search_docs WHERE tsv IS NULL ORDER BY ref"
            " ON CONFLICT DO NOTHING",
        ),
    ),
    (
        4,
        "stats_checkpoints: the stats fold's state through a time, per scope (derived data; rebuilt when missing)",
        (
            "CREATE TABLE IF NOT EXISTS stats_checkpoints (scope text PRIMARY KEY, through_at double precision NOT NULL,"
            " through_id bigint NOT NULL, low_id bigint NOT NULL, state text NOT NULL, written_at double precision NOT NULL)",
        ),
    ),
    (
        5,
        "search in pieces: search_docs keyed by (ref, start), search_queue.next_offset; entries cut at 2M chars queued again",
        (
            "ALTER TABLE search_queue ADD COLUMN IF NOT EXISTS next_offset bigint NOT NULL DEFAULT 0",
            "ALTER TABLE search_docs ADD COLUMN IF NOT EXISTS start bigint NOT NULL DEFAULT 0",
            "ALTER TABLE search_docs DROP CONSTRAINT IF EXISTS search_docs_pkey, ADD PRIMARY KEY (ref, start)",
            "CREATE INDEX IF NOT EXISTS search_docs_pieces ON search_docs (ref) WHERE start > 0",
            "INSERT INTO search_queue (ref, kind) SELECT ref, kind FROM search_docs WHERE chars >= 2000000 ORDER BY ref"
            " ON CONFLICT DO NOTHING",
            "DELETE FROM search_docs WHERE chars >= 2000000",
        ),
    ),
)
"""Versioned schema steps, applied in order by `migrate`; append, never edit a released step."""


def migrate_postgres(conn: Any, location: str) -> None:
    """Bring the schema up to POSTGRES_SCHEMA_VERSION; `conn` is inside a transaction."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
    conn.execute("CREATE TABLE IF NOT EXISTS offload_meta (key text PRIMARY KEY, value text NOT NULL)")
    row = conn.execute("SELECT value FROM offload_meta WHERE key = 'schema_version'").fetchone()
    current = int(row[0]) if row else 0
    if current > POSTGRES_SCHEMA_VERSION:
        raise LedgerUnavailable(
            f"ledger {location} has schema version {current}, newer than this offload-mcp knows ({POSTGRES_SCHEMA_VERSION}): upgrade offload-mcp"
        )
    for version, what, steps in POSTGRES_MIGRATIONS:
        if version <= current:
            continue
        for sql in steps:
            conn.execute(sql)
        conn.execute(
            "INSERT INTO offload_meta (key, value) VALUES ('schema_version', %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(version),),
        )
        log.info("ledger %s: schema migrated to version %d (%s)", location, version, what)
