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

import pytest

from conftest import OFFLOAD_MCP, proxy_env
from offload_mcp.reducers.base import cg_hash
from offload_mcp.store import BodyRecord, Ledger, LedgerEvent, UnknownId
from offload_mcp.store.settings import LedgerSettings


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
        [OFFLOAD_MCP, "ledger", "migrate", *args], capture_output=True, text=True, env=proxy_env(), timeout=120
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
