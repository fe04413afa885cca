"""Load: many concurrent clients over streamable HTTP and SSE, and one long stdio session.

Every client mixes small results with 100 KB+ results from a real downstream process
(tests/fixtures/hostile_server.py, whose `chunks` are offloaded and whose `big` is cut by
reducers). After the run every `trm_` id handed out is read back from the ledger and compared
byte for byte with what the server sent, and every `<<cg:>>` marker restores an exact piece.

CI runs a reduced form. The full form (issue 6 figures) runs with:

    OFFLOAD_MCP_LOAD=full python -m pytest -q -s tests/test_load_http.py

Each test prints one `load:` line with calls/s, the proxy's peak RSS and its fd counts.
"""

from __future__ import annotations

import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.proxy import TRM, connect, recall_whole, running_proxy, text_of
from support.servers import HOSTILE, ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

FULL = os.environ.get("OFFLOAD_MCP_LOAD") == "full"
MARKER = re.compile(r"<<cg:([0-9a-f]{16})>>")


# ---- a proxy process we can measure and kill ------------------------------------------


# ---- the workload ---------------------------------------------------------------------


@dataclass
class Tally:
    calls: int = 0
    small: int = 0
    offloaded: dict[str, tuple[int, int]] = field(default_factory=dict)
    """trm_ id -> (size, seed) of the `chunks` call that produced it."""
    markers: dict[str, int] = field(default_factory=dict)
    """cg hash -> size of the `big` call whose output it cut."""
    kept_big: int = 0


async def client_run(url: str, transport: str, client: int, calls: int, sizes: tuple[int, int], tally: Tally) -> None:
    rng = random.Random(client)
    async with connect(url, transport) as s:
        for i in range(calls):
            pick = rng.random()
            if pick < 0.6:
                text = f"c{client}-{i}-" + "x" * rng.randrange(10, 380)
                result = await s.call_tool("echo", {"text": text})
                assert not result.is_error and text_of(result) == text
                tally.small += 1
            elif pick < 0.85:
                size, seed = rng.randrange(*sizes), client * 100_000 + i
                result = await s.call_tool("chunks", {"size": size, "seed": seed})
                assert not result.is_error, text_of(result)[:300]
                found = TRM.search(text_of(result))
                assert found, f"a {size:,}-char result came back without a trm_ id: {text_of(result)[:200]}"
                tally.offloaded[found.group(0)] = (size, seed)
            else:
                size = rng.randrange(*sizes)
                result = await s.call_tool("big", {"size": size})
                assert not result.is_error
                shown = text_of(result)
                hashes = MARKER.findall(shown)
                ids = TRM.findall(shown)
                for h in hashes:
                    tally.markers[h] = size
                for trm_id in ids:
                    tally.offloaded[trm_id] = (size, -1)
                if not hashes and not ids:
                    assert shown == hostile_server.big_text(size)
                    tally.kept_big += 1
            tally.calls += 1


def verify_ledger(ledger_path: Path, tally: Tally) -> None:
    """Every id handed out is in the ledger, byte for byte; every marker restores an exact piece."""
    from offload_mcp.store import Ledger

    ledger = Ledger.open(path=ledger_path)
    try:
        assert ledger.integrity() == "ok"
        for trm_id, (size, seed) in tally.offloaded.items():
            body = ledger.get_body(trm_id)
            if seed >= 0:
                expected = [{"type": "text", "text": b} for b in hostile_server.chunk_blocks(size, seed)]
            else:
                expected = [{"type": "text", "text": hostile_server.big_text(size)}]
            assert body["content"] == expected, trm_id
        for h, size in tally.markers.items():
            assert ledger.get_stash(h) in hostile_server.big_text(size), h
    finally:
        ledger.close()


async def run_load(tmp_path: Path, transport: str, clients: int, calls: int, sizes: tuple[int, int]) -> dict[str, Any]:
    ledger = tmp_path / "ledger.db"
    config = write_config(tmp_path, {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}})
    tally = Tally()
    with running_proxy(["-c", str(config), "--ledger", str(ledger)], transport, prewarm=False) as proxy:
        fds_before = proxy.fds()
        started = time.monotonic()
        with anyio.fail_after(3600 if FULL else 170):
            async with anyio.create_task_group() as tg:
                for c in range(clients):
                    tg.start_soon(client_run, proxy.url, transport, c, calls, sizes, tally)
        elapsed = time.monotonic() - started
        peak_kb = proxy.status("VmHWM")
        await anyio.sleep(1.0)  # let closed sessions finish tearing down
        fds_after = proxy.fds()
        # A sample read back through the recall tool itself, paged, byte for byte.
        async with connect(proxy.url, transport) as s:
            for trm_id, (size, seed) in list(tally.offloaded.items())[:3]:
                if seed >= 0:
                    assert await recall_whole(s, trm_id) == "\n".join(hostile_server.chunk_blocks(size, seed))
        assert not any("Traceback" in line for line in proxy.log), "".join(proxy.log)[-3000:]
    assert tally.calls == clients * calls
    assert tally.offloaded, "the workload produced no offloaded result"
    verify_ledger(ledger, tally)
    figures = {
        "transport": transport,
        "clients": clients,
        "calls": tally.calls,
        "seconds": round(elapsed, 1),
        "calls_per_s": round(tally.calls / elapsed, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "fds_before": fds_before,
        "fds_after": fds_after,
        "offloaded_ids": len(tally.offloaded),
        "markers": len(tally.markers),
        "small": tally.small,
    }
    print("\nload:", " ".join(f"{k}={v}" for k, v in figures.items()))
    return figures


@pytest.mark.slow
async def test_streamable_http_many_clients_lose_nothing(tmp_path: Path) -> None:
    clients, calls, sizes = (50, 200, (100_000, 1_000_001)) if FULL else (10, 12, (100_000, 250_000))
    figures = await run_load(tmp_path, "streamable-http", clients, calls, sizes)
    assert figures["fds_after"] <= figures["fds_before"] + 4
    assert figures["peak_rss_mb"] < (1500 if FULL else 600)


@pytest.mark.slow
async def test_sse_clients_lose_nothing(tmp_path: Path) -> None:
    clients, calls, sizes = (10, 100, (100_000, 1_000_001)) if FULL else (4, 10, (100_000, 200_000))
    figures = await run_load(tmp_path, "sse", clients, calls, sizes)
    assert figures["fds_after"] <= figures["fds_before"] + 4
    assert figures["peak_rss_mb"] < (1500 if FULL else 600)
