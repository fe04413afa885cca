"""Start the real proxy (a subprocess) in front of real servers, and talk to it.

- `proxy_session(args)`: `offload-mcp serve ARGS` over stdio, as a handshake-era
  `ClientSession` (initialized).
- `proxy_client(args)`: the same with `mcp.Client`, which negotiates 2026-07-28.
- `proxy_http(args, transport)`: `offload-mcp serve --transport T --port 0 ARGS`;
  yields the endpoint URL read from the proxy's stderr.
- `running_proxy(args)`: the same as a `RunningProxy` we can measure and kill.
- `RawSession` / `raw_session(config)`: the proxy spoken to in raw JSON-RPC over stdio.
- `connect(url, transport)` / `http_session(url)`: an initialized client session over HTTP.
- `run_offload_mcp(*args)`: an `offload-mcp` command run to its end (pre-warmed), its output captured.
- `text_of(result)`, `recall_whole(session, trm_id)`, `TRM`: reading what the proxy answered.

The proxy starts pre-warmed (support/zygote.py) unless a test reads its process or its start-up (`prewarm=False`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from support.servers import ROOT
from support.zygote import prewarmed

OFFLOAD_MCP = str(Path(sys.executable).parent / "offload-mcp")
TRM = re.compile(r"trm_[0-9a-f]{16}")


def proxy_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OFFLOAD_MCP_CONFIG", "OFFLOAD_MCP_LEDGER")}
    env.setdefault("OFFLOAD_MCP_TEST", "1")
    if extra:
        env.update(extra)
    return env


def run_offload_mcp(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`offload-mcp ARGS` from the repository's root, as a user runs it, its output captured."""
    return subprocess.run(
        prewarmed([OFFLOAD_MCP, *args]), capture_output=True, text=True, env=proxy_env(), cwd=str(ROOT), timeout=timeout
    )


def stdio_params(args: list[str], env: dict[str, str] | None = None, prewarm: bool = True) -> Any:
    """`offload-mcp serve ARGS` as the MCP SDK's stdio server parameters, for tests that open the transport themselves.
    `prewarm=False`: the proxy is the process itself, for tests that read its /proc entries or its start-up."""
    from mcp.client.stdio import StdioServerParameters

    serve = [OFFLOAD_MCP, "serve", *args]
    command, *launch = prewarmed(serve) if prewarm else serve
    return StdioServerParameters(command=command, args=launch, env=proxy_env(env), cwd=str(ROOT))


@asynccontextmanager
async def proxy_session(
    args: list[str], env: dict[str, str] | None = None, prewarm: bool = True, **session_kw: Any
) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(stdio_params(args, env, prewarm)) as (read, write):
        async with ClientSession(read, write, **session_kw) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def proxy_client(args: list[str], env: dict[str, str] | None = None, **client_kw: Any) -> AsyncIterator[Any]:
    from mcp import Client

    async with Client(stdio_params(args, env), **client_kw) as client:
        yield client


@contextmanager
def proxy_http(args: list[str], transport: str = "streamable-http", env: dict[str, str] | None = None) -> Iterator[str]:
    """Run the proxy over HTTP on a free port; yield its endpoint URL."""
    with running_proxy(args, transport, env, log_level="info") as proxy:
        yield proxy.url


# ---- a proxy process we can measure and kill ------------------------------------------


@dataclass
class RunningProxy:
    proc: subprocess.Popen[str]
    url: str
    log: list[str]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def status(self, key: str) -> int:
        """A /proc/PID/status value in kB (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise KeyError(key)

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


@contextmanager
def running_proxy(
    args: list[str],
    transport: str = "streamable-http",
    env: dict[str, str] | None = None,
    log_level: str = "warning",
    nofile: int | None = None,
    prewarm: bool = True,
) -> Iterator[RunningProxy]:
    """`offload-mcp serve --transport T --port 0 ARGS` as a process we can kill; its stderr lines are kept.
    `prewarm=False`: the proxy is the process itself, for tests that read its /proc entries or its start-up.
    `nofile`: the soft fd limit the proxy starts with (set in the child, so this process's own fds do not count)."""

    def limit_fds() -> None:
        if nofile is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    command = [OFFLOAD_MCP, "serve", "--transport", transport, "--port", "0", "--log-level", log_level, *args]
    proc = subprocess.Popen(
        command if not prewarm or nofile is not None else prewarmed(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=proxy_env(env),
        cwd=str(ROOT),
        preexec_fn=limit_fds if nofile is not None else None,
    )
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = re.search(r"serving \S+ on (http://\S+)", line)
            if m and not url:
                url.append(m.group(1))
                found.set()
        found.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        if not found.wait(60) or not url:
            raise AssertionError("proxy did not start:\n" + "".join(lines))
        yield RunningProxy(proc, url[0], lines)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        reader.join(5)


def initialize_request(protocol_version: str, *, id_: Any = 1, client: str = "t") -> dict[str, Any]:
    """A raw JSON-RPC `initialize` from a client that declares no capabilities, for tests that speak the wire."""
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol_version,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "0"},
        },
    }


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def recall_whole(session: Any, trm_id: str, max_chars: int = 1_000_000) -> str:
    """Page `recall_tool_result` from offset 0 to the end of the body; the concatenation of the slices."""
    text, offset = "", 0
    while True:
        page = await session.call_tool(
            "recall_tool_result", {"mem_id": trm_id, "offset": offset, "max_chars": max_chars}
        )
        assert not page.is_error, text_of(page)
        header, _, body = text_of(page).partition("\n")
        text += body
        nxt = re.search(r"offset=(\d+)", header)
        if "end of body" in header or nxt is None:
            return text
        offset = int(nxt.group(1))


@asynccontextmanager
async def connect(url: str, transport: str) -> Any:
    if transport == "sse":
        async with sse_client(url, sse_read_timeout=120) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s
    else:
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


class RawSession:
    """One `offload-mcp serve` process spoken to in raw JSON-RPC over stdio."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            prewarmed([OFFLOAD_MCP, "serve", *args]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=proxy_env(),
            cwd=str(ROOT),
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[bytes, dict[str, Any]]:
        """Send one request; return the raw `result` bytes as received and the decoded response."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"proxy closed stdout while waiting for {method}")
            decoded = json.loads(line)
            if decoded.get("id") == self.next_id:
                raw = line.split(b'"result":', 1)[1] if b'"result":' in line else line
                return raw, decoded

    def initialize(self) -> None:
        _, response = self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}},
        )
        assert "result" in response, response
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def list_tools(self) -> tuple[bytes, list[dict[str, Any]]]:
        raw, response = self.request("tools/list")
        return raw, response["result"]["tools"]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        _, response = self.request("tools/call", {"name": name, "arguments": arguments})
        return response["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@contextmanager
def raw_session(config: Path) -> Iterator[RawSession]:
    session = RawSession(["--config", str(config)])
    try:
        session.initialize()
        yield session
    finally:
        session.close()
