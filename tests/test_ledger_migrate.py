"""`offload-mcp ledger migrate --from SQLITE --to TARGET`, run as the real command.

The target is a fresh schema on a real PostgreSQL (and, for the same checks, another SQLite
file). A source ledger with bodies, stash entries, ownership under two principals and events is
copied; the target serves the same bytes, keeps who owns what, holds the same events, and
the command refuses a non-empty target without --merge, a missing source and an unknown
URL scheme with a clear message, changing nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from offload_mcp.session import cg_hash
from offload_mcp.store import BodyRecord, Ledger, LedgerEvent, UnknownId
from offload_mcp.store.settings import LedgerSettings
from support.decision_records import decision_record
from support.proxy import OFFLOAD_MCP, proxy_env
from support.zygote import prewarmed


def build_source(path: Path) -> tuple[list[str], list[str]]:
    ledger = Ledger.open(LedgerSettings(), path=path)
    ids, hashes = [], []
    try:
        for i in range(30):
            owner = "principal:alice" if i % 2 else "principal:bob"
            body = {"content": [{"type": "text", "text": f"result {i}: " + "x" * (1000 + i * 37)}]}
            record = BodyRecord.of(
                body, server="git", tool="git_log", arguments={"n": i}, session_id=f"s{i}", chars=1000 + i
            )
            cut = f"cut {i} " + "y" * (500 + i)
            stash = {cg_hash(cut): cut}
            event = LedgerEvent(
                "decision",
                session_id=f"s{i}",
                server="git",
                tool="git_log",
                verdict="offload",
                reason="gate",
                ref_id=record.trm_id,
            )
            ledger.commit(bodies=[record], stash=stash, events=[event], owner=owner)
            ids.append(record.trm_id)
            hashes.append(cg_hash(cut))
    finally:
        ledger.close()
    return ids, hashes


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        prewarmed([OFFLOAD_MCP, "ledger", "migrate", *args]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=120,
    )


@pytest.fixture(params=["postgresql", "sqlite"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ledger to copy into: a fresh schema on the real PostgreSQL (conftest), or another file."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "target.db")


def test_migrate_copies_bytes_ownership_and_events(tmp_path: Path, target: str) -> None:
    source = tmp_path / "source.db"
    ids, hashes = build_source(source)
    done = run("--from", str(source), "--to", target)
    assert done.returncode == 0, done.stderr
    assert (
        "copied 30 bodies, 30 stash entries, 60 ownership rows, 30 events; verified 60 entries byte for byte"
        in done.stdout
    )

    src = Ledger.open(LedgerSettings(), path=source)
    dst = Ledger.open(LedgerSettings(scope="principal"), path=target)
    try:
        for i, (trm_id, hash_) in enumerate(zip(ids, hashes, strict=True)):
            owner, other = ("principal:alice", "principal:bob") if i % 2 else ("principal:bob", "principal:alice")
            assert dst.get_body_json(trm_id, session_id=owner) == src.get_body_json(trm_id)
            assert dst.get_stash(hash_, session_id=owner) == src.get_stash(hash_)
            with pytest.raises(UnknownId, match="belongs to another principal"):
                dst.get_body_json(trm_id, session_id=other)
            with pytest.raises(UnknownId, match="belongs to another principal"):
                dst.get_stash(hash_, session_id=other)
        assert [e["ref_id"] for e in dst.events(kinds=["decision"])] == ids
    finally:
        src.close()
        dst.close()

    # A second run into the now non-empty target is refused unless --merge; --merge is idempotent for bodies.
    again = run("--from", str(source), "--to", target)
    assert (
        again.returncode == 2  # bad usage: the command line has to change
        and "the target ledger is not empty (30 bodies, 30 stash entries)" in again.stderr
        and "--merge" in again.stderr
    )
    merged = run("--from", str(source), "--to", target, "--merge")
    assert merged.returncode == 0 and "verified 60 entries" in merged.stdout, merged.stderr


def test_a_damaged_source_row_is_copied_and_named_not_a_traceback(tmp_path: Path) -> None:
    # A row whose bytes decompress into another body (or not at all) made the read-back check raise out of
    # migrate with a traceback; it is a failed check (exit 1) that names each damaged id.
    import sqlite3

    from offload_mcp.store import codec

    source = tmp_path / "source.db"
    ids, hashes = build_source(source)
    conn = sqlite3.connect(source)
    conn.execute("UPDATE bodies SET body = ? WHERE id = ?", (codec.compress(b'{"content":[]}'), ids[3]))
    conn.execute("UPDATE stash SET original = x'00' WHERE hash = ?", (hashes[5],))
    conn.commit()
    conn.close()
    done = run("--from", str(source), "--to", str(tmp_path / "target.db"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "2 entries differ after the copy" in done.stderr
    damaged = "(damaged in the source: its bytes do not read back as what it names)"
    assert f"{ids[3]} {damaged}" in done.stderr and f"<<cg:{hashes[5]}>> {damaged}" in done.stderr
    target = Ledger.open(LedgerSettings(), path=tmp_path / "target.db")
    try:  # every other entry arrived whole
        assert target.get_body_json(ids[4]) and target.get_stash(hashes[4])
    finally:
        target.close()


def test_migrate_refuses_bad_input_clearly(tmp_path: Path, target: str) -> None:
    """Bad usage exits 2 (it exited 1, as a failed copy does), with the same messages."""
    missing = run("--from", str(tmp_path / "nope.db"), "--to", target)
    assert missing.returncode == 2 and f"--from {tmp_path / 'nope.db'}: no such ledger file" in missing.stderr
    source = tmp_path / "source.db"
    build_source(source)
    bad_url = run("--from", str(source), "--to", "mysql://u@h/db")
    assert bad_url.returncode == 2 and "unsupported scheme 'mysql'" in bad_url.stderr, bad_url.stderr
    same = run("--from", str(source), "--to", str(source))
    assert same.returncode == 2 and "--from and --to name the same ledger" in same.stderr
    directory = run("--from", str(source), "--to", str(tmp_path))
    assert directory.returncode == 2 and f"{tmp_path} is a directory" in directory.stderr
    for done in (missing, bad_url, same, directory):
        assert "Traceback" not in done.stderr and done.stdout == ""
    if "://" not in target:
        assert not Path(target).exists()


def test_help_says_what_migrate_does_to_the_source(tmp_path: Path) -> None:
    """The help said the source "is left as it was (its schema is brought up to date)"; what happens is
    that nothing is removed, but the source is written to: it is put in WAL mode and every entry read
    back for the check is marked as used now."""
    import sqlite3

    source = tmp_path / "source.db"
    ids, hashes = build_source(source)
    conn = sqlite3.connect(source, isolation_level=None)
    conn.execute("UPDATE bodies SET last_used_at = 1000")
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    conn.close()
    done = run("--from", str(source), "--to", str(tmp_path / "target.db"))
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(source)
    try:
        assert sorted(row[0] for row in conn.execute("SELECT id FROM bodies")) == sorted(ids)
        assert conn.execute("SELECT count(*) FROM stash").fetchone()[0] == len(hashes)
        assert conn.execute("SELECT min(last_used_at) FROM bodies").fetchone()[0] > 1000
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    text = " ".join(run("--help").stdout.split())
    assert "left as it was" not in text
    for said in ("Nothing is removed from the source", "switched to WAL mode", "marks it as used now"):
        assert said in text


def target_events(target: str) -> int:
    ledger = Ledger.open(LedgerSettings(), path=target)
    try:
        return sum(1 for _ in ledger.events())
    finally:
        ledger.close()


def test_migrating_again_with_merge_counts_each_event_once(tmp_path: Path, target: str) -> None:
    """Issue 40 D7: a run copied again with --merge counted every event twice (786 -> 1,572)."""
    source = tmp_path / "source.db"
    build_source(source)
    assert run("--from", str(source), "--to", target).returncode == 0
    assert target_events(target) == 30
    again = run("--from", str(source), "--to", target, "--merge")
    assert again.returncode == 0, again.stderr
    assert "0 events;" in again.stdout and "30 events already in the target not copied again" in again.stdout
    assert target_events(target) == 30


def test_an_interrupted_migration_says_where_it_stopped_and_finishes_with_merge(
    tmp_path: Path, postgres: Any, pg_url: str
) -> None:
    """The events table locked by another session (a replica, an operator): the run stops when its
    lock wait ends, says what it had copied, and the same command with --merge finishes it, each event once."""
    import psycopg

    source = tmp_path / "source.db"
    build_source(source)
    Ledger.open(LedgerSettings(), path=pg_url, connect_now=True).close()  # the schema exists before the lock
    schema = pg_url.rsplit("%3D", 1)[1]
    with psycopg.connect(postgres.url()) as holder:
        holder.execute(f"LOCK TABLE {schema}.events IN EXCLUSIVE MODE")  # reads pass, writes wait
        stopped = run("--from", str(source), "--to", pg_url)
    assert stopped.returncode == 1, stopped.stderr
    assert (
        "stopped after copying 30 bodies, 30 stash entries and 0 events (of 30 in the source); "
        "run the same command with --merge to finish" in stopped.stderr
    ), stopped.stderr
    finished = run("--from", str(source), "--to", pg_url, "--merge")
    assert finished.returncode == 0, finished.stderr
    assert "30 events;" in finished.stdout and "verified 60 entries" in finished.stdout, finished.stdout
    assert target_events(pg_url) == 30


def test_a_migration_stopped_by_sigterm_says_where_it_stopped(tmp_path: Path, postgres: Any, pg_url: str) -> None:
    """Before, a killed run said nothing about where it stopped. Stopped (SIGTERM) while its events wait on
    a lock, it says what is in the target and how to finish; the same command with --merge then does."""
    import signal
    import time

    import psycopg

    source = tmp_path / "source.db"
    build_source(source)
    Ledger.open(LedgerSettings(), path=pg_url, connect_now=True).close()
    schema = pg_url.rsplit("%3D", 1)[1]
    with psycopg.connect(postgres.url()) as holder:
        holder.execute(f"LOCK TABLE {schema}.events IN EXCLUSIVE MODE")
        running = subprocess.Popen(
            [OFFLOAD_MCP, "ledger", "migrate", "--from", str(source), "--to", pg_url],  # signalled: not pre-warmed
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=proxy_env(),
        )
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO events%'"
        )
        deadline = time.monotonic() + 30
        while postgres.execute(waiting)[0][0] == 0 and running.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        running.send_signal(signal.SIGTERM)
        out, err = running.communicate(timeout=60)
    assert running.returncode == 130, err
    assert (
        "interrupted: stopped after copying 30 bodies, 30 stash entries and 0 events (of 30 in the source); "
        "run the same command with --merge to finish" in err
    ), err
    finished = run("--from", str(source), "--to", pg_url, "--merge")
    assert finished.returncode == 0 and "30 events;" in finished.stdout, finished.stderr
    assert target_events(pg_url) == 30


def _age_events(where: Path | str, seconds: float) -> None:
    """Move every event back in time (a ledger's history: old enough for a stats checkpoint to count)."""
    sql = "UPDATE events SET at = at - ?"
    if isinstance(where, Path) or not str(where).startswith("postgresql"):
        import sqlite3

        with sqlite3.connect(where) as conn:
            conn.execute(sql, (seconds,))
        return
    import psycopg

    with psycopg.connect(str(where), autocommit=True) as conn:
        conn.execute(sql.replace("?", "%s"), (seconds,))


def test_events_merged_into_a_ledger_with_a_stats_checkpoint_are_counted(
    tmp_path: Path, target: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The merged events are older than the target's checkpoint but written after it: stats counts them
    (the checkpoint is rebuilt), byte for byte as a fold of every event."""
    import logging

    import orjson

    from offload_mcp.analysis.reports import report_from_ledger

    source = tmp_path / "source.db"
    for where, sessions in ((source, [f"m{i}" for i in range(10)]), (target, [f"t{i}" for i in range(5)])):
        ledger = Ledger.open(LedgerSettings(), path=where)
        try:
            ledger.commit(events=[decision_record(s, "srv", "tool", chars_in=900).ledger_event() for s in sessions])
        finally:
            ledger.close()
    _age_events(source, 86400)
    _age_events(target, 2 * 86400)
    written = subprocess.run(
        prewarmed([OFFLOAD_MCP, "ledger", "checkpoint", target]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    assert run("--from", str(source), "--to", target, "--merge").returncode == 0
    dst = Ledger.open(LedgerSettings(), path=target)
    try:
        with caplog.at_level(logging.INFO, logger="offload_mcp.analysis.stats_checkpoint"):
            report = report_from_ledger(dst)
        assert "an event before it was written after it" in caplog.text
        assert report.totals.results == 15
        whole = report_from_ledger(dst, checkpoint=False)
        assert orjson.dumps(report.as_dict()) == orjson.dumps(whole.as_dict())
    finally:
        dst.close()
