"""A stuck ledger never stops the proxy, and a result it could not store says so (issue 40, D1 and D5).

D1: a real PostgreSQL is frozen (SIGSTOP of every one of its processes), then locked (`LOCK TABLE`
in another session), while a real proxy serves over streamable HTTP. /healthz, /metrics, tools/list
and `echo` on other sessions answer in well under a second; an offloading call answers within
its deadline (`busy_timeout_s` + a little) with a result the client accepts; recall of a body
behind a lock gives a clear error; once the database is back every id handed out reads back whole.

D5: when the ledger cannot take a body, a result larger than `client_max_result_chars` is cut to it
with a note in the text and in `_meta` (never sent whole, which the client would reject), and the
decision recorded for stats names the reason.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from offload_mcp.config import OffloadSettings
from offload_mcp.shaping import UNSTORED_META_KEY, dump_result, sent_chars
from offload_mcp.store import Ledger
from support.ledgers import big_result, call, make_shaper
from support.pg import frozen, locked, timed
from support.proxy import TRM, recall_whole, running_proxy, stdio_params, text_of
from support.servers import HOSTILE, ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

BUSY_S = 1.0
LIMIT = 100_000
"""client_max_result_chars's default: what Claude Code accepts."""
FAST_S = 1.0
"""The issue's bound on the median answer of a probe while the database is stuck."""
SLOWEST_S = 3.0
"""No single probe may take longer than this on a loaded machine (the stall lasts far longer)."""
STALL_S = 15.0
"""How long the database stays frozen, and then locked: issue 40's 15 s."""


def chunks_text(size: int, seed: int) -> str:
    """What recall_whole reads back of `chunks`: its blocks, one per line."""
    return "\n".join(hostile_server.chunk_blocks(size, seed))


def assert_cut_with_a_note(result: Any, total: int) -> None:
    """Bounded by what the client accepts, saying the rest was not stored and the call can be repeated."""
    body = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert sent_chars(body) <= LIMIT, sent_chars(body)
    text = text_of(result)
    assert "could not store it" in text and "Repeat the call" in text and f"of {total:,} characters" in text, text[
        -400:
    ]
    assert not TRM.search(text)  # never a stub without its body
    unstored = (result.meta or {})[UNSTORED_META_KEY]
    assert unstored["reason"] == "ledger_error" and unstored["chars"] == total and 0 < unstored["shown"] < LIMIT


# ---- D1: a real PostgreSQL, frozen and locked, behind a real proxy ------------------------------


@asynccontextmanager
async def session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


