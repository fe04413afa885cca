"""The servers the tests wrap, and the config files that name them.

- `fixture_cmd(*opts)` / `fixture_entry(*opts)`: tests/fixtures/fixture_server.py as a command line / a config entry.
- `python_entry(script, *args)`: any Python server (a script or a console script) as a config entry.
- `HOSTILE`: tests/fixtures/hostile_server.py's command line (results built to stress the proxy).
All of them start pre-warmed (support/zygote.py): real processes on real stdio that skip the SDK's import.
- `write_config(tmp_path, servers, offload=None)`: a config file; returns its path.
- `NPM_BIN`, `needs_npm`: the npm servers, skipping with a reason if absent.
- `fixture_over_http(transport)`: the fixture server itself over HTTP on a free port; yields its URL.
- `record_mcp_corpus(out, *args)`: bench/corpus_mcp.py's sessions with real servers, written to `out`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.zygote import prewarmed

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
FIXTURE_SERVER = FIXTURES / "fixture_server.py"
HOSTILE_SERVER = str(FIXTURES / "hostile_server.py")
RELAY_SERVER = str(FIXTURES / "relay_server.py")
PYTHON = sys.executable
HOSTILE = prewarmed([HOSTILE_SERVER])
NPM_BIN = ROOT / "node_modules" / ".bin"
GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")

needs_npm = pytest.mark.skipif(
    not (NPM_BIN / "mcp-server-everything").exists(),
    reason="npm servers not installed: run `npm install` at the repo root",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fixture_cmd(*opts: str) -> list[str]:
    return prewarmed([str(FIXTURE_SERVER), *opts])


def python_entry(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    command, *launch = prewarmed([script, *args])
    return {"command": command, "args": launch, **extra}


def fixture_entry(*opts: str, **extra: Any) -> dict[str, Any]:
    return python_entry(str(FIXTURE_SERVER), *opts, **extra)


def write_config(
    tmp_path: Path, servers: dict[str, Any], offload: dict[str, Any] | None = None, name: str = "mcp.json"
) -> Path:
    data: dict[str, Any] = {"mcpServers": servers}
    if offload is not None:
        data["offload"] = offload
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


@contextmanager
def fixture_over_http(transport: str, *opts: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, str(FIXTURE_SERVER), "--transport", transport, "--port", str(port), *opts],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    path = "/mcp" if transport == "streamable-http" else "/sse"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        proc.wait(10)


def record_mcp_corpus(out: Path, *args: str, timeout: float = 300) -> Path:
    """`out`, written by bench/corpus_mcp.py (ARGS: e.g. `--only NAME`) from its real servers over stdio."""
    from support.proxy import proxy_env

    done = subprocess.run(
        [PYTHON, str(ROOT / "bench" / "corpus_mcp.py"), "--out", str(out), *args],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        env=proxy_env(),
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out
