"""A victim's view of load: an unrelated client probing a tiny echo, and figures printed for the log."""

from __future__ import annotations

import time
from typing import Any

import anyio
from mcp.client.session import ClientSession

from support.proxy import text_of


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
