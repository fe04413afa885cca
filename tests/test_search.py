"""Search across stored results: `recall_tool_result` with a query and no mem_id (issue 42).

In process against a real SQLite ledger: identifiers are findable inside longer tokens, user text is
never FTS syntax, reduced results' originals are found by their marker, a ledger written before the
index is queued and said to be incomplete until indexed, a query too broad to answer in time ends
with a clear error. Through a real streamable-HTTP proxy with two bearer tokens (scope `principal`):
a search finds the caller's result holding a value, never another principal's, and the recall it
names returns the value.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.session import SessionMemory
from offload_mcp.store import BodyRecord, Ledger, search_sqlite
from offload_mcp.store import search as search_module
from offload_mcp.store.schema import POSTGRES_SCHEMA_VERSION
from offload_mcp.store.settings import LedgerSettings
from offload_mcp.tools import recall
from offload_mcp.tools.registry import ToolEnv
from support.principals import ALICE, BOB, session_call
from support.proxy import TRM, running_proxy, text_of
from support.servers import HOSTILE, write_config
from support.zygote import prewarmed

HIT = re.compile(r"^\d+\. (trm_[0-9a-f]{16}|<<cg:[0-9a-f]{16}>>) ", re.M)


def body(text: str, session: str = "s1", tool: str = "listing") -> BodyRecord:
    return BodyRecord.of(
        {"content": [{"type": "text", "text": text}]},
        server="srv",
        tool=tool,
        arguments={},
        session_id=session,
        chars=len(text),
    )


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh ledger's location: a SQLite file, or a schema in the PostgreSQL the tests start (tests/support/pg.py)."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "l.db")


def tool_env(ledger: Ledger, owner: str | None = None, session: str = "s1") -> ToolEnv:
    settings = OffloadSettings.model_validate({})
    return ToolEnv(settings=settings, ledger=ledger, session_id=session, session=SessionMemory(), owner=owner)


async def search(env: ToolEnv, query: str, **more: object) -> tuple[bool, str]:
    result = await recall.handle({"query": query, **more}, env)
    return bool(result.is_error), text_of(result)


FILLER = "\n".join(f"row {i}: status ok, count {i * 3}" for i in range(400))
IDENTIFIERS = {
    "sku": ("LAPTOP-14-M3", "order 7731 for sku LAPTOP-14-M3, qty 2"),
    "path": ("pool.py", "M\tsrc/offload/pool.py | 12 +++---"),
    "sha": ("9f3c2ab", "commit 9f3c2ab41d0e7b6a5c4d3e2f1a0b9c8d7e6f5a4b"),
    "trm id": ("trm_00ff00ff00ff00ff", "see trm_00ff00ff00ff00ff for the listing"),
    "number": ("1,299.00", "total: $1,299.00 (incl. tax)"),
    "unicode": ("Zürich", "office: Zürich-Oerlikon, floor 3"),
}


async def test_identifiers_are_found_inside_longer_tokens_with_their_lines(tmp_path: Path, ledger_at: str) -> None:
    ledger = Ledger.open(LedgerSettings(), ledger_at)
    ids = {}
    for name, (_, line) in IDENTIFIERS.items():
        record = body(f"{FILLER}\n{line}\n{FILLER}", tool=f"tool_{name.replace(' ', '_')}")
        ledger.commit(bodies=[record])
        ids[name] = record.trm_id
    env = tool_env(ledger)
    for name, (query, line) in IDENTIFIERS.items():
        error, text = await search(env, query)
        assert not error, text
        assert HIT.findall(text) == [ids[name]], (name, text)
        # The line number is the one `lines=` reads: line 401 holds the value.
        assert f"   L401: {line}\n" in text, (name, text)
        assert f'more: recall_tool_result(mem_id="{ids[name]}", query=' in text
        error, again = await search(env, query.lower())  # case-insensitive
        assert HIT.findall(again) == [ids[name]], (name, again)
        lines = await recall.handle({"mem_id": ids[name], "lines": "401"}, env)
        assert text_of(lines).endswith(line + "\n")
    ledger.close()


async def test_user_text_is_never_query_syntax(tmp_path: Path, ledger_at: str) -> None:
    ledger = Ledger.open(LedgerSettings(), ledger_at)
    record = body('a line with "quotes" and NEAR(x y) and col:umn * star - minus OR and AND\n' + FILLER)
    ledger.commit(bodies=[record])
    env = tool_env(ledger)
    for query in ['"quotes"', "NEAR(x", "col:umn", '" OR "', "AND", "- minus", "a\x00b ok?"]:
        error, text = await search(env, query)
        assert not error or "at least 3 characters" in text, (query, text)
    error, text = await search(env, '"quotes"')
    assert HIT.findall(text) == [record.trm_id], text
    # Too short, too long, too many terms, wrong arguments: clear errors.
    for args, message in [
        ({"query": "ab"}, "at least 3 characters"),
        ({"query": "x" * 600}, "at most 512 chars"),
        ({"query": " ".join(f"term{i}" for i in range(20))}, "at most 12 terms"),
        ({"query": "quotes", "lines": "1-2"}, "takes only query and max_chars"),
        ({"query": "   "}, "must not be empty"),
        ({}, "or give query alone to search"),
    ]:
        result = await recall.handle(args, env)
        assert result.is_error and message in text_of(result), (args, text_of(result))
    ledger.close()


async def test_the_terms_all_first_then_any_and_short_terms_are_named(tmp_path: Path, ledger_at: str) -> None:
    ledger = Ledger.open(LedgerSettings(), ledger_at)
    both, one = body("alpha-widget and beta-gadget\n" + FILLER), body("only alpha-widget here\n" + FILLER)
    ledger.commit(bodies=[both, one])
    env = tool_env(ledger)
    error, text = await search(env, "alpha-widget beta-gadget is")
    assert HIT.findall(text) == [both.trm_id] and "holding every term" in text, text
    assert "left out as shorter than 3 chars: 'is'" in text
    error, text = await search(env, "alpha-widget nowhere-to-be-seen")
    assert set(HIT.findall(text)) == {both.trm_id, one.trm_id} and "none holds every one" in text, text
    error, text = await search(env, "nowhere-to-be-seen")
    assert not error and "no stored result you may read holds it" in text
    ledger.close()


async def test_a_reduced_results_original_is_found_by_its_marker(ledger_at: str) -> None:
    ledger = Ledger.open(LedgerSettings(scope="session"), ledger_at)
    original = "kept apart: the build id BLD-2026-0042 was here\n" + FILLER
    from offload_mcp.session import cg_hash

    hash_ = cg_hash(original)
    ledger.commit(stash={hash_: original}, owner="s1")
    error, text = await search(tool_env(ledger, session="s1"), "BLD-2026-0042")
    assert HIT.findall(text) == [f"<<cg:{hash_}>>"] and "a reduced result's original" in text, text
    assert "   L1: kept apart" in text
    error, text = await search(tool_env(ledger, session="s2"), "BLD-2026-0042")
    assert "no stored result you may read holds it" in text, text
    ledger.close()


async def test_a_ledger_written_before_the_index_is_queued_and_said_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    ledger = Ledger.open(LedgerSettings(), path)
    records = [body(f"old result {i} holds OLDVALUE-{i}\n{FILLER}") for i in range(3)]
    ledger.commit(bodies=records)
    ledger.close()
    with sqlite3.connect(path) as conn:  # as a version without search left it
        for table in ("search_fts", "search_docs", "search_queue"):
            conn.execute(f"DROP TABLE {table}")
    monkeypatch.setattr(search_module, "INDEX_BUDGET_S", 0.0)
    monkeypatch.setattr("offload_mcp.store.ledger.INDEX_BUDGET_S", 0.0)
    woken: list[object] = []
    monkeypatch.setattr(search_module.Indexer, "wake", lambda self: woken.append(self))
    ledger = Ledger.open(LedgerSettings(), path)
    assert woken == [ledger._indexer]  # opening a ledger with queued entries starts indexing them
    # Here only searches index, one entry each with no budget.
    assert ledger.search_queued() == 3
    env = tool_env(ledger)
    error, text = await search(env, "OLDVALUE-2")
    assert "2 stored results not yet indexed were not searched" in text, text
    for _ in range(3):
        error, text = await search(env, "OLDVALUE-2")
    assert HIT.findall(text) == [records[2].trm_id] and "not yet indexed" not in text, text
    ledger.close()


async def test_a_postgresql_ledger_from_before_the_index_is_migrated_and_queued(postgres: object, pg_url: str) -> None:
    ledger = Ledger.open(LedgerSettings(), pg_url)
    records = [body(f"old result {i} holds OLDVALUE-{i}\n{FILLER}") for i in range(3)]
    ledger.commit(bodies=records)
    ledger.close()
    schema = pg_url.rsplit("%3D", 1)[1]
    for sql in (  # as schema version 1 left it
        f"DROP TABLE {schema}.search_queue, {schema}.search_docs",
        f"UPDATE {schema}.offload_meta SET value = '1' WHERE key = 'schema_version'",
    ):
        postgres.execute(sql)  # type: ignore[attr-defined]
    ledger = Ledger.open(LedgerSettings(), pg_url, connect_now=True)
    ledger._indexer.close()
    assert ledger.search_queued() == 3
    error, text = await search(tool_env(ledger), "OLDVALUE-2")
    assert HIT.findall(text) == [records[2].trm_id] and "not yet indexed" not in text, text
    ledger.close()


def tokens_of(postgres: object, pg_url: str) -> dict[str, str | None]:
    """Each indexed entry's `tsv` (None: not filled), read from outside the proxy."""
    schema = pg_url.rsplit("%3D", 1)[1]
    rows = postgres.execute(f"SELECT ref, tsv::text FROM {schema}.search_docs")  # type: ignore[attr-defined]
    return {str(ref): (None if tsv is None else str(tsv)) for ref, tsv in rows}


