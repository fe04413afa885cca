"""The ledger under faults: read-only, full, locked, shared by two proxies.

Promise: when the ledger cannot be written the result passes through unmodified (byte for
byte what the server sent) with a warning naming the cause; never a stub or marker without
its body; two processes never corrupt each other's writes.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import sys
import threading
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from offload_mcp.config import OffloadSettings
from offload_mcp.shaping import dump_result
from offload_mcp.store import Ledger
from support.ledgers import assert_untouched, big_result, call, make_shaper, make_text
from support.proxy import proxy_session, recall_whole, stdio_params, text_of
from support.servers import PYTHON, ROOT, fixture_cmd, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

HOSTILE = [PYTHON, str(ROOT / "tests" / "fixtures" / "hostile_server.py")]

TRM = re.compile(r"trm_[0-9a-f]{16}")


# ---- in-process: the real shaper on a real SQLite file put into each fault ----------------


def test_baseline_a_big_result_is_offloaded_and_recallable(tmp_path: Path) -> None:
    ledger = Ledger.open(path=tmp_path / "l.db")
    out, report = make_shaper(OffloadSettings(), ledger).shape_with_report(call(), big_result())
    assert report.verdict == "offload" and report.trm_id and report.trm_id in text_of(out)
    assert ledger.get_body(report.trm_id) == dump_result(big_result())


def test_a_read_only_ledger_passes_results_through_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "l.db"
    Ledger.open(path=path).close()
    ledger = Ledger.open(OffloadSettings().ledger, path, read_only=True)
    shaper = make_shaper(OffloadSettings(), ledger)
    with caplog.at_level(logging.WARNING):
        for seed in range(3):
            original = big_result(seed)
            out, report = shaper.shape_with_report(call(seed), original)
            assert_untouched(out, original)
            assert report.reason == "ledger_error" and "read-only" in (report.warning or "")
    assert "passed through unmodified" in caplog.text and "read-only" in caplog.text


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes through file modes; the in-process read-only test covers this"
)
async def test_a_read_only_ledger_file_behind_the_real_proxy(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    Ledger.open(path=path).close()
    path.chmod(0o400)
    async with proxy_session(["--ledger", str(path), "--", *fixture_cmd()]) as s:
        result = await s.call_tool("make_text", {"size": 90_000})
        assert text_of(result) == make_text(90_000)


async def test_a_ledger_that_cannot_be_opened_is_named_with_its_reason_by_recall_and_expand(tmp_path: Path) -> None:
    # A file that is not a database: results pass through, and recall said only "no ledger is open".
    path = tmp_path / "l.db"
    path.write_bytes(os.urandom(64 * 1024))
    async with proxy_session(["--ledger", str(path), "--", *fixture_cmd()]) as s:
        assert text_of(await s.call_tool("make_text", {"size": 90_000})) == make_text(90_000)
        for tool, args in (
            ("recall_tool_result", {"mem_id": "trm_0123456789abcdef"}),
            ("context_guru_expand", {"marker": "<<cg:0123456789abcdef>>"}),
        ):
            answer = await s.call_tool(tool, args)
            text = text_of(answer)
            assert answer.is_error and "no ledger is open in this proxy (" in text, text
            # The reason, with the ledger named only as "the ledger" (issue 40 D2): its location stays in the log.
            assert "the ledger: file is not a database" in text and str(path) not in text, text


def test_a_full_disk_passes_results_through_and_recovers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ledger = Ledger.open(path=tmp_path / "l.db")
    shaper = make_shaper(OffloadSettings(), ledger)
    kept = shaper.shape_with_report(call(100), big_result(100))[1].trm_id
    ledger.sqlite.cap_file_size(2 * 4096)  # the "disk" has two pages left
    with caplog.at_level(logging.WARNING):
        for seed in range(3):
            original = big_result(seed)
            out, report = shaper.shape_with_report(call(seed), original)
            assert_untouched(out, original)
            assert report.reason == "ledger_error" and "full" in (report.warning or "")
    assert "disk (or the database size limit) is full" in caplog.text
    # What was committed before the disk filled is intact, and space coming back restores offloading.
    assert ledger.get_body(kept) == dump_result(big_result(100))
    ledger.sqlite.cap_file_size(None)
    out, report = shaper.shape_with_report(call(7), big_result(7, 400_000))
    assert report.verdict == "offload" and ledger.get_body(report.trm_id) == dump_result(big_result(7, 400_000))
    assert ledger.integrity() == "ok"


def test_a_locked_ledger_passes_results_through_then_recovers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "l.db"
    settings = OffloadSettings.model_validate({"ledger": {"busy_timeout_s": 0.2}})
    ledger = Ledger.open(settings.ledger, path)
    shaper = make_shaper(settings, ledger)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with caplog.at_level(logging.WARNING):
            original = big_result(1)
            out, report = shaper.shape_with_report(call(1), original)
            assert_untouched(out, original)
            assert "locked by another process" in (report.warning or "")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    out, report = shaper.shape_with_report(call(1), big_result(1))
    assert report.verdict == "offload" and ledger.get_body(report.trm_id) == dump_result(big_result(1))


def test_threads_sharing_one_ledger_lose_nothing(tmp_path: Path) -> None:
    ledger = Ledger.open(path=tmp_path / "l.db")
    shaper = make_shaper(OffloadSettings(), ledger)
    ids: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(15):
                seed = worker * 100 + i
                out, report = shaper.shape_with_report(call(seed, f"s{worker}"), big_result(seed, 120_000))
                assert report.verdict == "offload" and report.trm_id in text_of(out)
                ids[seed] = report.trm_id
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(ids) == 90
    for seed, trm_id in ids.items():
        assert ledger.get_body(trm_id) == dump_result(big_result(seed, 120_000))


# ---- across processes: real proxies on one file ---------------------------------------


async def _offload_many(s: ClientSession, seeds: range) -> dict[int, str]:
    ids: dict[int, str] = {}
    for seed in seeds:
        result = await s.call_tool("chunks", {"size": 150_000, "seed": seed})
        found = TRM.search(text_of(result))
        assert found, text_of(result)[:200]
        ids[seed] = found.group(0)
    return ids


async def test_two_proxy_processes_share_one_ledger_without_corrupting_it(tmp_path: Path) -> None:
    ledger = tmp_path / "shared.db"
    args = ["--ledger", str(ledger), "--", *HOSTILE]
    results: dict[str, dict[int, str]] = {}
    with anyio.fail_after(120):
        async with proxy_session(args) as a, proxy_session(args) as b:

            async def run(name: str, s: ClientSession, seeds: range) -> None:
                results[name] = await _offload_many(s, seeds)

            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "a", a, range(0, 12))
                tg.start_soon(run, "b", b, range(100, 112))
            # Each process recalls what the other stored, byte for byte.
            for seed, trm_id in results["b"].items():
                assert await recall_whole(a, trm_id, max_chars=100_000) == "\n".join(
                    hostile_server.chunk_blocks(150_000, seed)
                )
            for seed, trm_id in results["a"].items():
                assert await recall_whole(b, trm_id, max_chars=100_000) == "\n".join(
                    hostile_server.chunk_blocks(150_000, seed)
                )
    checked = Ledger.open(path=ledger)
    assert checked.integrity() == "ok"
    assert all(checked.has_body(trm_id) for trm_id in set(results["a"].values()) | set(results["b"].values()))
    checked.close()


async def test_a_lock_held_by_another_process_makes_the_proxy_pass_results_through(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    config = write_config(
        tmp_path, {"fx": {"command": HOSTILE[0], "args": HOSTILE[1:]}}, {"ledger": {"busy_timeout_s": 0.3}}
    )
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        async with stdio_client(stdio_params(["-c", str(config), "--ledger", str(path)], None), errlog=errlog) as (
            read,
            write,
        ):
            async with ClientSession(read, write) as s:
                await s.initialize()
                holder = sqlite3.connect(path, isolation_level=None)
                holder.execute("BEGIN EXCLUSIVE")
                try:
                    locked = await s.call_tool("chunks", {"size": 90_000, "seed": 1})
                    assert [b.text for b in locked.content] == hostile_server.chunk_blocks(90_000, 1)  # untouched
                finally:
                    holder.execute("ROLLBACK")
                    holder.close()
                freed = await s.call_tool("chunks", {"size": 200_000, "seed": 2})
                found = TRM.search(text_of(freed))
                assert found and await recall_whole(s, found.group(0), max_chars=100_000) == "\n".join(
                    hostile_server.chunk_blocks(200_000, 2)
                )
    text = log.read_text()
    assert "passed through unmodified" in text and "locked by another process" in text


async def test_a_corrupt_row_is_reported_as_corrupt_with_the_call_that_helps(tmp_path: Path) -> None:
    # It said "the ledger cannot be read right now (...); try the recall again shortly": a retry reads the
    # same bytes. An undecompressable body was worse: "recall_tool_result failed inside offload-mcp".
    path = tmp_path / "l.db"
    async with proxy_session(["--ledger", str(path), "--", *HOSTILE]) as s:
        ids = []
        for seed in (1, 2, 3, 4):
            found = TRM.search(text_of(await s.call_tool("chunks", {"size": 200_000, "seed": seed})))
            assert found
            ids.append(found.group(0))
    outside = sqlite3.connect(path)
    outside.execute("UPDATE bodies SET codec = CAST(x'ff80' AS TEXT) WHERE id = ?", (ids[0],))  # not UTF-8
    outside.execute("UPDATE bodies SET body = x'00' WHERE id = ?", (ids[1],))
    # another result's intact frame: it decompresses, and recall answered with the wrong result
    outside.execute("UPDATE bodies SET body = (SELECT body FROM bodies WHERE id = ?) WHERE id = ?", (ids[3], ids[2]))
    outside.commit()
    outside.close()
    causes = ["Could not decode to UTF-8 column 'codec'", "does not decompress", "does not match its id (damaged)"]
    async with proxy_session(["--ledger", str(path), "--", *HOSTILE]) as s:
        assert await recall_whole(s, ids[3], max_chars=100_000) == "\n".join(hostile_server.chunk_blocks(200_000, 4))
        for trm_id, cause in zip(ids[:3], causes, strict=True):
            answer = await s.call_tool("recall_tool_result", {"mem_id": trm_id})
            text = text_of(answer)
            assert answer.is_error and text.startswith(
                f"recall_tool_result: the stored body of {trm_id} cannot be read, the ledger is corrupt ("
            )
            assert cause in text and text.endswith("; call the original tool again for a fresh result"), text
