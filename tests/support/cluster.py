"""Test fixtures for a deployment: replicas of the proxy behind a real load balancer.

- `free_port()`: a free TCP port on 127.0.0.1.
- `load_balancer(tmp, backends)`: Debian's nginx, round-robin without stickiness, on a free
  127.0.0.1 port, its config rendered from docs/deploy/nginx.conf (the deployment guide's example, docs/deployment.md) into
  `tmp`; started and stopped here. Skips with a reason when nginx is not installed
  (.ci/run installs it).
- `replicas(n, args, env)`: n `offload-mcp serve --transport streamable-http` processes.
- `bearer_client(url, token)`: an httpx client sending the token, for the MCP transports.

Everything binds 127.0.0.1; every process is stopped by the context manager that started it.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from support.proxy import RunningProxy, running_proxy
from support.servers import HOSTILE, ROOT

DEPLOY = ROOT / "docs" / "deploy"
NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).exists()), None
)

needs_nginx = pytest.mark.skipif(
    NGINX is None, reason="nginx not installed: `apt-get install -y nginx` (.ci/run does it)"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def render(template: str, **values: str) -> str:
    """Fill `{{NAME}}` placeholders; refuse a template with one left over (the example drifted)."""
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", value)
    assert re.search(r"{{[A-Z_]+}}", template) is None, (
        f"unfilled placeholder in deployment example: {template[template.index('{{') :][:40]}"
    )
    return template


@dataclass
class LoadBalancer:
    url: str
    """The MCP endpoint through the balancer."""
    proc: subprocess.Popen[bytes]
    log: Path


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nginx did not listen on {port}:\n{log.read_text(errors='replace')}")


ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210"
"""The deployment example's two bearer tokens, as the tests fill them in."""


@contextmanager
def load_balancer(tmp: Path, backends: list[str]) -> Iterator[LoadBalancer]:
    """nginx in front of `backends` (host:port each), from the deployment guide's example config."""
    if NGINX is None:
        pytest.skip("nginx not installed")
    tmp.mkdir(parents=True, exist_ok=True)
    for sub in ("logs", "tmp"):
        (tmp / sub).mkdir(exist_ok=True)
    port = free_port()
    import os

    conf = render(
        (DEPLOY / "nginx.conf").read_text(),
        LISTEN=f"127.0.0.1:{port}",
        UPSTREAMS="\n".join(f"        server {b};" for b in backends),
        PREFIX=str(tmp),
        # nginx started by root would hand its workers to `nobody`, who cannot write the temp dir.
        USER="user root root;" if os.geteuid() == 0 else "",
    )
    (tmp / "nginx.conf").write_text(conf)
    log = tmp / "logs" / "error.log"
    log.touch()
    proc = subprocess.Popen(
        [NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e", str(log), "-g", "daemon off;"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_listening(port, proc, log)
        yield LoadBalancer(f"http://127.0.0.1:{port}/mcp", proc, log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def host_port(url: str) -> str:
    return url.split("//", 1)[1].split("/", 1)[0]


@contextmanager
def replicas(n: int, args: list[str], env: dict[str, str] | None = None) -> Iterator[list[RunningProxy]]:
    """n replicas, started at once (each takes seconds to come up on a busy machine), all stopped after."""
    from concurrent.futures import ThreadPoolExecutor

    managers = [running_proxy(args, "streamable-http", env) for _ in range(n)]
    with ExitStack() as stack:
        with ThreadPoolExecutor(n) as pool:
            futures = [pool.submit(m.__enter__) for m in managers]
        for manager, future in zip(managers, futures, strict=True):
            if future.exception() is None:
                stack.push(manager.__exit__)  # stop every one that started, even when another failed
        yield [f.result() for f in futures]


def bearer_client(token: str | None, **kw: Any) -> httpx2.AsyncClient:
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    return create_mcp_http_client(headers=headers, **kw)


def deployment_config(tmp: Path, ledger: str, **ledger_settings: Any) -> Path:
    """The deployment guide's example config with test tokens, the shared ledger and the fixture server."""
    text = render((DEPLOY / "offload.json").read_text(), ALICE_TOKEN=ALICE, BOB_TOKEN=BOB, LEDGER_URL=ledger)
    config = json.loads(text)
    config["mcpServers"] = {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}}
    config["offload"]["ledger"].update(ledger_settings)
    path = tmp / "offload.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@asynccontextmanager
async def handshake(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with bearer_client(token) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
