"""Drive any stdio MCP server (a peer proxy or the downstream itself) as a real client.

Every peer is measured through the same path: the mcp SDK's `stdio_client` and
`ClientSession` from this project's environment, talking to a subprocess that
may live in another virtualenv. So a ratio between two rows is a ratio between
two servers, never between two clients.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


@asynccontextmanager
async def open_session(
    command: Sequence[str],
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    errlog: Any = None,
    timeout_s: float = 600.0,
) -> AsyncIterator[ClientSession]:
    """Start `command` over stdio, initialize, and yield the session."""
    params = StdioServerParameters(
        command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}, cwd=cwd
    )
    log = errlog if errlog is not None else open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=timeout_s) as session:
                await session.initialize()
                yield session
    finally:
        if errlog is None:
            log.close()


def result_text(result: types.CallToolResult) -> str:
    """What a text-only model sees of a result: its text blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def timed_call(
    session: ClientSession, tool: str, arguments: dict[str, Any]
) -> tuple[float, types.CallToolResult]:
    start = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    return time.perf_counter() - start, result


def summarize_ms(samples_s: list[float]) -> dict[str, float]:
    """median and p99 (nearest rank) in milliseconds."""
    ordered = sorted(samples_s)
    if not ordered:
        return {"median": float("nan"), "p99": float("nan"), "n": 0}
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return {"median": statistics.median(ordered) * 1000, "p99": p99 * 1000, "n": len(ordered)}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
