"""kill -9 of the proxy in the middle of heavy offloading, repeated on one ledger file.

Promise: after each kill the ledger opens cleanly (PRAGMA integrity_check) and every trm_ id
a client received before the kill is recallable, byte for byte; a restarted proxy serves on.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio

from support.proxy import TRM, connect, recall_whole, running_proxy, text_of
from support.servers import HOSTILE, ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

ROUNDS = 3
CLIENTS = 4
PER_ROUND = 15
SIZE = 150_000


async def test_kill_9_during_heavy_offloading_loses_no_id_a_client_received(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    config = write_config(tmp_path, {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}})
    received: dict[str, int] = {}  # trm_ id -> seed, only ids a client actually got back

    for round_ in range(ROUNDS):
        with running_proxy(["-c", str(config), "--ledger", str(ledger)]) as proxy:
            enough = anyio.Event()
            got_this_round = 0

            async def client(c: int, round_: int, enough: anyio.Event) -> None:
                nonlocal got_this_round
                try:
                    async with connect(proxy.url, "streamable-http") as s:
                        for i in range(10_000):
                            seed = round_ * 1_000_000 + c * 10_000 + i
                            result = await s.call_tool("chunks", {"size": SIZE, "seed": seed})
                            found = TRM.search(text_of(result))
                            assert found, text_of(result)[:200]
                            received[found.group(0)] = seed
                            got_this_round += 1
                            if got_this_round >= PER_ROUND:
                                enough.set()
                except Exception:  # the proxy was killed under us: expected
                    return

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    for c in range(CLIENTS):
                        tg.start_soon(client, c, round_, enough)
                    await enough.wait()
                    proxy.proc.send_signal(signal.SIGKILL)  # mid-stream: other calls are in flight
                    proxy.proc.wait(10)
            assert proxy.proc.returncode == -signal.SIGKILL

        from offload_mcp.store import Ledger

        checked = Ledger.open(path=ledger)
        try:
            assert checked.integrity() == "ok"
            missing = {trm_id for trm_id in received if not checked.has_body(trm_id)}
        finally:
            checked.close()
        assert not missing, f"round {round_}: ids handed out but not in the ledger: {sorted(missing)[:5]}"

    assert len(received) >= ROUNDS * PER_ROUND
    # A fresh proxy on the same file recalls every id, byte for byte (a sample through the tool,
    # all of them through the ledger).
    from offload_mcp.store import Ledger

    opened = Ledger.open(path=ledger)
    try:
        for trm_id, seed in received.items():
            expected = [{"type": "text", "text": b} for b in hostile_server.chunk_blocks(SIZE, seed)]
            assert opened.get_body(trm_id)["content"] == expected
    finally:
        opened.close()
    with running_proxy(["-c", str(config), "--ledger", str(ledger)]) as proxy:
        async with connect(proxy.url, "streamable-http") as s:
            for trm_id, seed in list(received.items())[:: max(1, len(received) // 5)]:
                assert await recall_whole(s, trm_id) == "\n".join(hostile_server.chunk_blocks(SIZE, seed))
