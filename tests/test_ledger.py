"""The ledger: exact bodies, atomic commits, failures named, retention with tombstones.

The contract tests run against both backends (`where` is a SQLite file or a PostgreSQL URL with a
schema of its own); the file-level ones (modes, WAL, locks, read-only, migration) are SQLite's.
"""

import hashlib
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

from offload_mcp.session import cg_hash
from offload_mcp.store import (
    BodyRecord,
    Evicted,
    Ledger,
    LedgerCorrupt,
    LedgerEvent,
    LedgerUnavailable,
    LedgerWriteError,
    UnknownId,
    codec,
)
from offload_mcp.store.records import trm_id_for
from offload_mcp.store.schema import sqlite_schema_is_current
from offload_mcp.store.settings import LedgerSettings
from support.ledgers import BODY, record
from support.processes import run_unprivileged


@pytest.fixture(params=["sqlite", "postgres"])
def where(request, tmp_path):
    """Where a ledger lives: a file under tmp_path, or a fresh schema on the session's PostgreSQL."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return tmp_path / "state" / "ledger.db"


@pytest.fixture
def ledger(where):
    led = Ledger.open(LedgerSettings(), where)
    yield led
    led.close()


@pytest.fixture
def sqlite_ledger(tmp_path):
    led = Ledger.open(LedgerSettings(), tmp_path / "state" / "ledger.db")
    yield led
    led.close()


def inject_failing_trigger(where, request):
    """Make every event insert fail inside the transaction, from outside the proxy (as a DBA would)."""
    if isinstance(where, str):
        postgres = request.getfixturevalue("postgres")
        schema = where.rsplit("%3D", 1)[1]
        postgres.execute(
            f"CREATE FUNCTION {schema}.fail_events() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$;"
            f"CREATE TRIGGER fail_events BEFORE INSERT ON {schema}.events FOR EACH ROW EXECUTE FUNCTION {schema}.fail_events()"
        )
        return
    outside = sqlite3.connect(where)
    outside.execute("CREATE TRIGGER fail_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'injected'); END")
    outside.close()


def overwrite(where, request, table, column, blob):
    """Set a stored column of every row from outside the proxy, as a damaged disk or a bad copy would."""
    if isinstance(where, str):
        schema = where.rsplit("%3D", 1)[1]
        request.getfixturevalue("postgres").execute(f"UPDATE {schema}.{table} SET {column} = '\\x{blob.hex()}'::bytea")
        return
    outside = sqlite3.connect(where)
    outside.execute(f"UPDATE {table} SET {column} = ?", (blob,))
    outside.commit()
    outside.close()


def rename_stash(where, request, hash_):
    """Store every stash row under `hash_`, from outside the proxy."""
    if isinstance(where, str):
        schema = where.rsplit("%3D", 1)[1]
        request.getfixturevalue("postgres").execute(f"UPDATE {schema}.stash SET hash = '{hash_}'")
        return
    outside = sqlite3.connect(where)
    outside.execute("UPDATE stash SET hash = ?", (hash_,))
    outside.commit()
    outside.close()


def test_file_0600_and_created_dir_0700(sqlite_ledger, tmp_path):
    ledger = sqlite_ledger
    assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(ledger.path).st_mode) == 0o600
    ledger.commit(bodies=[record()])
    for suffix in ("-wal", "-shm"):
        side = ledger.path.with_name(ledger.path.name + suffix)
        if side.exists():
            assert stat.S_IMODE(os.stat(side).st_mode) & 0o077 == 0


def test_wal_mode(sqlite_ledger):
    assert sqlite_ledger.sqlite.journal_mode() == "wal"


def test_settings_path_and_override(tmp_path):
    a = Ledger.open(LedgerSettings(path=tmp_path / "a.db"))
    b = Ledger.open(LedgerSettings(path=tmp_path / "a.db"), tmp_path / "b.db")
    assert (a.path.name, b.path.name) == ("a.db", "b.db")


def test_body_round_trips_exactly_and_id_is_content_hash(ledger):
    rec = record()
    ledger.commit(bodies=[rec])
    assert ledger.get_body(rec.trm_id) == BODY
    assert ledger.get_body_json(rec.trm_id) == rec.body_json
    assert rec.trm_id.startswith("trm_") and len(rec.trm_id) == 20
    assert record(server="other", session_id="s9").trm_id == rec.trm_id
    assert record({**BODY, "isError": True}).trm_id != rec.trm_id
    info = ledger.body_info(rec.trm_id)
    assert (info.server, info.tool, info.arguments, info.session_id, info.chars) == (
        "srv",
        "tool",
        {"a": 1},
        "s1",
        5000,
    )
    assert info.stored_bytes < info.raw_bytes  # compressed


def test_same_body_twice_keeps_one_row(ledger):
    ledger.commit(bodies=[record()])
    ledger.commit(bodies=[record(session_id="s2")])
    assert ledger.counts()["bodies"] == 1


def test_unknown_ids(ledger):
    with pytest.raises(UnknownId):
        ledger.get_body("trm_0000000000000000")
    with pytest.raises(UnknownId):
        ledger.get_stash("0123456789abcdef")


def test_stash_and_events_commit_together(ledger):
    ledger.commit(
        bodies=[record()],
        stash={cg_hash("original ✓ text"): "original ✓ text"},
        events=[
            LedgerEvent(
                "decision",
                session_id="s1",
                server="srv",
                tool="tool",
                verdict="offload",
                reason="gate_fired",
                detail={"net": 1.5},
            )
        ],
    )
    assert ledger.get_stash(cg_hash("original ✓ text")) == "original ✓ text"
    (ev,) = list(ledger.events(kinds=["decision"]))
    assert (ev["verdict"], ev["reason"], ev["detail"]) == ("offload", "gate_fired", {"net": 1.5})


def test_failed_commit_leaves_nothing(ledger, where, request):
    # A real failure inside the transaction, after the body and stash rows went in.
    ledger.counts()  # the tables exist (a PostgreSQL ledger creates them in the background)
    inject_failing_trigger(where, request)
    with pytest.raises(LedgerWriteError, match="injected"):
        ledger.commit(bodies=[record()], stash={"0123456789abcdef": "x"}, events=[LedgerEvent("decision")])
    assert ledger.counts() == {"bodies": 0, "stored_bytes": 0, "stash": 0, "tombstones": 0}


def test_disk_full_is_named(sqlite_ledger):
    ledger = sqlite_ledger
    ledger.commit(events=[LedgerEvent("decision")])
    ledger.sqlite.cap_file_size(0)
    big = {"content": [{"type": "text", "text": os.urandom(400_000).hex()}]}
    with pytest.raises(LedgerWriteError, match="full"):
        ledger.commit(bodies=[record(big)])
    assert ledger.counts()["bodies"] == 0


def test_lock_held_past_busy_timeout_is_named(tmp_path):
    path = tmp_path / "l.db"
    led = Ledger.open(LedgerSettings(busy_timeout_s=0.2), path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LedgerWriteError, match="locked"):
            led.commit(bodies=[record()])
    finally:
        other.execute("ROLLBACK")
    led.commit(bodies=[record()])
    assert led.counts()["bodies"] == 1


READONLY_SCRIPT = textwrap.dedent(
    """
    import sys
    from offload_mcp.store import Ledger, BodyRecord, LedgerWriteError
    led = Ledger.open(None, sys.argv[1])
    print("writable", led.writable)
    print("recall", led.get_body(sys.argv[2])["isError"])
    try:
        led.commit(bodies=[BodyRecord.of({"content": []}, server="s", tool="t", arguments={}, session_id="x", chars=0)])
        print("committed")
    except LedgerWriteError as err:
        print("error", err.cause)
    """
)


def test_read_only_ledger_still_recalls_and_names_the_cause(tmp_path):
    path = tmp_path / "ro.db"
    led = Ledger.open(None, path)
    rec = record()
    led.commit(bodies=[rec])
    led.sqlite.checkpoint()
    led.close()
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o444)
    out = run_unprivileged([sys.executable, "-c", READONLY_SCRIPT, str(path), rec.trm_id])
    assert out.returncode == 0, out.stderr
    assert "writable False" in out.stdout
    assert "recall False" in out.stdout
    assert "error" in out.stdout and "read-only" in out.stdout


def test_stored_bytes_that_do_not_decode_are_corrupt_not_a_passing_outage(ledger, where, request):
    # They were a ZstdError or JSONDecodeError out of the ledger: "failed inside offload-mcp" at recall.
    rec = record()
    h = cg_hash("original")
    ledger.commit(bodies=[rec], stash={h: "original"})
    overwrite(where, request, "bodies", "body", b"\x00 not a zstd frame")
    overwrite(where, request, "stash", "original", b"\x00 not a zstd frame")
    with pytest.raises(LedgerCorrupt, match=f"the stored copy of {rec.trm_id} does not decompress"):
        ledger.get_body_json(rec.trm_id)
    with pytest.raises(LedgerCorrupt, match=f"the stored copy of <<cg:{h}>> does not decompress"):
        ledger.get_stash(h)
    overwrite(where, request, "bodies", "body", codec.compress(b"{not json"))
    overwrite(where, request, "stash", "original", codec.compress(b"\xff\xfe"))
    with pytest.raises(LedgerCorrupt, match=f"the stored body of {rec.trm_id} does not match its id"):
        ledger.get_body(rec.trm_id)
    with pytest.raises(LedgerCorrupt, match=f"the stored original of <<cg:{h}>> does not match its hash"):
        ledger.get_stash(h)


def test_damaged_bytes_that_still_decompress_are_corrupt_not_a_wrong_result(ledger, where, request):
    # zstd frames are written without a checksum: a frame of other bytes decompresses cleanly, and the
    # model was handed another result (valid JSON, a plausible text) as if it were this one.
    rec = record()
    other = record({"content": [{"type": "text", "text": "y" * 5000}], "isError": False})
    h = cg_hash("original cut")
    ledger.commit(bodies=[rec], stash={h: "original cut"})
    overwrite(where, request, "bodies", "body", codec.compress(other.body_json))
    overwrite(where, request, "stash", "original", codec.compress(b"original cuT"))
    with pytest.raises(LedgerCorrupt, match=f"the stored body of {rec.trm_id} does not match its id \\(damaged\\)"):
        ledger.get_body(rec.trm_id)
    with pytest.raises(LedgerCorrupt, match=f"the stored original of <<cg:{h}>> does not match its hash"):
        ledger.get_stash(h)
    overwrite(where, request, "bodies", "body", codec.compress(rec.body_json))
    overwrite(where, request, "stash", "original", codec.compress(b"original cut"))
    assert ledger.get_body(rec.trm_id) == BODY and ledger.get_stash(h) == "original cut"


def test_bytes_that_match_their_id_but_are_not_a_result_are_corrupt(ledger, where, request):
    # Only a forged row gets here (the id is the hash of these very bytes); still an error, not a crash.
    forged = BodyRecord(trm_id_for(b"{not json"), b"{not json", "srv", "tool", {}, "s1", 9)
    ledger.commit(bodies=[forged], stash={cg_hash("cut"): "cut"})
    with pytest.raises(LedgerCorrupt, match=f"the stored body of {forged.trm_id} is not JSON"):
        ledger.get_body(forged.trm_id)
    not_text = b"\xff\xfe"
    forged_hash = hashlib.sha256(not_text).hexdigest()[:16]
    overwrite(where, request, "stash", "original", codec.compress(not_text))
    rename_stash(where, request, forged_hash)
    with pytest.raises(LedgerCorrupt, match=f"the stored original of <<cg:{forged_hash}>> is not text"):
        ledger.get_stash(forged_hash)


def test_a_damaged_sqlite_file_is_corrupt_not_a_passing_outage(tmp_path):
    # Both were LedgerUnavailable, which recall words as "try the recall again shortly".
    path = tmp_path / "l.db"
    led = Ledger.open(None, path)
    rec = record()
    led.commit(bodies=[rec])
    outside = sqlite3.connect(path)
    outside.execute("UPDATE bodies SET codec = CAST(x'ff80' AS TEXT)")  # TEXT that is not UTF-8
    outside.commit()
    with pytest.raises(LedgerCorrupt, match="the file is damaged \\(Could not decode to UTF-8 column 'codec'"):
        led.get_body_json(rec.trm_id)
    outside.execute("UPDATE bodies SET codec = 'zstd'")
    outside.commit()
    root, page = outside.execute(
        "SELECT rootpage, page_size FROM sqlite_master, pragma_page_size WHERE name = 'bodies'"
    ).fetchone()
    outside.close()
    led.sqlite.checkpoint()
    led.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * page] = 0  # the table's b-tree page type: none has that number
    path.write_bytes(bytes(data))
    led = Ledger.open(None, path)
    for read in (led.get_body_json, led.body_info):
        with pytest.raises(LedgerCorrupt, match="the file is damaged \\(database disk image is malformed\\)") as caught:
            read(rec.trm_id)
        assert isinstance(caught.value, LedgerUnavailable)  # callers asking only "can it be read?" see no change
    led.close()


def test_uncreatable_ledger_raises_unavailable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LedgerUnavailable):
        Ledger.open(None, blocker / "sub" / "ledger.db")


def test_persistent_across_processes(where):
    path = where
    script = (
        "import sys; from offload_mcp.store import Ledger, BodyRecord;"
        "r = BodyRecord.of({'content': [{'type': 'text', 'text': 'persist'}]}, server='s', tool='t', arguments={}, session_id='x', chars=7);"
        "Ledger.open(None, sys.argv[1]).commit(bodies=[r]); print(r.trm_id)"
    )
    trm = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    led = Ledger.open(None, path)
    assert led.get_body(trm)["content"][0]["text"] == "persist"
    led.close()


def test_reads_refresh_recency_at_most_once_a_minute(ledger):
    rec = record()
    ledger.commit(bodies=[rec])
    first = ledger.body_info(rec.trm_id).last_used_at
    ledger.get_body(rec.trm_id)
    assert ledger.body_info(rec.trm_id).last_used_at == first
    ledger.set_last_used(rec.trm_id, first - 120)
    ledger.get_body(rec.trm_id)
    assert ledger.body_info(rec.trm_id).last_used_at > first - 1


def test_retention_is_off_by_default(ledger):
    ledger.commit(bodies=[record()])
    assert ledger.evict(now=1e12) == []


def test_max_age_evicts_and_leaves_a_tombstone(where):
    led = Ledger.open(LedgerSettings(max_age_days=1), where)
    rec = record()
    led.commit(bodies=[rec], stash={cg_hash("cut"): "cut"})
    led.evict(now=led.body_info(rec.trm_id).last_used_at + 2 * 86400)
    with pytest.raises(Evicted) as err:
        led.get_body(rec.trm_id)
    assert "max_age_days=1" in str(err.value) and "UTC" in str(err.value)
    with pytest.raises(Evicted):
        led.get_stash(cg_hash("cut"))
    led.commit(bodies=[rec])  # storing it again revives it
    assert led.get_body(rec.trm_id) == BODY
    led.close()


def test_max_total_bytes_evicts_least_recently_used(where):
    led = Ledger.open(LedgerSettings(max_total_bytes=1), where)
    recs = [record({"content": [{"type": "text", "text": os.urandom(2000).hex()}]}) for _ in range(3)]
    led.settings = LedgerSettings()  # fill first, then turn retention on
    for r in recs:
        led.commit(bodies=[r])
    for r in recs:
        led.set_last_used(r.trm_id, led.body_info(r.trm_id).last_used_at - 3600)  # an hour ago
    led.get_body(recs[0].trm_id)  # most recently used now
    sizes = {r.trm_id: led.body_info(r.trm_id).stored_bytes for r in recs}
    led.settings = LedgerSettings(max_total_bytes=sizes[recs[0].trm_id] + sizes[recs[2].trm_id])
    assert led.evict() == [recs[1].trm_id]
    with pytest.raises(Evicted, match="max_total_bytes"):
        led.get_body(recs[1].trm_id)
    assert led.get_body(recs[0].trm_id)
    led.close()


def test_call_counts_for_hot_tool_learning(ledger):
    ledger.commit(
        events=[LedgerEvent("decision", server="git", tool="git_log")] * 3
        + [LedgerEvent("decision", server="fs", tool="read")]
    )
    ledger.commit(events=[LedgerEvent("recall", server="git", tool="git_log")])
    assert ledger.call_counts() == {("git", "git_log"): 3, ("fs", "read"): 1}
    assert ledger.call_counts(since=1e12) == {}


def test_recall_and_expand_events(ledger):
    ledger.record_recall("s1", "trm_x", ok=True, chars_out=10, detail={"style": "range"})
    ledger.record_expand("s1", "abc", ok=False)
    kinds = [(e["kind"], e["verdict"], e["ref_id"]) for e in ledger.events()]
    assert kinds == [("recall", "ok", "trm_x"), ("expand", "error", "abc")]


def test_session_scope(where):
    led = Ledger.open(LedgerSettings(scope="session"), where)
    rec = record(session_id="mine")
    led.commit(bodies=[rec])
    assert led.get_body(rec.trm_id, session_id="mine") == BODY
    with pytest.raises(UnknownId, match="another session"):
        led.get_body(rec.trm_id, session_id="theirs")
    led.close()


def test_concurrent_commits_from_threads(ledger):
    def work(i):
        for j in range(20):
            ledger.commit(
                bodies=[record({"content": [{"type": "text", "text": f"{i}-{j}"}]})], events=[LedgerEvent("decision")]
            )

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.counts()["bodies"] == 80


def decision(n):
    return LedgerEvent("decision", session_id="s1", server="srv", tool=f"t{n}", verdict="keep", reason="small")


def test_deferred_events_are_written_in_call_order_and_seen_by_readers(ledger):
    ledger.record_later(decision(1))
    ledger.record_later(decision(2))
    ledger.commit(bodies=[record()], events=[decision(3)])  # a synchronous commit drains the queue first
    ledger.record_later(decision(4))
    assert [e["tool"] for e in ledger.events(kinds=["decision"])] == ["t1", "t2", "t3", "t4"]


def test_deferred_events_reach_the_file_without_a_reader(where):
    led = Ledger.open(LedgerSettings(), where)
    led.record_later(decision(1))
    other = Ledger.open(LedgerSettings(), where)  # another process's view: it cannot flush led's queue
    for _ in range(100):  # the background writer batches every 0.25 s
        if len(list(other.events())) == 1:
            break
        threading.Event().wait(0.05)
    assert [e["tool"] for e in other.events()] == ["t1"]
    other.close()
    led.close()


def test_deferred_events_survive_a_locked_ledger_and_close_flushes_them(tmp_path):
    path = tmp_path / "l.db"
    led = Ledger.open(LedgerSettings(busy_timeout_s=0.1), path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    led.record_later(decision(1))
    with pytest.raises(LedgerWriteError, match="locked"):
        led.flush()
    other.execute("ROLLBACK")
    led.record_later(decision(2))
    led.close()
    reopened = Ledger.open(LedgerSettings(), path)
    assert [e["tool"] for e in reopened.events()] == ["t1", "t2"]
    reopened.close()


def test_a_ledger_from_before_the_codec_column_is_migrated_and_keeps_its_bodies(tmp_path):
    import zlib

    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE bodies (id TEXT PRIMARY KEY, server TEXT, tool TEXT, arguments TEXT, session_id TEXT, body BLOB,"
        " raw_bytes INTEGER, stored_bytes INTEGER, chars INTEGER, created_at FLOAT, last_used_at FLOAT);"
        "CREATE TABLE stash (hash TEXT PRIMARY KEY, original BLOB, chars INTEGER, created_at FLOAT, last_used_at FLOAT);"
    )
    # ids as that era wrote them: sha256 of the body bytes, before trm ids moved to BLAKE3
    old_id = "trm_" + hashlib.sha256(b'{"content":[]}').hexdigest()[:16]
    old.execute(
        "INSERT INTO bodies VALUES (?, 's', 't', '{}', 's1', ?, 2, 2, 2, 0, 0)",
        (old_id, zlib.compress(b'{"content":[]}')),
    )
    old.execute("INSERT INTO stash VALUES (?, ?, 5, 0, 0)", (cg_hash("hello"), zlib.compress(b"hello")))
    old.commit()
    old.close()
    led = Ledger.open(LedgerSettings(), path)
    assert old_id != trm_id_for(b'{"content":[]}')
    assert led.get_body(old_id) == {"content": []}
    assert led.get_stash(cg_hash("hello")) == "hello"
    led.commit(bodies=[record()])  # writes work again: before, every write failed on the missing column
    assert led.counts()["bodies"] == 2
    led.close()


def _schema(path):
    with sqlite3.connect(path) as conn:
        return sorted(row for row in conn.execute("SELECT type, name, sql FROM sqlite_master") if row[2])


def test_an_up_to_date_ledger_opens_without_sqlite_utils_and_a_partial_one_is_completed(tmp_path):
    path = tmp_path / "l.db"
    Ledger.open(LedgerSettings(), path).close()
    fresh = _schema(path)
    with sqlite3.connect(path) as conn:
        assert sqlite_schema_is_current(conn)
    # A process opening a ledger it has seen before checks the schema with plain queries only.
    opened = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from offload_mcp.store import Ledger
                from offload_mcp.store.settings import LedgerSettings
                led = Ledger.open(LedgerSettings(), {str(path)!r})
                print(led.counts()["bodies"], "sqlite_utils" in sys.modules)
                """
            ),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert opened.stdout.split() == ["0", "False"], opened.stderr
    for damage in (
        "DROP INDEX idx_events_kind_at",
        "DELETE FROM meta WHERE key = 'schema_version'",
        "DROP TABLE tombstones",
        "ALTER TABLE stash DROP COLUMN codec",
    ):
        with sqlite3.connect(path) as conn:
            conn.execute(damage)
            assert not sqlite_schema_is_current(conn), damage
        Ledger.open(LedgerSettings(), path).close()
        with sqlite3.connect(path) as conn:
            assert sqlite_schema_is_current(conn), damage
        if not damage.startswith("ALTER"):  # an added column goes last, after `created_at`, as it did before
            assert _schema(path) == fresh, damage