class Probes:
    """Answer times of the requests that must not wait on the database, by kind."""

    def __init__(
        self,
        base: str,
        other: ClientSession,
        fresh_session: Callable[[], AbstractAsyncContextManager[ClientSession]],
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base, self.other, self.fresh_session, self.headers = base, other, fresh_session, headers
        self.times: dict[str, list[float]] = {}
        self.health: list[dict[str, Any]] = []

    def note(self, kind: str, seconds: float) -> None:
        self.times.setdefault(kind, []).append(seconds)

    async def round(self, http: httpx2.AsyncClient) -> None:
        took, health = await timed(lambda: http.get(self.base + "/healthz", timeout=30))
        self.note("healthz", took)
        self.health.append(health.json())
        took, metrics = await timed(lambda: http.get(self.base + "/metrics", timeout=30))
        assert metrics.status_code == 200
        self.note("metrics", took)
        took, listed = await timed(self.other.list_tools)
        assert any(t.name == "echo" for t in listed.tools)
        self.note("tools/list", took)
        took, echoed = await timed(lambda: self.other.call_tool("echo", {"text": "still here"}))
        assert text_of(echoed) == "still here"
        self.note("echo", took)
        # A new session's first listing is the one that reads call counts (hot-tool learning).
        async with self.fresh_session() as fresh:
            took, listed = await timed(fresh.list_tools)
            assert listed.tools
            self.note("new session tools/list", took)

    async def run_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        async with httpx2.AsyncClient(headers=self.headers) as http:
            while time.monotonic() < end:
                await self.round(http)
                await anyio.sleep(0.2)

    def assert_fast(self) -> None:
        for kind, times in self.times.items():
            assert len(times) >= 3, (kind, times)
            assert statistics.median(times) < FAST_S, (kind, times)
            assert max(times) < SLOWEST_S, (kind, times)


async def test_a_frozen_then_locked_postgresql_never_stops_the_proxy(
    postgres: Any, pg_url: str, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path, {"h": {"command": HOSTILE[0], "args": HOSTILE[1:]}}, {"ledger": {"busy_timeout_s": BUSY_S}}
    )
    # A proxy that waits on the database hangs here instead of failing: the bound turns that into a failure
    # (and `frozen` resumes the server on the way out).
    with running_proxy(["-c", str(config), "--ledger", pg_url]) as proxy, anyio.fail_after(120):
        base = proxy.url.rsplit("/mcp", 1)[0]
        async with session(proxy.url) as worker, session(proxy.url) as other:
            stored = text_of(await worker.call_tool("chunks", {"size": 200_000, "seed": 1}))
            acknowledged = [TRM.search(stored).group(0)]  # type: ignore[union-attr]

            async def offload_within_deadline(seed: int) -> None:
                took, result = await timed(lambda: worker.call_tool("chunks", {"size": 200_000, "seed": seed}))
                assert took < BUSY_S + 1.0 + 1.0, took  # the deadline (busy_timeout_s + 0.5) and a loaded host
                assert_cut_with_a_note(result, 200_000)

            # 1. Every process of the server stopped: nothing answers, nothing refuses.
            frozen_probes = Probes(base, other, lambda: session(proxy.url))
            with frozen(postgres):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(frozen_probes.run_for, STALL_S)
                    await anyio.sleep(0.5)
                    await offload_within_deadline(2)
                    took, answer = await timed(
                        lambda: worker.call_tool("recall_tool_result", {"mem_id": acknowledged[0]})
                    )
                    assert answer.is_error and "cannot be read right now" in text_of(answer), text_of(answer)
                    assert took < SLOWEST_S, took
            frozen_probes.assert_fast()
            assert all(h == {**h, "status": "degraded", "ledger": "unreachable"} for h in frozen_probes.health)

            # 2. The tables locked by another session: the server answers, our statements wait on the lock.
            locked_probes = Probes(base, other, lambda: session(proxy.url))
            with locked(pg_url, "events, bodies"):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(locked_probes.run_for, STALL_S)
                    await anyio.sleep(0.2)
                    await offload_within_deadline(3)
                    took, answer = await timed(
                        lambda: worker.call_tool("recall_tool_result", {"mem_id": acknowledged[0]})
                    )
                    assert answer.is_error and "cannot be read right now" in text_of(answer), text_of(answer)
                    assert took < BUSY_S + 2.0, (took, text_of(answer))  # lock_timeout ended the read
            locked_probes.assert_fast()

            # 3. Back: offloading resumes by itself, and every id handed out reads back whole.
            deadline = time.monotonic() + 30
            while True:
                shown = text_of(await worker.call_tool("chunks", {"size": 200_000, "seed": 4}))
                found = TRM.search(shown)
                if found or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.5)
            assert found, shown[-300:]
            acknowledged.append(found.group(0))
            for trm_id, seed in zip(acknowledged, (1, 4), strict=True):
                assert await recall_whole(worker, trm_id, max_chars=100_000) == chunks_text(200_000, seed)
            async with httpx2.AsyncClient() as http:
                assert (await http.get(base + "/healthz", timeout=10)).json()["ledger"] == "ok"


async def test_two_stateless_replicas_behind_nginx_stay_up_while_their_shared_postgresql_is_frozen(
    postgres: Any, pg_url: str, tmp_path: Path
) -> None:
    from support.cluster import (  # load_balancer skips where nginx is not installed
        ALICE,
        deployment_config,
        handshake,
        host_port,
        load_balancer,
        replicas,
    )

    config = deployment_config(tmp_path, pg_url, busy_timeout_s=BUSY_S)
    auth = {"Authorization": f"Bearer {ALICE}"}
    with (
        replicas(2, ["-c", str(config)]) as procs,
        load_balancer(tmp_path / "lb", [host_port(p.url) for p in procs]) as lb,
        anyio.fail_after(120),
    ):
        base = lb.url.rsplit("/mcp", 1)[0]
        async with handshake(lb.url, ALICE) as worker, handshake(lb.url, ALICE) as other:
            stored = text_of(await worker.call_tool("chunks", {"size": 200_000, "seed": 11}))
            acknowledged = TRM.search(stored).group(0)  # type: ignore[union-attr]
            probes = Probes(base, other, lambda: handshake(lb.url, ALICE), auth)
            with frozen(postgres):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(probes.run_for, STALL_S)
                    await anyio.sleep(0.5)
                    for seed in (12, 13):  # one on each replica, round-robin
                        took, result = await timed(
                            lambda seed=seed: worker.call_tool("chunks", {"size": 200_000, "seed": seed})
                        )
                        assert took < BUSY_S + 2.0, took
                        assert_cut_with_a_note(result, 200_000)
            probes.assert_fast()
            assert all(h["status"] == "degraded" and h["ledger"] == "unreachable" for h in probes.health)
            # Back: each replica recovers by itself and reads what either stored.
            deadline = time.monotonic() + 30
            while True:
                shown = text_of(await worker.call_tool("chunks", {"size": 200_000, "seed": 14}))
                found = TRM.search(shown)
                if found or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.5)
            assert found, shown[-300:]
            for trm_id, seed in ((acknowledged, 11), (found.group(0), 14)):
                for _ in procs:  # through the balancer: each read may land on either replica
                    assert await recall_whole(worker, trm_id, max_chars=100_000) == chunks_text(200_000, seed)


