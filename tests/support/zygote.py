"""A pre-warmed Python for the servers the tests start: fork one that has already imported the MCP SDK.

Why: importing the MCP SDK costs a Python process most of a second of CPU (pydantic builds its
models), and the suite starts several hundred real MCP processes (proxies, fixture servers,
mcp-server-git) on two cores, so imports were most of its run time.

How it works: each pytest process starts one zygote (`start()`, from conftest), which imports the SDK
and the proxy and then waits on a Unix socket. `prewarmed(argv)` is the command line of a tiny
launcher (support/zygote_launch.py, ~20 ms with `python -S`) that hands its stdin, stdout and stderr
to the zygote; the zygote forks a child that runs `argv` as `python ARGV...` would, on those very
pipes, with the launcher's working directory and environment. Each server is still its own process
on a real transport; only the imports are shared (copy-on-write).

The launcher stands in for the child as its caller sees it: signals are passed on, it exits as the
child did, and the child dies with it (a pidfd watch), so SIGKILL of the launcher kills the server.
Where a test needs the server's own process (its RSS, open fds or start-up; a proxy that watches its
server's /proc entries, downstream/settle.py; or what a signal does, which reaches the child a moment
after it reaches the launcher, so that a stdin closed right after it may be seen first), it runs the
plain command.
Without a zygote the launcher runs the plain command itself; `OFFLOAD_MCP_TEST_ZYGOTE=0` starts none,
to tell whether a failure has anything to do with it.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

LAUNCHER = str(Path(__file__).with_name("zygote_launch.py"))
_SOCKET = str(Path(tempfile.gettempdir()) / f"offload-mcp-zygote-{os.getpid()}.sock")
if len(_SOCKET) > 100:  # past what a Unix socket's path may hold (108 bytes)
    _SOCKET = f"/tmp/offload-mcp-zygote-{os.getpid()}.sock"
_zygote: subprocess.Popen[bytes] | None = None


def prewarmed(argv: list[str]) -> list[str]:
    """`python ARGV...` (ARGV[0] a Python script, console scripts included, or `-m`) as a pre-warmed command line."""
    return [sys.executable, "-S", LAUNCHER, _SOCKET, *argv]


def start() -> None:
    """Start this process's zygote (once) and wait until it listens; stopped when this process exits."""
    global _zygote
    if _zygote is not None or os.environ.get("OFFLOAD_MCP_TEST_ZYGOTE") == "0":
        return
    _zygote = subprocess.Popen(
        [sys.executable, __file__, _SOCKET, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert _zygote.stdout is not None
    if _zygote.stdout.readline().strip() != b"ready":
        # Slower, never wrong: every launcher then runs its plain command.
        sys.stderr.write("the test zygote did not start (its stderr is above); servers start unwarmed\n")
        stop()


def stop() -> None:
    global _zygote
    if _zygote is None:
        return
    _zygote.terminate()
    try:
        _zygote.wait(10)
    except subprocess.TimeoutExpired:
        _zygote.kill()
        _zygote.wait(5)
    _zygote = None
    Path(_SOCKET).unlink(missing_ok=True)


# ---- the zygote itself ----------------------------------------------------------------------------------


_WARM = (
    "anyio",
    "pydantic",
    "mcp",
    "mcp.client.stdio",
    "mcp.server.mcpserver",
    "mcp.server.stdio",
    "mcp.server.streamable_http",
    # What `offload-mcp serve` imports (none of them reads the environment or starts a thread on import).
    "offload_mcp.__main__",
    "offload_mcp.cli",
    "offload_mcp.commands.serve",
    "offload_mcp.downstream.pool",
    "offload_mcp.downstream.spawn",
    "offload_mcp.upstream.proxy",
    "offload_mcp.upstream.transports",
    "offload_mcp.analysis.stats",
)


def _warm() -> None:
    """Import what most servers here import first."""
    import importlib

    for name in _WARM:
        importlib.import_module(name)


def _serve(sock_path: str, parent: int) -> tuple[dict[str, Any], list[int]] | None:
    """Fork a child per request until the parent pytest process ends; in a child, return its request."""
    Path(sock_path).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(sock_path)
    listener.listen(128)
    parent_fd = os.pidfd_open(parent)
    stopping = os.pipe()
    signal.signal(signal.SIGTERM, lambda *_: os.write(stopping[1], b"x"))
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the launcher's connection)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        try:
            ready, _, _ = select.select([listener.fileno(), parent_fd, stopping[0], *children], [], [])
        except InterruptedError:
            continue
        if parent_fd in ready or stopping[0] in ready:
            listener.close()
            Path(sock_path).unlink(missing_ok=True)
            return None
        for fd in ready:
            if fd in children:
                pid, conn = children.pop(fd)
                _, status = os.waitpid(pid, 0)
                try:
                    conn.send(struct.pack("i", status))
                except OSError:
                    pass  # its launcher is gone; the child's watch has already ended it
                conn.close()
                os.close(fd)
        if listener.fileno() not in ready:
            continue
        conn, _ = listener.accept()
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            request = json.loads(message)
            launcher, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        except (OSError, ValueError):
            conn.close()
            continue
        if len(fds) != 3 or (uid, gid) != (os.getuid(), os.getgid()) or not _same_user_namespace(launcher):
            # Never a child with other credentials than its launcher's (a test run as nobody, or in a
            # user namespace): closed unanswered, the launcher runs the plain command itself.
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        request["launcher"] = launcher
        pid = os.fork()
        if pid == 0:
            listener.close()
            os.close(parent_fd)
            os.close(stopping[0])
            os.close(stopping[1])
            for fd, (_, other) in children.items():
                os.close(fd)
                other.close()
            conn.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            return request, fds
        for fd in fds:
            os.close(fd)
        conn.send(struct.pack("i", pid))
        children[os.pidfd_open(pid)] = (pid, conn)


def _same_user_namespace(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user")
    except OSError:
        return False


def _die_with(launcher: int) -> None:
    """End this child the moment its launcher ends, as a process ends with its own pid."""
    watch = os.pidfd_open(launcher)

    def wait() -> None:
        select.select([watch], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, name="zygote-launcher-watch", daemon=True).start()


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Turn this fork into `python ARGV...` on the launcher's stdio, directory and environment."""
    import io
    import runpy

    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    _die_with(int(request["launcher"]))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    for name in ("stdin", "stdout", "stderr"):
        setattr(sys, f"__{name}__", getattr(sys, name))
    script, *args = request["argv"]
    extra_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if script == "-m":  # python -m MODULE ARGS...: the working directory first on the path, as Python puts it
        sys.path[:1] = [os.getcwd(), *extra_path]
        sys.argv = ["-m", *args[1:]]
        sys.modules.pop(args[0], None)  # warmed, yet a module run as __main__ is not the imported one
        runpy.run_module(args[0], run_name="__main__", alter_sys=True)
        return
    script = os.path.abspath(script)
    sys.path[:1] = [os.path.dirname(script), *extra_path]
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    _warm()
    # Out of the collector's sight: a child's collections would otherwise walk (and so copy) the whole
    # shared heap, page by page, however little of it the child uses.
    gc.freeze()
    forked = _serve(sys.argv[1], int(sys.argv[2]))
    if forked is not None:
        _become(*forked)