async def test_postgresql_finds_whole_tokens_by_full_text_search_ranked_by_ts_rank(
    postgres: object, pg_url: str
) -> None:
    # The same value in two results: the one holding it five times ranks first by ts_rank, though it is
    # the longer (ranked by the shortest it would come second).
    ledger = Ledger.open(LedgerSettings(), pg_url)
    once_text = "order 7731 for sku LAPTOP-14-M3, qty 2\n" + FILLER[:2000]
    often_text = "\n".join(f"restock {i}: sku LAPTOP-14-M3 at depot {i}" for i in range(5)) + "\n" + FILLER[:4000]
    assert len(often_text) > len(once_text)
    once, often = body(once_text), body(often_text)
    ledger.commit(bodies=[once, often])
    ledger.index_queued(budget_s=60.0)
    tokens = tokens_of(postgres, pg_url)
    # The stored text split by PostgreSQL's parser ('simple': every word kept, lowercased).
    assert "'laptop'" in str(tokens[often.trm_id]) and "'m3'" in str(tokens[often.trm_id])
    env = tool_env(ledger)
    for query in ("LAPTOP-14-M3", "laptop-14-m3", "sku LAPTOP-14-M3"):
        error, text = await search(env, query)
        assert HIT.findall(text) == [often.trm_id, once.trm_id], (query, text)
    # A phrase must hold its parts in order: 14-LAPTOP is not LAPTOP-14, and no substring holds it either.
    error, text = await search(env, "M3-14-LAPTOP")
    assert not error and "no stored result you may read holds it" in text, text
    ledger.close()


