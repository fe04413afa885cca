"""Hostile shapes of input, bounded in time: pathological results through the whole shaper, and
JSON-RPC that is malformed, oversized or out of order on each transport."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.shaping import CallInfo, ResultShaper
from offload_mcp.store import Ledger
from support.proxy import OFFLOAD_MCP, initialize_request, proxy_env, running_proxy
from support.servers import HOSTILE, ROOT
from support.zygote import prewarmed

PATHOLOGICAL = {
    "one 1 MB line of one char": "x" * 1_000_000,
    "5,000 lines of 2,000 chars": "\n".join("y" * 2_000 for _ in range(5_000)),
    "dots and colons": "a.b:" * 250_000,
    "slashes": "a/" * 500_000,
    "JSON nested 10,000 deep": '{"a":' * 10_000 + "1" + "}" * 10_000,
    "a huge flat JSON array": json.dumps([{"id": i, "v": "x" * 20} for i in range(50_000)]),
    "10,000 distinct short lines": "\n".join(f"{i} ok" for i in range(10_000)),
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_results_are_shaped_in_bounded_time(tmp_path: Path, name: str) -> None:
    ledger = Ledger.open(path=tmp_path / "l.db")
    shaper = ResultShaper(OffloadSettings(), ledger)
    original = types.CallToolResult(content=[types.TextContent(text=PATHOLOGICAL[name])])
    started = time.monotonic()
    out, report = shaper.shape_with_report(CallInfo(server="s", tool="t", downstream_tool="t"), original)
    elapsed = time.monotonic() - started
    # Measured before the linecap fix: 100 KB of one char took 42 s (quadratic path regex).
    assert elapsed < 5, f"{name}: {elapsed:.1f}s"
    if report.trm_id:
        assert ledger.get_body(report.trm_id)["content"][0]["text"] == PATHOLOGICAL[name]


# ---- JSON-RPC on the wire ------------------------------------------------------------


def _initialize(id_: Any) -> bytes:
    return json.dumps(initialize_request("2025-11-25", id_=id_)).encode()


def _call(id_: Any, text: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
    ).encode()


def test_malformed_and_out_of_order_json_rpc_on_stdio(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        prewarmed([OFFLOAD_MCP, "serve", "--ledger", str(tmp_path / "l.db"), "--", *HOSTILE]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=proxy_env(),
        cwd=str(ROOT),
    )
    answers: dict[Any, dict[str, Any]] = {}
    stray: list[bytes] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                stray.append(line)
                continue
            answers[message.get("id")] = message

    threading.Thread(target=pump, daemon=True).start()
    assert proc.stdin is not None

    def send(data: bytes) -> None:
        proc.stdin.write(data + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    try:
        for junk in (
            b"garbage, not json",
            b"{}",
            b"[]",
            b'{"jsonrpc":"2.0","id":"bad","method":123}',
            b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ec',
        ):
            send(junk)
        send(_call("early", "before initialize"))  # out of order
        send(_initialize("init"))
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        send(b'{"jsonrpc":"2.0","id":"unknown","method":"no/such/method"}')
        send(b'{"jsonrpc":"2.0","id":"ghost","result":{}}')  # a response to nothing
        send(_call("big", "z" * 3_000_000))  # a 3 MB request line
        send(_call("last", "still serving"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not {"last", "big", "unknown", "early"} <= set(answers):
            time.sleep(0.05)
        assert proc.poll() is None, "the proxy died"
        assert answers["early"]["error"]["code"] in (types.INVALID_PARAMS, types.INVALID_REQUEST)
        assert answers["unknown"]["error"]["code"] == types.METHOD_NOT_FOUND
        assert answers["last"]["result"]["content"][0]["text"] == "still serving"
        big = answers["big"]["result"]
        assert not big.get("isError") and "trm_" in big["content"][0]["text"]  # offloaded, not lost
        assert not stray
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(15)  # stdin closed: the proxy ends its session and exits
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_malformed_oversized_and_out_of_order_json_rpc_over_http(tmp_path: Path, transport: str) -> None:
    with running_proxy(["--ledger", str(tmp_path / "l.db"), "--", *HOSTILE], transport) as proxy:
        parts = urlsplit(proxy.url)
        base = f"{parts.scheme}://{parts.netloc}"
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        with httpx2.Client(base_url=base, timeout=30) as http:
            if transport == "streamable-http":
                target = "/mcp"
                early = http.post(target, content=_call(1, "no session yet"), headers=headers)
                assert early.status_code in (400, 404), early.text
            else:
                target = "/messages/?session_id=" + "0" * 32
                early = http.post(target, content=_call(1, "no session"), headers=headers)
                assert early.status_code in (400, 404), early.text
            for body in (b"not json", b"{", b"[]", b'{"jsonrpc":"1.0"}', b"\xff\xfe\x00"):
                bad = http.post(target, content=body, headers=headers)
                assert 400 <= bad.status_code < 500, (body, bad.status_code)
            wrong_type = http.post(target, content=_initialize(1), headers={"content-type": "text/plain"})
            assert wrong_type.status_code in (400, 415)
            oversized = http.post(target, content=b'{"x":"' + b"a" * (5 * 1024 * 1024) + b'"}', headers=headers)
            assert oversized.status_code in (400, 413)
            assert http.get("/healthz").status_code == 200
    # The proxy served throughout and shut down cleanly.
    assert proxy.proc.returncode is not None
