"""bench/fidelity_peers.py survives a peer that fails on one record: the error is what the model sees.

The peer here is tests/fixtures/hostile_server.py over real stdio: it answers `echo`, answers an
unknown tool with a JSON-RPC error (as mcp-compressor's shrinkfit fails a result it cannot fit),
and exits on `crash_now`. The bench's driver must record each failure as the error text, start a
dead peer again, and go on with the next record.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import fidelity_peers  # noqa: E402
from offload_mcp.analysis.replay import Record  # noqa: E402

HOSTILE = [sys.executable, str(ROOT / "tests" / "fixtures" / "hostile_server.py")]

RECORDS = [
    Record(1, "db.query", "{}", "order_no ORD-2025-00017 status paid", "t1", 0),
    Record(2, "db.query", "{}", "a result the peer cannot fit", "t1", 1),
    Record(3, "db.query", "{}", "a result that kills the peer", "t1", 2),
    Record(4, "db.query", '{"order_no": "ORD-2025-00017"}', "order ORD-2025-00017: 3 items", "t1", 3),
]


async def _as_peer(session: Any, index: int) -> str:
    """Record 1 is refused with a JSON-RPC error, record 2 kills the peer, the others echo."""
    tool = {1: "shrinkfit_refuses", 2: "crash_now"}.get(index, "echo")
    return fidelity_peers.result_text(await session.call_tool(tool, {"text": RECORDS[index].output}))


def test_a_failing_record_is_the_error_the_model_sees_and_the_run_goes_on() -> None:
    texts = anyio.run(fidelity_peers.drive_peer, HOSTILE, len(RECORDS), _as_peer)
    assert texts[0] == RECORDS[0].output
    assert texts[1] == "MCP error -32602: unknown tool shrinkfit_refuses"
    assert texts[2].startswith("MCP error -32000: ")  # the connection closed under the call
    assert texts[3] == RECORDS[3].output  # the peer was started again for the next record
    _cut, visible, _cc_cut, cc_visible = fidelity_peers.score(RECORDS, texts)
    assert visible == cc_visible == 100.0  # the order number came from record 1, which the peer showed


def test_the_error_counts_as_shown_when_it_loses_a_needed_fact() -> None:
    async def refuse_first(session: Any, index: int) -> str:
        tool = "shrinkfit_refuses" if index == 0 else "echo"
        return fidelity_peers.result_text(await session.call_tool(tool, {"text": RECORDS[index].output}))

    texts = anyio.run(fidelity_peers.drive_peer, HOSTILE, len(RECORDS), refuse_first)
    assert texts[0].startswith("MCP error -32602")
    _cut, visible, _cc_cut, _cc_visible = fidelity_peers.score(RECORDS, texts)
    assert visible == 0.0  # the one needed fact sat in the refused record


def test_a_peer_that_never_answers_raises_naming_it() -> None:
    async def always_crash(session: Any, index: int) -> str:
        return fidelity_peers.result_text(await session.call_tool("crash_now", {}))

    with pytest.raises(RuntimeError, match="failed 3 times in a row"):
        anyio.run(fidelity_peers.drive_peer, HOSTILE, 10, always_crash)
