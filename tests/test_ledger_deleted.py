"""A ledger file deleted (or replaced) while the proxy serves (issue 13 #3).

Before: after `rm ledger.db*` the proxy kept handing out stubs and markers written to the
unlinked file, and a fresh process knew none of them. Now the backend notices (one stat against
the inode it opened, before every operation) and recreates the file from its still-open copy, so
every id handed out before and after stays readable by future processes; when the file cannot
be recreated, results pass through untouched with a warning.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from offload_mcp.config import OffloadSettings
from offload_mcp.session import cg_hash
from offload_mcp.store import Ledger
from support.ledgers import assert_untouched, big_result, call, make_shaper, make_text, record
from support.proxy import stdio_params, text_of
from support.servers import fixture_cmd

TRM = re.compile(r"trm_[0-9a-f]{16}")


def remove_ledger(path: Path) -> None:
    """`rm ledger.db*`"""
    for item in path.parent.glob(path.name + "*"):
        item.unlink()


async def test_rm_while_serving_loses_nothing_through_the_real_proxy(tmp_path: Path) -> None:
    path = tmp_path / "state" / "ledger.db"
    log = tmp_path / "proxy.log"
    ids: dict[str, int] = {}
    with log.open("w") as errlog:
        async with stdio_client(stdio_params(["--ledger", str(path), "--", *fixture_cmd()], None), errlog=errlog) as (
            read,
            write,
        ):
            async with ClientSession(read, write) as s:
                await s.initialize()
                for size in (200_000, 210_000):
                    ids[TRM.findall(text_of(await s.call_tool("make_text", {"size": size})))[0]] = size
                remove_ledger(path)
                assert not path.exists()
                ids[TRM.findall(text_of(await s.call_tool("make_text", {"size": 220_000})))[0]] = 220_000
                shutil.rmtree(path.parent)  # the whole directory this time
                ids[TRM.findall(text_of(await s.call_tool("make_text", {"size": 230_000})))[0]] = 230_000
    assert len(ids) == 4
    fresh = Ledger.open(path=path)  # a future process: every id handed out is there, byte for byte
    for trm_id, size in ids.items():
        assert fresh.get_body(trm_id)["content"][0]["text"] == make_text(size)
    fresh.close()
    assert "was deleted or replaced while serving" in log.read_text()


def test_two_handles_on_a_deleted_file_merge_what_they_hold(tmp_path: Path) -> None:
    """Two proxies on one file: the first to notice recreates it, the other merges into it."""
    path = tmp_path / "l.db"
    a, b = Ledger.open(path=path), Ledger.open(path=path)
    ra = record({"content": [{"type": "text", "text": "from a"}]})
    a.commit(bodies=[ra], stash={cg_hash("cut a"): "cut a"})
    remove_ledger(path)
    rb = record({"content": [{"type": "text", "text": "from b"}]})
    b.commit(bodies=[rb])  # b notices first: recreates from its copy (which holds ra too)
    rc = record({"content": [{"type": "text", "text": "from a, later"}]})
    a.commit(bodies=[rc])  # a finds a new file it did not make: merges into it
    a.close()
    b.close()
    fresh = Ledger.open(path=path)
    assert [fresh.get_body(r.trm_id)["content"][0]["text"] for r in (ra, rb, rc)] == [
        "from a",
        "from b",
        "from a, later",
    ]
    assert fresh.get_stash(cg_hash("cut a")) == "cut a"
    # Every entry is searchable in the file that survived (merged rows are queued for its index).
    page = fresh.search(["from"], owner=None, limit=5)
    assert {hit.ref for hit in page.hits} == {ra.trm_id, rb.trm_id, rc.trm_id} and page.queued == 0
    fresh.close()


def test_a_ledger_that_cannot_be_recreated_passes_results_through(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "l.db"
    ledger = Ledger.open(path=path)
    shaper = make_shaper(OffloadSettings(), ledger)
    assert shaper.shape_with_report(call(1), big_result(1))[1].verdict == "offload"
    remove_ledger(path)
    path.mkdir()  # something else now sits where the file was: it cannot be recreated
    with caplog.at_level(logging.WARNING):
        original = big_result(2)
        out, report = shaper.shape_with_report(call(2), original)
    assert_untouched(out, original)  # never an id that only an unlinked file holds
    assert report.reason == "ledger_error" and "deleted while serving" in (report.warning or "")
    ledger.close()