def test_commit_takes_a_generator_whole(where):
    """`bodies` is read three times (rows, calls, owners): a generator must not lose the calls rows."""
    led = Ledger.open(LedgerSettings(scope="session"), where)
    recs = [record({"content": [{"type": "text", "text": f"gen {i}"}]}, session_id=f"s{i}") for i in range(3)]
    led.commit(bodies=(r for r in recs), stash={cg_hash("cut"): "cut"}, events=(e for e in [decision(1)]))
    for i, r in enumerate(recs):
        assert led.get_body(r.trm_id, session_id=f"s{i}")["content"][0]["text"] == f"gen {i}"  # the calls row is there
    assert led.get_stash(cg_hash("cut"), session_id="s2") == "cut"  # so are the marker's owners
    assert [e["tool"] for e in led.events()] == ["t1"]
    led.close()


SAME_RESULT_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from offload_mcp.store import Ledger, BodyRecord, LedgerEvent
    led = Ledger.open(None, sys.argv[1])
    start = float(sys.argv[2])
    time.sleep(max(0.0, start - time.time()))
    for i in range(20):
        r = BodyRecord.of({"content": [{"type": "text", "text": f"same {i}" * 500}]}, server="s", tool="t", arguments={}, session_id=sys.argv[3], chars=1)
        led.commit(bodies=[r], stash={f"{i:016x}": f"cut {i}"}, events=[LedgerEvent("decision", session_id=sys.argv[3])])
    led.close()
    print("ok")
    """
)


def test_two_writers_commit_the_same_results_at_once(where):
    """Content-hash ids: two processes (replicas) storing the same results at the same moment both
    succeed and leave one row each, readable by both sessions' calls."""
    import time

    start = str(time.time() + 1.5)  # both interpreters are up by then: the commits overlap
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_RESULT_SCRIPT, str(where), start, f"w{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-1500:] for _, err in outs]
    led = Ledger.open(LedgerSettings(scope="session"), where)
    counts = led.counts()
    assert (counts["bodies"], counts["stash"]) == (20, 20)
    r = BodyRecord.of(
        {"content": [{"type": "text", "text": "same 7" * 500}]},
        server="s",
        tool="t",
        arguments={},
        session_id="x",
        chars=1,
    )
    assert led.get_body(r.trm_id, session_id="w0") == led.get_body(r.trm_id, session_id="w1")
    assert len(list(led.events(kinds=["decision"]))) == 40
    led.close()


def test_two_threads_commit_the_same_result_at_once(where):
    handles = [Ledger.open(LedgerSettings(), where) for _ in range(2)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(led):
        try:
            for i in range(10):
                barrier.wait(timeout=10)
                led.commit(
                    bodies=[record({"content": [{"type": "text", "text": f"both {i}"}]})], stash={f"{i:016x}": "x"}
                )
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert handles[0].counts()["bodies"] == 10 and handles[1].counts()["stash"] == 10
    for h in handles:
        h.close()