async def test_postgresql_searches_an_entry_too_large_for_a_tsvector_by_substring(
    postgres: object, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More distinct tokens than a tsvector holds (1 MB of them): the entry keeps no tsv, and a token
    # search that finds the value elsewhere still lists it (else it would be silently missing). A
    # piece of the usual size holds far fewer: here the whole entry is one piece.
    monkeypatch.setattr(search_module, "PIECE_CHARS", 4_000_000)
    ledger = Ledger.open(LedgerSettings(), pg_url)
    unique = "\n".join(f"event {i:07d} id ev{i:07d}x{i * 7919:012d}" for i in range(40_000))
    huge = body(unique + "\nshipment SHIP-77-QX left\n")
    small = body("shipment SHIP-77-QX arrived\n" + FILLER)
    ledger.commit(bodies=[huge, small])
    ledger.index_queued(budget_s=120.0)
    tokens = tokens_of(postgres, pg_url)
    assert tokens[huge.trm_id] is None and tokens[small.trm_id] is not None, {k: v is None for k, v in tokens.items()}
    error, text = await search(tool_env(ledger), "SHIP-77-QX")
    assert not error and set(HIT.findall(text)) == {huge.trm_id, small.trm_id}, text
    assert "L40001: shipment SHIP-77-QX left" in text, text
    ledger.close()


async def test_a_postgresql_ledger_of_schema_version_2_migrates_and_fills_its_tokens(
    postgres: object, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger.open(LedgerSettings(), pg_url)
    records = [body(f"old result {i} holds OLDVALUE-{i}\n{FILLER}") for i in range(3)]
    ledger.commit(bodies=records)
    ledger.index_queued(budget_s=60.0)
    ledger.close()
    schema = pg_url.rsplit("%3D", 1)[1]
    for sql in (  # as schema version 2 left it: indexed by trigrams only
        f"DROP INDEX {schema}.search_docs_tsv, {schema}.search_docs_untokenized",
        f"ALTER TABLE {schema}.search_docs DROP COLUMN tsv",
        f"UPDATE {schema}.offload_meta SET value = '2' WHERE key = 'schema_version'",
    ):
        postgres.execute(sql)  # type: ignore[attr-defined]
    ledger = Ledger.open(LedgerSettings(), pg_url, connect_now=True)
    ledger._indexer.close()
    assert ledger.backend.schema_version() == POSTGRES_SCHEMA_VERSION  # type: ignore[attr-defined]
    # Both GIN indexes without a pending list, which every search would read whole until a vacuum.
    options = postgres.execute(  # type: ignore[attr-defined]
        f"SELECT relname, reloptions FROM pg_class WHERE relname IN ('search_docs_tsv', 'search_docs_trgm')"
        f" AND relnamespace = '{schema}'::regnamespace ORDER BY relname"
    )
    assert options == [("search_docs_trgm", ["fastupdate=off"]), ("search_docs_tsv", ["fastupdate=off"])], options
    assert ledger.search_queued() == 3 and set(tokens_of(postgres, pg_url).values()) == {None}
    # Queued to fill their tokens, they are still found (by substring), never missing meanwhile.
    monkeypatch.setattr("offload_mcp.store.ledger.INDEX_BUDGET_S", 0.0)
    error, text = await search(tool_env(ledger), "OLDVALUE-2")
    assert HIT.findall(text) == [records[2].trm_id], text
    ledger.index_queued(budget_s=60.0)
    assert ledger.search_queued() == 0 and None not in tokens_of(postgres, pg_url).values()
    error, text = await search(tool_env(ledger), "OLDVALUE-2")
    assert HIT.findall(text) == [records[2].trm_id] and "not yet indexed" not in text, text
    ledger.close()


async def test_a_query_too_broad_to_answer_in_time_ends_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger.open(LedgerSettings(), tmp_path / "l.db")
    ledger.commit(bodies=[body(f"common words in result {i}\n{FILLER}") for i in range(300)])
    ledger.index_queued(budget_s=60.0)
    env = tool_env(ledger)
    error, text = await search(env, "common")
    assert not error and len(HIT.findall(text)) == 5
    monkeypatch.setattr(search_sqlite, "SEARCH_TIME_LIMIT_S", 0.0)
    monkeypatch.setattr(search_sqlite, "_PROGRESS_STEPS", 100)  # checked often enough to see the small ledger
    error, text = await search(env, "common")
    assert error and "search took longer than 0 s" in text and "more distinctive" in text, text
    ledger.close()


def big_listing(owner: str, value: str) -> str:
    rows = [f"{owner} order {i:05d} sku GEN-{i % 97:03d}-X qty {i % 5}" for i in range(3000)]
    rows[1717] = f"{owner} order 01717 sku {value} qty 9"
    return "\n".join(rows)


async def test_a_search_finds_the_callers_result_and_never_another_principals(tmp_path: Path, ledger_at: str) -> None:
    config = write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {"server": {"auth_tokens": {"alice": ALICE, "bob": BOB}}, "ledger": {"scope": "principal"}},
    )
    with running_proxy(["-c", str(config), "--ledger", ledger_at]) as proxy:
        (alice_stub,) = await session_call(proxy.url, ALICE, ("echo", {"text": big_listing("alice", "LAPTOP-14-M3")}))
        (bob_stub,) = await session_call(proxy.url, BOB, ("echo", {"text": big_listing("bob", "LAPTOP-14-M3")}))
        alice_id = TRM.search(text_of(alice_stub)).group(0)  # type: ignore[union-attr]
        bob_id = TRM.search(text_of(bob_stub)).group(0)  # type: ignore[union-attr]
        assert alice_id != bob_id

        # Another session of Alice's: the search names her result and its line, and the recall it names returns it.
        found, more = await session_call(
            proxy.url,
            ALICE,
            ("recall_tool_result", {"query": "LAPTOP-14-M3"}),
            ("recall_tool_result", {"mem_id": alice_id, "lines": "1718"}),
        )
        assert not found.is_error, text_of(found)  # type: ignore[attr-defined]
        assert HIT.findall(text_of(found)) == [alice_id], text_of(found)
        assert "L1718: alice order 01717 sku LAPTOP-14-M3 qty 9" in text_of(found)
        assert bob_id not in text_of(found) and "bob order" not in text_of(found)
        assert text_of(more).endswith("alice order 01717 sku LAPTOP-14-M3 qty 9\n")

        (found,) = await session_call(proxy.url, BOB, ("recall_tool_result", {"query": "laptop-14-m3"}))
        assert HIT.findall(text_of(found)) == [bob_id] and "alice" not in text_of(found), text_of(found)
        # A value only Alice's result holds is not there for Bob, and the answer does not hint at it.
        (found,) = await session_call(proxy.url, BOB, ("recall_tool_result", {"query": "alice"}))
        assert "no stored result you may read holds it" in text_of(found), text_of(found)


async def test_stats_count_searches_hits_and_the_hop_a_later_recall_of_a_hit_saved(tmp_path: Path) -> None:
    from offload_mcp.analysis.reports import report_from_ledger

    ledger = Ledger.open(LedgerSettings(), tmp_path / "l.db")
    wanted, other = body("the invoice INV-2026-881 is here\n" + FILLER), body("nothing to see\n" + FILLER)
    ledger.commit(bodies=[wanted, other])
    env = tool_env(ledger, session="s1")
    assert HIT.findall((await search(env, "INV-2026-881"))[1]) == [wanted.trm_id]
    await search(env, "ab")  # refused: too short
    assert not (await recall.handle({"mem_id": other.trm_id}, env)).is_error  # not a hit: no hop saved
    for _ in range(2):  # counted once
        assert not (await recall.handle({"mem_id": wanted.trm_id, "query": "INV-2026-881"}, env)).is_error
    # Another session's recall of the same id is not this search's doing.
    assert not (await recall.handle({"mem_id": wanted.trm_id}, tool_env(ledger, session="s2"))).is_error
    found = report_from_ledger(ledger).result_search
    assert (found.searches, found.failed, found.hits, found.hops_saved) == (2, 1, 1, 1)
    ledger.close()


def test_ledger_index_finishes_the_queue_of_a_ledger_from_before_the_index(tmp_path: Path) -> None:
    import subprocess

    from support.proxy import OFFLOAD_MCP, proxy_env

    path = tmp_path / "old.db"
    ledger = Ledger.open(LedgerSettings(), path)
    records = [body(f"old result {i} holds OLDVALUE-{i}\n{FILLER}") for i in range(4)]
    ledger.commit(bodies=records)
    ledger.close()
    with sqlite3.connect(path) as conn:  # as a version without search left it
        for table in ("search_fts", "search_tokens", "search_docs", "search_queue"):
            conn.execute(f"DROP TABLE {table}")
    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, "ledger", "index", str(path)]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.endswith("; 0 still queued\n"), done.stdout + done.stderr
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM search_docs").fetchone() == (4,)
    missing = subprocess.run(
        prewarmed([OFFLOAD_MCP, "ledger", "index", "postgresql://nobody@127.0.0.1:1/nowhere"]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=120,
    )
    assert missing.returncode == 1 and "offload-mcp ledger index:" in missing.stderr, missing.stderr
