"""Search indexes an entry whole, in pieces, one transaction each (issue 42).

Against real ledgers (a SQLite file; a schema in the PostgreSQL the tests start, tests/support/pg.py):
a value held only near the end of a 5 MB body is found, with its line number in the whole body; a
term crossing the cut of a run with no separator is found; terms held in different pieces of one
entry find it once; a commit arriving while a large body is indexed goes through between two of its
pieces; an evicted entry leaves no pieces; a ledger indexed before pieces is migrated and its
entries cut at 2,000,000 characters are indexed again, whole.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.session import SessionMemory
from offload_mcp.store import BodyRecord, Ledger, search_sqlite
from offload_mcp.store import search as search_module
from offload_mcp.store.settings import LedgerSettings
from offload_mcp.tools import recall
from offload_mcp.tools.registry import ToolEnv
from support.proxy import text_of

HIT = re.compile(r"^\d+\. (trm_[0-9a-f]{16}) ", re.M)
ROWS = 120_000
"""Lines of the large body: about 5 MB."""


def body(text: str, tool: str = "listing") -> BodyRecord:
    return BodyRecord.of(
        {"content": [{"type": "text", "text": text}]},
        server="srv",
        tool=tool,
        arguments={},
        session_id="s1",
        chars=len(text),
    )


def large_text(last_line: str) -> str:
    rows = "\n".join(f"row {i:06d}: status ok, region eu-west, count {i * 3}" for i in range(ROWS))
    return "first line names HEADMARK-0001\n" + rows + "\n" + last_line + "\n"


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "l.db")


async def search(ledger: Ledger, query: str) -> str:
    env = ToolEnv(
        settings=OffloadSettings.model_validate({}), ledger=ledger, session_id="s1", session=SessionMemory(), owner=None
    )
    result = await recall.handle({"query": query}, env)
    assert not result.is_error, text_of(result)
    return text_of(result)


def piece_starts(ledger: Ledger, ref: str) -> list[int]:
    """The starts of `ref`'s indexed pieces, read from the index's own table."""
    backend: Any = ledger.backend
    if ledger.location.startswith("postgresql"):
        with backend._transaction() as conn:
            rows = conn.execute("SELECT start FROM search_docs WHERE ref = %s ORDER BY start", (ref,)).fetchall()
    else:
        with backend._reading() as conn:
            rows = conn.execute("SELECT start FROM search_docs WHERE ref = ? ORDER BY start", (ref,)).fetchall()
    return [int(row[0]) for row in rows]


def test_pieces_cut_after_a_separator_and_overlap_a_run_without_one() -> None:
    text = large_text("tail")
    cuts = search_module.pieces(text)
    assert len(cuts) > 10 and all(end - start <= search_module.PIECE_CHARS for start, end in cuts)
    # Cut after a line break: the pieces joined are the text, and no line is split.
    assert "".join(text[start:end] for start, end in cuts) == text
    assert all(text[end - 1] == "\n" for _, end in cuts)
    # One huge token: cut where a piece is full, the next starting PIECE_OVERLAP before the cut.
    run = "A" * (search_module.PIECE_CHARS * 2)
    (s0, e0), (s1, _e1), *_ = search_module.pieces(run)
    assert (s0, e0) == (0, search_module.PIECE_CHARS) and s1 == e0 - search_module.PIECE_OVERLAP
    # The same text gives the same pieces (the index is byte-stable).
    assert search_module.pieces(text) == cuts


async def test_a_value_only_near_the_end_of_a_5mb_body_is_found_with_its_line_number(ledger_at: str) -> None:
    ledger = Ledger.open(LedgerSettings(), ledger_at)
    large = body(large_text("shipment TAILMARK-77-QX left the depot"))
    small = body("a small result about nothing in particular\n")
    assert len(large_text("")) > 5_000_000
    ledger.commit(bodies=[large, small])
    ledger.index_queued(budget_s=600.0)
    assert len(piece_starts(ledger, large.trm_id)) >= 20
    text = await search(ledger, "TAILMARK-77-QX")
    assert HIT.findall(text) == [large.trm_id], text
    assert f"   L{ROWS + 2}: shipment TAILMARK-77-QX left the depot" in text, text
    # Inside a longer token (substring search) too, and with a term from the first piece: one hit.
    text = await search(ledger, "AILMARK-77")
    assert HIT.findall(text) == [large.trm_id], text
    text = await search(ledger, "HEADMARK-0001 TAILMARK-77-QX")
    assert HIT.findall(text) == [large.trm_id] and "no stored result holds every term" not in text, text
    assert "   L1: first line names HEADMARK-0001" in text and f"   L{ROWS + 2}: " in text, text
    ledger.close()


async def test_a_term_crossing_the_cut_of_a_run_without_separators_is_found(ledger_at: str) -> None:
    # A minified blob: no separator for far longer than a piece, so the cut falls inside it, right
    # across the value.
    cut = search_module.PIECE_CHARS
    value = "CROSSING-VALUE-4242"
    blob = "q" * (cut - len(value) // 2) + value + "z" * cut
    assert blob.index(value) < cut < blob.index(value) + len(value)
    crossing = body("blob: " + blob[6:] + "\n")
    ledger = Ledger.open(LedgerSettings(), ledger_at)
    ledger.commit(bodies=[crossing])
    ledger.index_queued(budget_s=600.0)
    assert piece_starts(ledger, crossing.trm_id) == [
        0,
        cut - search_module.PIECE_OVERLAP,
        *piece_starts(ledger, crossing.trm_id)[2:],
    ]
    text = await search(ledger, value)
    assert HIT.findall(text) == [crossing.trm_id], text
    ledger.close()


def test_a_commit_waits_for_one_piece_of_a_large_body_not_for_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The indexer releases the ledger's connection after each piece: a commit that arrives while a
    # 5 MB body is being indexed is stored between two of its pieces, never after the whole body.
    ledger = Ledger.open(LedgerSettings(), tmp_path / "l.db")
    ledger._indexer.close()  # the test indexes, in this thread
    large = body(large_text("end"))
    other = body("a later result: order 5521\n", tool="orders")
    ledger.commit(bodies=[large])
    events: list[str] = []
    one_piece = search_sqlite.index_one_piece

    def commit_other() -> None:
        ledger.commit(bodies=[other])
        events.append("commit")

    def traced(backend: Any) -> bool:
        did = one_piece(backend)
        if did:
            events.append("piece")
        if events == ["piece"]:  # after the first piece: another result arrives, and this waits for it
            committer = threading.Thread(target=commit_other)
            committer.start()
            committer.join(timeout=60)
            assert not committer.is_alive(), "the commit did not go through between two pieces"
        return did

    monkeypatch.setattr(search_sqlite, "index_one_piece", traced)
    ledger.index_queued(budget_s=600.0)
    assert events[:3] == ["piece", "commit", "piece"] and events.count("piece") >= 20, events
    assert b"order 5521" in ledger.get_body_json(other.trm_id)
    assert ledger.search_queued() == 0
    ledger.close()


async def test_an_evicted_entry_leaves_no_pieces(ledger_at: str) -> None:
    ledger = Ledger.open(LedgerSettings(max_age_days=1), ledger_at)
    large = body(large_text("gone soon: EVICTMARK-9"))
    kept = body("kept: EVICTMARK-9\n")
    ledger.commit(bodies=[large, kept])
    ledger.index_queued(budget_s=600.0)
    assert len(piece_starts(ledger, large.trm_id)) >= 20
    ledger.set_last_used(large.trm_id, 1.0)
    assert ledger.evict() == [large.trm_id]
    assert piece_starts(ledger, large.trm_id) == []
    text = await search(ledger, "EVICTMARK-9")
    assert HIT.findall(text) == [kept.trm_id], text
    ledger.close()


async def test_a_sqlite_index_from_before_pieces_is_migrated_and_its_cut_entries_indexed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_module.Indexer, "wake", lambda self: None)  # the test indexes, in this thread
    path = tmp_path / "old.db"
    ledger = Ledger.open(LedgerSettings(), path)
    small = body("small result with OLDSMALL-1\n")
    large = body(large_text("past the old cap: OLDTAIL-2"))
    ledger.commit(bodies=[small, large])
    ledger.close()
    with sqlite3.connect(path) as conn:  # as the version indexing one row per entry, its first 2M chars, left it
        for table in ("search_queue", "search_docs"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("CREATE TABLE search_queue (ref TEXT PRIMARY KEY, kind TEXT NOT NULL)")
        conn.execute("CREATE TABLE search_docs (id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, kind TEXT NOT NULL)")
        for doc, (record, text) in enumerate(
            ((small, "small result with OLDSMALL-1\n"), (large, large_text("")[:2_000_000])), 1
        ):
            conn.execute("INSERT INTO search_docs (id, ref, kind) VALUES (?, ?, 'body')", (doc, record.trm_id))
            conn.execute("INSERT INTO search_fts (rowid, text) VALUES (?, ?)", (doc, text))
            conn.execute("INSERT INTO search_tokens (rowid, text) VALUES (?, ?)", (doc, text))
    ledger = Ledger.open(LedgerSettings(), path)
    assert ledger.search_queued() == 1  # the entry cut at the old cap, queued again whole
    assert piece_starts(ledger, small.trm_id) == [0] and piece_starts(ledger, large.trm_id) == []
    ledger.index_queued(budget_s=600.0)
    text = await search(ledger, "OLDTAIL-2")
    assert HIT.findall(text) == [large.trm_id], text
    text = await search(ledger, "OLDSMALL-1")
    assert HIT.findall(text) == [small.trm_id], text
    ledger.close()


async def test_a_postgresql_ledger_of_schema_version_3_migrates_and_its_cut_entries_are_indexed_again(
    postgres: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_module.Indexer, "wake", lambda self: None)  # the test indexes, in this thread
    small = body("small result with OLDSMALL-1\n")
    large = body(large_text("past the old cap: OLDTAIL-2"))
    with monkeypatch.context() as one_piece_each:
        one_piece_each.setattr(search_module, "PIECE_CHARS", 10_000_000)
        ledger = Ledger.open(LedgerSettings(), pg_url)
        ledger.commit(bodies=[small, large])
        ledger.index_queued(budget_s=600.0)
        ledger.close()
    schema = pg_url.rsplit("%3D", 1)[1]
    for sql in (  # as schema version 3 left it: one row per entry, ref its key, of its first 2,000,000 chars
        f"UPDATE {schema}.search_docs SET text = left(text, 2000000), chars = 2000000,"
        " tsv = to_tsvector('simple', left(text, 2000000)) WHERE chars > 2000000",
        f"ALTER TABLE {schema}.search_docs DROP CONSTRAINT search_docs_pkey, ADD PRIMARY KEY (ref)",
        f"DROP INDEX {schema}.search_docs_pieces",
        f"ALTER TABLE {schema}.search_docs DROP COLUMN start",
        f"ALTER TABLE {schema}.search_queue DROP COLUMN next_offset",
        f"UPDATE {schema}.offload_meta SET value = '3' WHERE key = 'schema_version'",
    ):
        postgres.execute(sql)
    ledger = Ledger.open(LedgerSettings(), pg_url, connect_now=True)
    assert ledger.search_queued() == 1  # the entry cut at the old cap, queued again whole
    assert piece_starts(ledger, small.trm_id) == [0] and piece_starts(ledger, large.trm_id) == []
    ledger.index_queued(budget_s=600.0)
    assert len(piece_starts(ledger, large.trm_id)) >= 20
    text = await search(ledger, "OLDTAIL-2")
    assert HIT.findall(text) == [large.trm_id], text
    text = await search(ledger, "OLDSMALL-1")
    assert HIT.findall(text) == [small.trm_id], text
    ledger.close()


async def test_an_entry_evicted_while_indexed_and_stored_again_is_indexed_whole(
    ledger_at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_module.Indexer, "wake", lambda self: None)  # the test indexes, in this thread
    ledger = Ledger.open(LedgerSettings(max_age_days=1), ledger_at)
    large = body(large_text("back again: RETURNMARK-5"))
    ledger.commit(bodies=[large])
    ledger.index_queued(budget_s=600.0, max_entries=3)  # three pieces in, the entry goes
    assert len(piece_starts(ledger, large.trm_id)) == 3
    ledger.set_last_used(large.trm_id, 1.0)
    assert ledger.evict() == [large.trm_id]
    ledger.index_queued(budget_s=600.0)
    assert piece_starts(ledger, large.trm_id) == [] and ledger.search_queued() == 0
    ledger.commit(bodies=[large])  # the same content, stored again
    ledger.index_queued(budget_s=600.0)
    assert len(piece_starts(ledger, large.trm_id)) >= 20
    text = await search(ledger, "RETURNMARK-5")
    assert HIT.findall(text) == [large.trm_id], text
    ledger.close()
