"""A client stops a stdio server with SIGTERM: serving ends cleanly and nothing queued is lost."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from conftest import OFFLOAD_MCP, ROOT, fixture_cmd, initialize_request, proxy_env


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
        [OFFLOAD_MCP, "serve", "--ledger", str(ledger), *fixture_cmd()],
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
