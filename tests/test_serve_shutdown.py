"""A client stops a stdio server with SIGTERM, a service manager an HTTP one: serving ends cleanly
(exit 0, no traceback) and nothing queued is lost."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from support.proxy import OFFLOAD_MCP, initialize_request, proxy_env, text_of
from support.servers import ROOT, fixture_cmd


def _send(proc: subprocess.Popen[bytes], message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], request_id: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "proxy closed stdout"
        decoded = json.loads(line)
        if decoded.get("id") == request_id:
            return decoded


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_terminate_prints_the_summary_and_writes_queued_events(tmp_path, signum):
    ledger = tmp_path / "ledger.db"
    proc = subprocess.Popen(
        [OFFLOAD_MCP, "serve", "--ledger", str(ledger), *fixture_cmd()],  # signalled: not pre-warmed (zygote.py)
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=proxy_env(),
        cwd=str(ROOT),
    )
    try:
        _send(proc, initialize_request("2025-11-25"))
        assert "result" in _answer(proc, 1)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "make_text", "arguments": {"size": 200_000}},
            },
        )
        offloaded = _answer(proc, 2)["result"]["content"][0]["text"]
        assert "trm_" in offloaded
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}},
            },
        )
        assert _answer(proc, 3)["result"]["content"][0]["text"]
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr.decode(errors="replace")[-2000:]
    assert "offload-mcp summary:" in stderr.decode()
    from offload_mcp.store import Ledger

    rows = [(e["tool"], e["verdict"]) for e in Ledger.open(path=ledger).events(kinds=["decision"])]
    assert rows == [("make_text", "offload"), ("echo", "keep")]  # the kept result's queued event too


@asynccontextmanager
async def _handshake_session(url: str, transport: str) -> AsyncIterator[Any]:
    """A handshake-era session, which keeps an event stream open (SSE's, or streamable HTTP's GET stream)."""
    from mcp.client.session import ClientSession

    if transport == "sse":
        from mcp.client.sse import sse_client

        connection: Any = sse_client(url)
    else:
        from mcp.client.streamable_http import streamable_http_client

        connection = streamable_http_client(url)
    async with connection as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        yield session


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_terminate_stops_http_cleanly_with_a_client_connected(tmp_path, transport):
    """SIGTERM (systemd, Docker, Kubernetes) is a clean stop over HTTP too. Before: uvicorn was cancelled
    mid-serve and logged the lifespan's CancelledError as `ERROR: Traceback ...`; a stop that waited
    for uvicorn instead would wait forever on the client's open event stream."""
    ledger = tmp_path / "ledger.db"
    proc = subprocess.Popen(
        [OFFLOAD_MCP, "serve", "--transport", transport, "--port", "0", "--ledger", str(ledger), *fixture_cmd()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=proxy_env(),
        cwd=str(ROOT),
    )
    lines: list[str] = []
    serving = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "offload-mcp: serving" in line:
                serving.set()
        serving.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        assert serving.wait(60), "".join(lines)
        url = re.search(r"serving \S+ on (http://\S+)", "".join(lines))
        assert url, "".join(lines)
        async with _handshake_session(url.group(1), transport) as session:
            offloaded = await session.call_tool("make_text", {"size": 200_000})
            assert "trm_" in text_of(offloaded)
            assert text_of(await session.call_tool("echo", {"text": "hi"}))
            proc.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(lambda: proc.wait(30))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(10)
    stderr = "".join(lines)
    assert proc.returncode == 0, stderr[-2000:]
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr[-2000:]
    assert "offload-mcp summary:" in stderr
    from offload_mcp.store import Ledger

    rows = [(e["tool"], e["verdict"]) for e in Ledger.open(path=ledger).events(kinds=["decision"])]
    assert rows == [("make_text", "offload"), ("echo", "keep")]
