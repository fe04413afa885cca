"""The pieces that hold a call until its server has the client's roots (issue 15), in-process.

relay/roots.py counts roots/list requests off the wire and remembers which
servers were given roots; downstream/settle.py tells a busy process tree from
an idle one through /proc. The end-to-end proof (server-filesystem in roots
mode read on the first call) is in test_relay.py and test_claude_code_e2e.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from offload_mcp.downstream.settle import can_watch, tree_idle
from offload_mcp.relay.roots import RootsTracker, WatchedReadStream, is_roots_request


def roots_request(request_id: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="roots/list"))


async def test_a_roots_request_is_counted_when_read_before_the_sdk_dispatches_it() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](4)
    tracker = RootsTracker()
    watched = WatchedReadStream(receive, lambda item: tracker.asked("fs") if is_roots_request(item) else None)
    ping = SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=2, method="ping"))
    async with send:
        await send.send(roots_request(1))
        await send.send(ping)
    got = [item async for item in watched]  # ends at the end of the stream, like anyio's own streams
    assert got == [roots_request(1), ping]
    assert not await tracker.wait_quiet("fs", 0.05)  # read, not yet answered: a call would wait
    tracker.answered("fs", ok=True)
    assert await tracker.wait_quiet("fs", 0.05)
    assert tracker.take_fresh("fs") and not tracker.take_fresh("fs")  # settle once per delivery


async def test_a_waiting_call_wakes_when_the_answer_goes_out() -> None:
    tracker = RootsTracker()
    tracker.asked("fs")
    woke: list[bool] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            woke.append(await tracker.wait_quiet("fs", 5))

        tg.start_soon(call)
        await anyio.sleep(0.01)
        assert woke == []
        tracker.answered("fs", ok=True)
    assert woke == [True]


async def test_an_unanswered_roots_request_is_remembered_and_not_fresh() -> None:
    tracker = RootsTracker()
    tracker.asked("fs")
    tracker.answered("fs", ok=False)  # no client could answer (start-up, or a 2026-era client)
    assert "fs" in tracker.unanswered and not tracker.take_fresh("fs")
    answered = tracker.next_answer("fs")
    tracker.answered("fs", ok=True)
    assert answered.is_set() and "fs" not in tracker.unanswered


async def test_a_request_never_answered_is_waited_for_once() -> None:
    tracker = RootsTracker()
    tracker.asked("fs")  # e.g. refused by the SDK before it reached the relay's callback
    assert not await tracker.wait_quiet("fs", 0.05)
    assert await tracker.wait_quiet("fs", 0.05)


async def test_a_new_session_forgets_the_old_sessions_requests() -> None:
    tracker = RootsTracker()
    tracker.asked("fs")  # the server died before we answered
    tracker.reset("fs")
    assert await tracker.wait_quiet("fs", 0.05)


@contextmanager
def child(code: str) -> Iterator[int]:
    # Its own process group, so the whole tree it starts is ended with it.
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.skipif(not can_watch(1), reason="no /proc: settle waits for the ping round trip only")
async def test_a_process_tree_is_idle_only_when_every_thread_sleeps() -> None:
    sleeper = "import time; time.sleep(60)"
    with child(sleeper) as pid:
        with anyio.fail_after(10):
            while not tree_idle(pid):  # the interpreter starting up is work too
                await anyio.sleep(0.02)
    # A worker thread still at it (as server-filesystem's realpath of a new root is) keeps the tree busy.
    threaded = (
        "import threading, time\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()\ntime.sleep(60)"
    )
    with child(threaded) as pid:
        await anyio.sleep(0.3)
        assert not any(tree_idle(pid) for _ in range(20))
    # So does a busy grandchild (npx-style launchers run the server as a child of their own).
    parent = (
        "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'while True: pass'])\ntime.sleep(60)"
    )
    with child(parent) as pid:
        await anyio.sleep(0.3)
        assert not any(tree_idle(pid) for _ in range(20))
