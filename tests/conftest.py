"""Shared helpers: start the real proxy (a subprocess) in front of real servers, and talk to it.

- `fixture_cmd(*opts)`: the command line of tests/fixtures/fixture_server.py.
- `write_config(tmp_path, servers, offload=None)`: a config file; returns its path.
- `proxy_session(args)`: `offload-mcp serve ARGS` over stdio, as a handshake-era
  `ClientSession` (initialized).
- `proxy_client(args)`: the same with `mcp.Client`, which negotiates 2026-07-28.
- `proxy_http(args, transport)`: `offload-mcp serve --transport T --port 0 ARGS`;
  yields the endpoint URL read from the proxy's stderr.
- `NPM_BIN`, `needs_npm`: the npm servers, skipping with a reason if absent.
- `run_unprivileged(args)`, `read_only_dir`: run a command that file modes bind (even as root),
  and a directory it cannot create files in.
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

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SERVER = ROOT / "tests" / "fixtures" / "fixture_server.py"
PYTHON = sys.executable
OFFLOAD_MCP = str(Path(sys.executable).parent / "offload-mcp")
NPM_BIN = ROOT / "node_modules" / ".bin"

needs_npm = pytest.mark.skipif(
    not (NPM_BIN / "mcp-server-everything").exists(),
    reason="npm servers not installed: run `npm install` at the repo root",
)


@pytest.fixture(scope="session", autouse=True)
def _isolated_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep every proxy's default ledger out of the user's state directory."""
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    yield
    if old is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = old


def fixture_cmd(*opts: str) -> list[str]:
    return [PYTHON, str(FIXTURE_SERVER), *opts]


def fixture_entry(*opts: str, **extra: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [str(FIXTURE_SERVER), *opts], **extra}


def write_config(
    tmp_path: Path, servers: dict[str, Any], offload: dict[str, Any] | None = None, name: str = "mcp.json"
) -> Path:
    data: dict[str, Any] = {"mcpServers": servers}
    if offload is not None:
        data["offload"] = offload
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def proxy_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OFFLOAD_MCP_CONFIG", "OFFLOAD_MCP_LEDGER")}
    env.setdefault("OFFLOAD_MCP_TEST", "1")
    if extra:
        env.update(extra)
    return env


def _params(args: list[str], env: dict[str, str] | None) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=OFFLOAD_MCP, args=["serve", *args], env=proxy_env(env), cwd=str(ROOT))


@asynccontextmanager
async def proxy_session(args: list[str], env: dict[str, str] | None = None, **session_kw: Any) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(_params(args, env)) as (read, write):
        async with ClientSession(read, write, **session_kw) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def proxy_client(args: list[str], env: dict[str, str] | None = None, **client_kw: Any) -> AsyncIterator[Any]:
    from mcp import Client

    async with Client(_params(args, env), **client_kw) as client:
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
) -> Iterator[RunningProxy]:
    """`offload-mcp serve --transport T --port 0 ARGS` as a process we can measure and kill; its stderr lines are kept.
    `nofile`: the soft fd limit the proxy starts with (set in the child, so this process's own fds do not count)."""

    def limit_fds() -> None:
        if nofile is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.Popen(
        [OFFLOAD_MCP, "serve", "--transport", transport, "--port", "0", "--log-level", log_level, *args],
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


def child_pids(parent: int, needle: str = "") -> list[int]:
    """The live children of `parent` (no zombies), with `needle` in their command line when one is given."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(ppid) == parent and state != "Z" and needle in cmdline:
            pids.append(int(entry.name))
    return pids


def run_unprivileged(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Permissions do not bind root: as root, run inside a fresh user namespace (uid nobody, no capabilities)."""
    if os.geteuid() == 0:
        probe = subprocess.run(["unshare", "-U", "true"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip("running as root without `unshare -U`: file permissions cannot be made to bind")
        args = ["unshare", "-U", *args]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Path:
    """A directory in which commands run with `run_unprivileged` cannot create files (mode 0555)."""
    tmp_path.chmod(0o755)  # the unprivileged process reads its inputs from here
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    if run_unprivileged(["touch", str(directory / "probe")]).returncode == 0:
        pytest.skip("file modes do not bind here, even in a user namespace")
    return directory


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


# ---- a real PostgreSQL (tests/pg.py) ---------------------------------------------------------


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """One throwaway PostgreSQL server for the session (initdb + pg_ctl as a non-root user)."""
    from pg import find_bin_dir, start_server

    if find_bin_dir() is None:
        pytest.skip(
            "PostgreSQL binaries (initdb, pg_ctl) not installed: `apt-get install -y postgresql` (.ci/run does)"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip('psycopg not installed: pip install -e ".[test]" (it includes the postgres extra)')
    server = start_server()
    yield server
    server.destroy()


@pytest.fixture
def pg_url(postgres: Any) -> str:
    """A URL to the session's PostgreSQL whose tables live in a schema of their own (empty)."""
    return str(postgres.url(postgres.new_schema()))
