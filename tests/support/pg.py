"""A real PostgreSQL server for the tests: Debian's binaries, a throwaway cluster, a non-root user.

`PostgresServer.start()` runs `initdb` and `pg_ctl` in a temporary directory owned by an
unprivileged user (PostgreSQL refuses to run as root; as root the cluster belongs to the
`postgres` system user, or `nobody` when that does not exist), listening on 127.0.0.1 on a free
port and on a unix socket in the same directory. Durability is off (`fsync=off`): the tests
need a real server, not a durable one. `stop()`/`start()` simulate an outage; `url(schema)`
gives a URL whose tables live in their own schema, so each test starts empty without the cost
of a database per test.

The fixtures `postgres` (one server per test session) and `pg_url` (a fresh schema per
test) build on this; they skip with the reason when the binaries are not installed.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.processes import child_pids

SUPERUSER = "offload"
DATABASE = "offload"


def find_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's bin directory, or None (pg_ctl on PATH counts too)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path and shutil.which("initdb") else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="offload-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = _service_user()
        if self.user is not None:
            info = pwd.getpwnam(self.user)
            os.chown(self.root, info.pw_uid, info.pw_gid)
        self.host = "127.0.0.1"

    def _run(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout, cwd=self.root)

    def init(self) -> None:
        self._run(
            "initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"
        )
        (self.root / "log").mkdir()
        if self.user is not None:
            info = pwd.getpwnam(self.user)
            os.chown(self.root / "log", info.pw_uid, info.pw_gid)
        self.start()
        psql = self._run(
            "psql",
            "-h",
            str(self.root),
            "-p",
            str(self.port),
            "-U",
            SUPERUSER,
            "-d",
            "postgres",
            "-c",
            f"CREATE DATABASE {DATABASE}",
        )
        assert "CREATE DATABASE" in psql.stdout, psql.stderr

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses={self.host} -c fsync=off -c full_page_writes=off -c max_connections=200"
        done = self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log" / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
            check=False,
        )
        if done.returncode != 0:
            log = (
                (self.root / "log" / "server.log").read_text(errors="replace")[-2000:]
                if (self.root / "log" / "server.log").exists()
                else ""
            )
            raise RuntimeError(f"pg_ctl start failed: {done.stderr or done.stdout}\n{log}")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, schema: str | None = None) -> str:
        """postgresql://offload@127.0.0.1:PORT/offload, its tables in `schema` when given."""
        base = f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{DATABASE}"
        return f"{base}?options=-csearch_path%3D{schema}" if schema else base

    def execute(self, sql: str, schema: str | None = None) -> list[tuple[object, ...]]:
        """Run SQL as the superuser from outside the proxy (set-up, fault injection, checks)."""
        import psycopg

        with psycopg.connect(self.url(schema), autocommit=True) as conn:
            cur = conn.execute(sql.encode())
            return cur.fetchall() if cur.description else []

    def new_schema(self) -> str:
        name = "t_" + uuid.uuid4().hex[:12]
        self.execute(f"CREATE SCHEMA {name}")
        return name


def _service_user() -> str | None:
    """Who runs the server: nobody special when we are not root; as root, an unprivileged user."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) exists to run PostgreSQL")


def start_server() -> PostgresServer:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL binaries (initdb, pg_ctl) not found: `apt-get install -y postgresql`")
    server = PostgresServer(bin_dir)
    try:
        server.init()
    except BaseException:
        server.destroy()
        raise
    return server


def cluster_pids(postgres: Any) -> list[int]:
    """The postmaster and every process it started (backends, checkpointer, walwriter, ...)."""
    master = int((postgres.data / "postmaster.pid").read_text().split()[0])
    return [master, *child_pids(master)]


@contextmanager
def frozen(postgres: Any) -> Iterator[None]:
    """Every process of the server stopped (SIGSTOP): connections stay open and nothing answers."""
    pids = cluster_pids(postgres)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


@contextmanager
def locked(pg_url: str, tables: str) -> Iterator[None]:
    """`LOCK TABLE ... IN ACCESS EXCLUSIVE MODE` held by another session: readers and writers queue."""
    import psycopg

    with psycopg.connect(pg_url) as conn:
        conn.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            conn.rollback()


async def timed(probe: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.monotonic()
    answer = await probe()
    return time.monotonic() - started, answer