# ---- D5: a ledger that cannot take a body ---------------------------------------------------------


def test_a_result_the_ledger_cannot_take_is_cut_to_what_the_client_accepts_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    Ledger.open(path=path).close()
    ledger = Ledger.open(OffloadSettings().ledger, path, read_only=True)
    shaper = make_shaper(OffloadSettings(), ledger)
    original = big_result(5, 250_000)
    out, report = shaper.shape_with_report(call(5), original)
    assert_cut_with_a_note(out, 250_000)
    shown = out.content[0].text
    assert original.content[0].text.startswith(shown) and shown.endswith("\n")  # its first lines, whole
    assert report.reason == "ledger_error" and report.chars_out == sent_chars(dump_result(out)) <= LIMIT
    assert "read-only" in (report.warning or "") and "cut to" in (report.warning or "")
    # Byte-stable: the same result cut again is the same bytes.
    assert dump_result(shaper.shape_with_report(call(5), original)[0]) == dump_result(out)
    # What the client accepts still passes whole (test_reliability_ledger.py has the rest of that promise).
    small = big_result(6)
    assert dump_result(shaper.shape_with_report(call(6), small)[0]) == dump_result(small)
    ledger.close()


def test_a_cut_keeps_other_blocks_drops_structured_content_and_is_an_error_under_an_output_schema(
    tmp_path: Path,
) -> None:
    from offload_mcp.shaping import cut_unstored

    text = "row\n" * 60_000
    result = types.CallToolResult(
        content=[types.TextContent(text=text), types.ImageContent(data="AAAA", mime_type="image/png")],
        structured_content={"rows": text},
    )
    body = dump_result(result)
    out = cut_unstored(result, body, LIMIT, "ledger_error", output_schema=True)
    assert out.structured_content is None and out.is_error  # a validating client accepts an error without it
    assert isinstance(out.content[1], types.ImageContent)
    assert sent_chars(dump_result(out)) <= LIMIT
    assert cut_unstored(result, body, LIMIT, "ledger_error").is_error is False


def test_stats_hear_why_a_result_was_cut_once_the_ledger_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "l.db"
    settings = OffloadSettings.model_validate({"ledger": {"busy_timeout_s": 0.2}})
    ledger = Ledger.open(settings.ledger, path, deadlines=True)
    shaper = make_shaper(settings, ledger)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with caplog.at_level(logging.WARNING):
            out, report = shaper.shape_with_report(call(8), big_result(8, 200_000))
        assert_cut_with_a_note(out, 200_000)
        assert "cut to" in caplog.text
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    decisions = [e for e in ledger.events(kinds=["decision"]) if e["reason"] == "ledger_error"]
    assert len(decisions) == 1 and "cut to" in decisions[0]["detail"]["warning"], decisions
    assert decisions[0]["chars_in"] == 200_000 and decisions[0]["chars_out"] <= LIMIT
    ledger.close()


