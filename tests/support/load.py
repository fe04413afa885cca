"""A victim's view of load: an unrelated client probing a tiny echo, and figures printed for the log."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession

from support.proxy import http_session, running_proxy, text_of
from support.servers import HOSTILE, fixture_over_http, write_config


class EchoProbe:
    """An unrelated client calling a tiny echo every `interval` s (50 ms); its latencies are the victim's
    view of an attack."""

    def __init__(self, session: ClientSession, tool: str = "echo", interval: float = 0.05) -> None:
        self.session = session
        self.tool = tool
        self.interval = interval
        self.latencies: list[float] = []
        self.stopped = anyio.Event()

    async def run(self) -> None:
        while not self.stopped.is_set():
            started = time.perf_counter()
            result = await self.session.call_tool(self.tool, {"text": "ping"})
            assert text_of(result) == "ping"
            self.latencies.append(time.perf_counter() - started)
            await anyio.sleep(self.interval)

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")


def report(name: str, **figures: Any) -> None:
    print("hardening:", name, " ".join(f"{k}={v}" for k, v in figures.items()))


async def echo_beside(session: Any, work: Callable[[], Awaitable[None]], times: int) -> tuple[float, list[float]]:
    """(median seconds of `work`, every echo's seconds) with `work` run at least `times` times beside an echo
    loop, and on until the echoes number `times` too (at most 4 x `times` runs): a loaded machine that answers
    queries faster than echoes must not leave the median of too few echoes (CI: 7 echoes beside 8 queries)."""
    works: list[float] = []
    probe = EchoProbe(session, interval=0.005)

    async def run_work() -> None:
        while len(works) < times or (len(probe.latencies) < times and len(works) < 4 * times):
            started = time.perf_counter()
            await work()
            works.append(time.perf_counter() - started)
        probe.stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(probe.run)
        tg.start_soon(run_work)
    assert len(probe.latencies) >= times
    return statistics.median(works), probe.latencies


async def big_remote_call_beside_a_victim(tmp_path: Path, mode: str, size: int) -> tuple[EchoProbe, float]:
    """A `size`-char answer from the fixture server over HTTP (`mode`: sse or json responses) through the proxy,
    beside a victim echoing through a local stdio server; (the victim's probe, the big call's seconds)."""
    tmp_path.mkdir(exist_ok=True)
    opts = ("--json-response",) if mode == "json" else ()
    with fixture_over_http("streamable-http", *opts) as remote:
        cfg = write_config(
            tmp_path,
            {"remote": {"url": remote, "type": "http"}, "local": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
            {"downstream": {"call_timeout_s": 60}},
            name=f"{mode}.json",
        )
        with running_proxy(["-c", str(cfg), "--ledger", str(tmp_path / f"{mode}.db")]) as proxy:
            async with http_session(proxy.url) as caller, http_session(proxy.url) as victim:
                probe = EchoProbe(victim, "local__echo")
                started = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(probe.run)
                    big = await caller.call_tool("make_text", {"size": size})
                    big_s = time.perf_counter() - started
                    probe.stopped.set()
            rss_peak = proxy.status("VmHWM")
    report(
        f"remote-{mode}-{size // 1_000_000}MB-parse",
        echo_p99_s=f"{probe.p99():.3f}",
        echo_worst_s=f"{max(probe.latencies):.3f}",
        echoes=len(probe.latencies),
        big_call_s=f"{big_s:.2f}",
        peak_mb=rss_peak // 1024,
    )
    assert not big.is_error, text_of(big)[:300]
    assert "trm_" in text_of(big)  # offloaded whole: the answer arrived intact
    assert len(probe.latencies) >= 5
    return probe, big_s
