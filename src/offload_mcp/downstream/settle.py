"""Wait until a downstream server has digested what it was just sent.

MCP has no message that says "I have applied your answer": a server that
gets its roots may still be resolving them (server-filesystem runs realpath
and stat on each) when the next request arrives. Before the call that follows
a roots answer, the proxy therefore waits for two things:

1. a `ping` round trip: the server has read everything sent before it (one
   stream, in order), so our answer is in its hands;
2. for a stdio server on Linux: every thread of its process tree asleep at
   once (state S in /proc), i.e. no work left it could still be doing, the
   asynchronous steps of applying the answer included. A runnable thread
   counts as busy even while the machine is too loaded to run it, so load
   makes the wait longer, never wrong.

Bounded by `SETTLE_MAX_S`: a server that never sleeps (a busy loop, a timer
firing constantly) gets the call anyway. Inert where /proc is missing (not
Linux) and for remote servers: there only the ping round trip is waited for.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client.session import ClientSession

logger = logging.getLogger(__name__)

SETTLE_MAX_S = 1.0
"""At most this long for a server to go idle."""
POLL_S = 0.002
IDLE_STATES = frozenset("SIZX")
"""Asleep (S), idle kernel thread (I), or dead (Z, X): nothing left to run."""
PROC = Path("/proc")


def _threads(pid: int) -> list[Path]:
    try:
        return list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return []


def _state(task: Path) -> str:
    try:
        stat = (task / "stat").read_text()
    except OSError:
        return "X"  # gone: nothing left to run
    return stat.rpartition(")")[2].split()[0]  # after "pid (comm)", which may itself hold spaces or parens


def _children(task: Path) -> list[int]:
    try:
        return [int(p) for p in (task / "children").read_text().split()]
    except (OSError, ValueError):
        return []


def tree_idle(pid: int) -> bool:
    """Every thread of `pid` and its descendants asleep right now."""
    todo = [pid]
    seen: set[int] = set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for task in _threads(current):
            if _state(task) not in IDLE_STATES:
                return False
            todo.extend(_children(task))
    return True


def can_watch(pid: int | None) -> bool:
    return pid is not None and (PROC / str(pid) / "task").is_dir()


async def settle(session: ClientSession, pid: int | None, timeout_s: float) -> str:
    """Wait until the server has digested what it was sent; returns how that was established."""
    try:
        with anyio.fail_after(timeout_s):
            await session.send_request(types.PingRequest(), types.EmptyResult)
    except Exception as err:  # a server that mishandles ping is still called; the wait is a courtesy
        logger.debug("ping before a call failed: %r", err)
        return "ping_failed"
    if pid is None or not can_watch(pid):
        return "ping"
    with anyio.move_on_after(min(SETTLE_MAX_S, timeout_s)):
        # Two idle samples in a row: a single one could fall between a timer's wake-ups.
        idle_in_a_row = 0
        while idle_in_a_row < 2:
            idle_in_a_row = idle_in_a_row + 1 if tree_idle(pid) else 0
            await anyio.sleep(POLL_S)
        return "idle"
    return "busy"
