"""Large answers in flight share one byte budget (`offload.downstream.max_inflight_result_bytes`, issue 40 D4).

The real proxy over streamable HTTP, in front of the fixture server (over streamable HTTP, SSE events and plain
JSON bodies, and over stdio), with a 20 MB budget: several multi-megabyte answers at once are each either
stored whole (the ledger's body is the server's text, byte for byte) or refused with an error that says what,
why and which setting; an answer that alone passes the budget is refused; and the budget is free afterwards
(an answer that needs nearly all of it goes through).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from offload_mcp.downstream.budget import MEMORY_PER_BYTE, SETTING
from offload_mcp.store.ledger import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.ledgers import make_text
from support.metrics import scrape, total
from support.proxy import http_session, running_proxy, text_of
from support.servers import fixture_entry, fixture_over_http, write_config

BUDGET = 20_000_000
SIZES = [2_000_000 + 1_000 * i for i in range(5)]
"""Each is charged ~9-12 MB of the 20 MB: no two fit at once, so the others wait or are refused."""
TOO_LARGE = 6_000_000
"""Charged 24 MB: more than the whole budget, alone."""
NEARLY_ALL = 4_500_000
"""Charged 18 MB: it fits only when the budget is free (nothing leaked by the answers before it)."""
_TRM = re.compile(r"trm_[0-9a-f]+")


def _refused_clearly(result: Any) -> bool:
    text = text_of(result)
    return result.is_error and "refused" in text and SETTING in text


@pytest.mark.parametrize("mode", ["stdio", "sse", "json"])
async def test_large_answers_at_once_are_stored_whole_or_refused_and_the_budget_frees(
    tmp_path: Path, mode: str
) -> None:
    assert NEARLY_ALL * MEMORY_PER_BYTE < BUDGET < TOO_LARGE * MEMORY_PER_BYTE
    ledger_path = tmp_path / "l.db"
    offload = {"downstream": {"max_inflight_result_bytes": BUDGET, "max_inflight_wait_s": 60, "call_timeout_s": 90}}
    if mode == "stdio":
        results, alone, after, metrics = await _calls(tmp_path, {"fx": fixture_entry()}, offload, ledger_path)
    else:
        with fixture_over_http("streamable-http", *(("--json-response",) if mode == "json" else ())) as url:
            servers = {"fx": {"url": url, "type": "http"}}
            results, alone, after, metrics = await _calls(tmp_path, servers, offload, ledger_path)

    stored: dict[str, int] = {}
    for size, result in zip(SIZES, results, strict=True):
        found = _TRM.search(text_of(result))
        if found is not None and not result.is_error:
            stored[found.group(0)] = size
        else:
            assert _refused_clearly(result), text_of(result)[:500]
    assert stored, [text_of(r)[:200] for r in results]  # back-pressure, not refusal of everything
    assert _refused_clearly(alone), text_of(alone)[:500]
    assert "more than the whole budget" in text_of(alone)
    assert not after.is_error and _TRM.search(text_of(after)), text_of(after)[:500]
    stored[_TRM.search(text_of(after)).group(0)] = NEARLY_ALL  # type: ignore[union-attr]
    # /metrics: nothing held once every call has its answer; each refusal counted.
    assert total(metrics, "offload_mcp_inflight_result_bytes") == 0
    assert total(metrics, "offload_mcp_inflight_result_limit_bytes") == BUDGET
    refused_at_once = len(SIZES) - (len(stored) - 1)
    assert total(metrics, "offload_mcp_inflight_refusals_total") == refused_at_once + 1  # and the one alone

    ledger = Ledger.open(LedgerSettings(path=ledger_path))
    try:
        for trm_id, size in stored.items():
            assert ledger.get_body(trm_id)["content"][0]["text"] == make_text(size), trm_id
    finally:
        ledger.close()


async def _calls(
    tmp_path: Path, servers: dict[str, Any], offload: dict[str, Any], ledger_path: Path
) -> tuple[list[Any], Any, Any, Any]:
    cfg = write_config(tmp_path, servers, offload)
    with running_proxy(["-c", str(cfg), "--ledger", str(ledger_path)]) as proxy:
        async with http_session(proxy.url) as client:
            tool = next(t.name for t in (await client.list_tools()).tools if t.name.endswith("make_text"))
            results: list[Any] = [None] * len(SIZES)

            async def call(index: int, size: int) -> None:
                results[index] = await client.call_tool(tool, {"size": size})

            async with anyio.create_task_group() as tg:
                for index, size in enumerate(SIZES):
                    tg.start_soon(call, index, size)
            alone = await client.call_tool(tool, {"size": TOO_LARGE})
            after = await client.call_tool(tool, {"size": NEARLY_ALL})
        metrics = scrape(proxy.url.rsplit("/", 1)[0])
    return results, alone, after, metrics


# ---- the budget's own rules, in-process ------------------------------------------------------------------

MiB = 1024 * 1024


async def _warmed(budget: Any) -> Any:
    """`budget` after one 1 MiB answer: new answers are admitted with what it took (4 MiB), not with the most
    one may take."""
    first = budget.charge()
    await first.grow(1 * MiB)
    first.release()
    assert budget.expected() == 4 * MiB and budget.used == 0
    return budget


async def test_answers_read_in_part_that_all_wait_refuse_the_youngest_and_the_oldest_goes_on() -> None:
    from offload_mcp.downstream.budget import InflightBudget, Refused

    budget = await _warmed(InflightBudget(limit=24 * MiB, wait_s=30, max_answer_bytes=64 * MiB))
    old, young = budget.charge(), budget.charge()
    await old.grow(2 * MiB)  # charged 12 MiB (2 read + 1 ahead, x4)
    await young.grow(2 * MiB)  # 12 MiB: the budget is spent
    outcome: dict[str, str] = {}

    async def grow(name: str, charge: Any, read: int) -> None:
        try:
            await charge.grow(read)
            outcome[name] = "grown"
        except Refused as refused:
            outcome[name] = str(refused)

    with anyio.fail_after(10):  # a deadlock would wait out wait_s (30 s)
        async with anyio.create_task_group() as tg:
            tg.start_soon(grow, "young", young, 4 * MiB)
            await anyio.sleep(0.05)
            tg.start_soon(grow, "old", old, 4 * MiB)
    assert outcome["old"] == "grown"
    assert "each read in part and waiting for more" in outcome["young"] and SETTING in outcome["young"]
    assert budget.used == old.bytes >= 16 * MiB
    old.release()
    young.release()
    assert budget.used == 0


async def test_a_new_answer_waits_for_a_release_and_one_that_waits_too_long_is_refused() -> None:
    from offload_mcp.downstream.budget import InflightBudget, Refused

    budget = await _warmed(InflightBudget(limit=16 * MiB, wait_s=0.3, max_answer_bytes=64 * MiB))
    first = budget.charge()
    await first.grow(3 * MiB)  # 16 MiB: all of it
    second = budget.charge()
    with pytest.raises(Refused, match="max_inflight_wait_s"):
        await second.grow(1 * MiB)
    assert budget.used == first.bytes
    third = budget.charge()
    async with anyio.create_task_group() as tg:
        tg.start_soon(third.grow, 1 * MiB)
        await anyio.sleep(0.05)
        assert third.bytes == 0  # waiting
        first.release()
    assert third.bytes >= 4 * MiB and budget.used == third.bytes


async def test_a_new_answer_is_admitted_with_room_for_the_most_one_may_take_until_answers_are_known() -> None:
    from offload_mcp.downstream.budget import MEMORY_PER_BYTE, InflightBudget

    budget = InflightBudget(limit=64 * MiB, wait_s=30, max_answer_bytes=8 * MiB)
    cold = budget.charge()
    await cold.grow(1 * MiB)
    assert cold.bytes == 8 * MiB * MEMORY_PER_BYTE  # room for the largest answer: a second waits for it
    cold.release()
    warm = budget.charge()
    await warm.grow(1 * MiB)
    assert warm.bytes == (1 * MiB + 1 * MiB) * MEMORY_PER_BYTE  # after a 1 MiB answer: its size, read ahead


async def test_a_token_is_claimed_once_and_an_unclaimed_one_is_released_by_the_sweep() -> None:
    from offload_mcp.downstream import budget as budget_module

    budget = await _warmed(budget_module.InflightBudget(limit=64 * MiB, wait_s=1, max_answer_bytes=64 * MiB))
    charge = budget.charge()
    await charge.grow(1 * MiB)
    token = budget.hand(charge)
    assert budget.claim("someone-else-1") is None and budget.claim(token) is charge and budget.claim(token) is None
    lost = budget.charge()
    await lost.grow(1 * MiB)
    budget.hand(lost)
    lost.handed_at = anyio.current_time() - budget_module.SWEEP_AFTER_S - 1  # as if its caller had gone long ago
    newest = budget.charge()
    await newest.grow(1 * MiB)  # any grant sweeps
    assert lost.released and budget.used == charge.bytes + newest.bytes