async def test_a_proxy_without_a_ledger_cuts_what_the_client_would_reject(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    path.write_bytes(os.urandom(64 * 1024))  # not a database: the proxy serves without a ledger
    config = write_config(tmp_path, {"h": {"command": HOSTILE[0], "args": HOSTILE[1:]}})
    async with (
        stdio_client(stdio_params(["-c", str(config), "--ledger", str(path)], None), errlog=open(os.devnull, "w")) as (
            read,
            write,
        ),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        result = await s.call_tool("chunks", {"size": 200_000, "seed": 9})
        assert sent_chars(result.model_dump(by_alias=True, mode="json", exclude_none=True)) <= LIMIT
        assert "no ledger is open to store it" in text_of(result)
        assert (result.meta or {})[UNSTORED_META_KEY]["reason"] == "no_ledger"
        assert text_of(result).startswith(hostile_server.varied_text(200_000, 9)[:50_000])  # its first part


# ---- the deadline itself, on a SQLite ledger whose connection another thread holds ------------------


def test_a_held_ledger_costs_a_call_its_deadline_then_nothing_and_loses_no_event(tmp_path: Path) -> None:
    from offload_mcp.store import LedgerEvent, LedgerUnavailable, LedgerWriteError

    settings = OffloadSettings.model_validate({"ledger": {"busy_timeout_s": 0.2}})
    ledger = Ledger.open(settings.ledger, tmp_path / "l.db", deadlines=True)
    shaper = make_shaper(settings, ledger)
    kept = shaper.shape_with_report(call(1), big_result(1))[1].trm_id
    assert kept and ledger.read_deadline_s == 0.5 + 0.5
    hold = ledger.sqlite._lock  # what a database that never answers looks like from here: a call that never returns
    hold.acquire()
    try:
        for n in range(5):
            ledger.record_later(LedgerEvent("decision", session_id="s", server="fx", tool="t", verdict=f"v{n}"))
        started = time.monotonic()
        with pytest.raises(LedgerUnavailable, match="no answer from the database within 1s"):
            ledger.get_body(kept)
        assert 0.9 < time.monotonic() - started < SLOWEST_S
        assert ledger.stalled() is not None
        started = time.monotonic()
        with pytest.raises(LedgerUnavailable, match="stalled"):
            ledger.get_body(kept)  # no second wait: the first call is still past its deadline
        with pytest.raises(LedgerWriteError, match="stalled"):
            ledger.record_event(LedgerEvent("decision", tool="refused"))  # not acknowledged: the caller hears why
        out, report = shaper.shape_with_report(call(2), big_result(2))
        assert report.reason == "ledger_error" and "stalled" in (report.warning or "")
        assert out.content[0].text == big_result(2).content[0].text  # within the client's limit: whole
        assert ledger.reachable() == (False, ledger.reachable()[1]) and "stalled" in ledger.reachable()[1]
        assert time.monotonic() - started < 0.5
        with pytest.raises(LedgerUnavailable, match="stalled"):
            ledger.call_counts()  # hot-tool learning lists without learned tools (catalog/hotset.py)
    finally:
        hold.release()
    deadline = time.monotonic() + 10
    while ledger.stalled() is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ledger.stalled() is None and ledger.reachable() == (True, "ok")
    # Reading flushes the queue; on a loaded machine that write may itself miss its deadline once,
    # and the events wait for the next flush: read again until they are there, then check each once.
    while True:
        verdicts = [e["verdict"] for e in ledger.events(kinds=["decision"]) if e["tool"] == "t"]
        if len(verdicts) >= 5 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert verdicts == [f"v{n}" for n in range(5)]  # each queued event once: none lost, none written twice
    assert ledger.get_body(kept) == dump_result(big_result(1))
    ledger.close()


def test_a_call_a_busy_worker_started_late_counts_as_stalled_from_when_its_caller_asked() -> None:
    # On a loaded machine a worker may start a call well after its caller asked; once the caller
    # has given up, the call is past its deadline however late it began, and later calls must not
    # queue behind it.
    from offload_mcp.store import LedgerUnavailable
    from offload_mcp.store.deadline import DeadlineRunner

    runner = DeadlineRunner(1, "late-start", stall_after_s=0.0)
    first_started, release = time.monotonic(), threading.Event()
    busy = threading.Thread(
        target=lambda: runner.run(lambda: time.sleep(0.6), deadline_s=30, error=LedgerUnavailable, what="busy")
    )
    busy.start()
    time.sleep(0.05)  # the only worker is busy for ~0.55 s more: the next call starts late
    with pytest.raises(LedgerUnavailable, match="no answer from the database within 1s"):
        runner.run(release.wait, deadline_s=1.0, error=LedgerUnavailable, what="held")
    assert time.monotonic() - first_started >= 1.0
    assert runner.stalled_for() is not None  # started ~0.55 s in, yet past its caller's deadline
    with pytest.raises(LedgerUnavailable, match="stalled"):
        runner.run(lambda: 1, deadline_s=1.0, error=LedgerUnavailable, what="next")
    release.set()
    busy.join()
    runner.close()
