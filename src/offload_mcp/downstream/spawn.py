"""Starting a stdio server's process: our own pipes for its stdin and stdout, and stopping it.

No SDK import here, so `serve` can start every stdio server before it imports the SDK (EarlyStarts):
the children import theirs while the proxy does. The SDK's import is most of a start's CPU in both
processes, and run one after the other they would make the first tools/list wait for the sum; see
EarlyStarts. stdio.py speaks MCP over what `spawn` returns.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from types import TracebackType
from typing import NamedTuple

import anyio
import anyio.abc

from .settings import ServerEntry, StdioServer

logger = logging.getLogger(__name__)

STDIN_CLOSE_GRACE_S = 2.0
TERM_GRACE_S = 2.0
_READ_CHUNK = 1 << 18
_STDOUT_PIPE_BYTES = 1 << 20


def inherited_environment() -> dict[str, str]:
    """Our environment minus our own settings: a wrapped server never sees OFFLOAD_MCP_* (the auth token)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_MCP_")}


async def wait_returncode(process: anyio.abc.Process, timeout: float) -> bool:
    # Poll returncode rather than process.wait(): a grandchild holding the pipes
    # open would make wait() hang on pipe EOF.
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


async def stop_process(process: anyio.abc.Process, close_stdin: Callable[[], Awaitable[None]]) -> None:
    with suppress(Exception):
        await close_stdin()
    if await wait_returncode(process, STDIN_CLOSE_GRACE_S):
        return
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 2.0)):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        if await wait_returncode(process, grace):
            return
    logger.warning("downstream process %d survived SIGKILL; abandoning it", process.pid)


def close_fd(fd: int) -> None:
    """Close a descriptor the event loop may be waiting on (a waiter gets ClosedResourceError, not a hang)."""
    with suppress(OSError):
        anyio.notify_closing(fd)
    with suppress(OSError):
        os.close(fd)


class PipeOut:
    """Bytes to our non-blocking end of the child's stdin pipe, written whole (waiting while it is full).

    A write cancelled half way keeps its unsent tail, written before the next one, so a frame is never
    torn (the SDK follows a cancelled request at once with its courtesy `notifications/cancelled`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._tail = b""

    async def write(self, data: bytes) -> None:
        view = memoryview(self._tail + data if self._tail else data)
        try:
            while True:
                try:
                    view = view[os.write(self.fd, view) :]
                except BlockingIOError:
                    pass
                if not view:
                    return
                await anyio.wait_writable(self.fd)
        finally:
            self._tail = bytes(view)

    async def close(self) -> None:
        fd, self.fd = self.fd, -1  # once: a descriptor number closed twice may by then be someone else's
        if fd >= 0:
            close_fd(fd)


class PipeIn:
    """Chunks from our non-blocking end of the child's stdout pipe; None at its end."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray(_READ_CHUNK)
        self._view = memoryview(self._buffer)

    async def read(self) -> bytes | None:
        while True:
            try:
                # Into one reused buffer: os.read(fd, 256 KiB) allocates (and maps) 256 KiB per call, more
                # than a small answer's whole read costs (docs/design.md, "Reading large answers").
                size = os.readv(self.fd, [self._buffer])
            except BlockingIOError:
                pass
            except OSError:
                return None
            else:
                chunk = bytes(self._view[:size]) if size else None
                if size == len(self._buffer) < _STDOUT_PIPE_BYTES:
                    self._grow()
                return chunk
            try:
                await anyio.wait_readable(self.fd)
            except (OSError, anyio.ClosedResourceError):
                return None

    def _grow(self) -> None:
        """A read that filled the buffer: twice the room, up to the pipe's size. A server that answers 1 MB
        is then read in one chunk, not four (its line is then the chunk itself, not a join of copies);
        one that never fills 256 KiB keeps no more."""
        self._view.release()
        self._buffer = bytearray(len(self._buffer) * 2)
        self._view = memoryview(self._buffer)

    async def readable(self) -> None:
        with suppress(OSError, ValueError, anyio.ClosedResourceError):
            await anyio.wait_readable(self.fd)

    async def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            close_fd(fd)


class StreamOut:
    """Bytes to the child's stdin as anyio opened it (Windows, where the loop cannot wait on a pipe)."""

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self._stream = stream

    async def write(self, data: bytes) -> None:
        await self._stream.send(data)

    async def close(self) -> None:
        await self._stream.aclose()


class StreamIn:
    """Chunks from the child's stdout as anyio opened it (Windows); None at its end."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream) -> None:
        self._stream = stream
        self._next: bytes | None = None

    async def read(self) -> bytes | None:
        if self._next is not None:
            chunk, self._next = self._next, None
            return chunk
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return None

    async def readable(self) -> None:
        self._next = await self.read()

    async def close(self) -> None:
        with suppress(Exception):
            await self._stream.aclose()


def _pipe_for(child_end: int) -> tuple[int, int]:
    """A pipe for the child's stdin (0) or stdout (1) as (our end, the child's end); ours non-blocking,
    neither inherited by anyone else (os.pipe descriptors are close-on-exec)."""
    read, write = os.pipe()
    ours, childs = (write, read) if child_end == 0 else (read, write)
    os.set_blocking(ours, False)
    return ours, childs


class Launch(NamedTuple):
    """What a stdio server's process is started with."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None

    @classmethod
    def of(cls, command: str, args: list[str], env: Mapping[str, str], cwd: str | None) -> Launch:
        """Our environment (less our own settings) with the entry's `env` over it."""
        return cls([command, *args], {**inherited_environment(), **env}, cwd)


class Spawned(NamedTuple):
    process: anyio.abc.Process
    stdin: PipeOut | StreamOut
    stdout: PipeIn | StreamIn

    async def stop(self) -> None:
        """As a session ends its child: stdin closed, then SIGTERM, then SIGKILL; our ends closed."""
        await stop_process(self.process, self.stdin.close)
        await self.stdout.close()
        if self.process.stderr is not None:
            with suppress(Exception):
                await self.process.stderr.aclose()


async def spawn(launch: Launch) -> Spawned:
    """The child with its stdin and stdout: our own pipes where the event loop can wait on them."""
    argv, env, cwd = launch
    if sys.platform == "win32":
        process = await anyio.open_process(argv, env=env, cwd=cwd, start_new_session=True)
        assert process.stdin is not None and process.stdout is not None
        return Spawned(process, StreamOut(process.stdin), StreamIn(process.stdout))
    import fcntl

    stdin_fd, child_stdin = _pipe_for(0)
    stdout_fd, child_stdout = _pipe_for(1)
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux
        with suppress(OSError):
            # A 1 MB answer in one write instead of 16 round trips through a 64 KiB pipe.
            fcntl.fcntl(stdout_fd, fcntl.F_SETPIPE_SZ, _STDOUT_PIPE_BYTES)
    try:
        process = await anyio.open_process(
            argv, stdin=child_stdin, stdout=child_stdout, env=env, cwd=cwd, start_new_session=True
        )
    except BaseException:
        close_fd(stdin_fd)
        close_fd(stdout_fd)
        raise
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    return Spawned(process, PipeOut(stdin_fd), PipeIn(stdout_fd))


class EarlyStarts:
    """Every stdio server started before the proxy imports the SDK; each session's first start claims its own.

    How: `async with EarlyStarts(config.mcpServers) as early:` spawns each stdio server as its session
    would (the same `Launch`), then the proxy imports the SDK and builds its pool, and each server's
    first session takes its process with `claim` instead of spawning one. Restarts spawn their own.
    A process no session claimed (the proxy stopped before its pool started) is stopped on exit.

    Why: the SDK's import is most of a Python server's start-up, in the proxy and in a Python server
    alike. Started after the proxy's import, a server would begin its own only then, and the first
    tools/list would wait for both in turn; on two cores the two run side by side. With several
    servers on two cores the CPU is the bound and the gain shrinks (docs/design.md, "Startup";
    bench/bench_startup.py).

    Inert: remote servers (nothing to start); a server whose early spawn fails (a missing command:
    its session's own spawn fails the same way and reports it, so the error is said in one place);
    and callers that start a pool without one (the demo, tests in process).
    """

    def __init__(self, servers: Mapping[str, ServerEntry]) -> None:
        self._servers = servers
        self._started: dict[str, tuple[Launch, Spawned]] = {}

    async def __aenter__(self) -> EarlyStarts:
        try:
            for name, entry in self._servers.items():
                if isinstance(entry, StdioServer):
                    await self._start(name, entry)
        except BaseException:  # cancelled half way: no __aexit__ will stop what was started
            await self.__aexit__(None, None, None)
            raise
        return self

    async def _start(self, name: str, entry: StdioServer) -> None:
        launch = Launch.of(entry.command, entry.args, entry.env, entry.cwd)
        try:
            spawned = await spawn(launch)
        except Exception as err:
            logger.debug("server %r not started early (%s); its session starts it", name, err)
        else:
            self._started[name] = (launch, spawned)
            logger.debug("server %r started before the SDK import (pid %d)", name, spawned.process.pid)

    @property
    def pids(self) -> dict[str, int]:
        """The processes started early that no session has claimed yet, by server name."""
        return {name: spawned.process.pid for name, (_, spawned) in self._started.items()}

    async def claim(self, name: str, launch: Launch) -> Spawned | None:
        """`name`'s early process if it was started with `launch`, once; else None (and it is stopped)."""
        started = self._started.pop(name, None)
        if started is None:
            return None
        early_launch, spawned = started
        if early_launch != launch:  # never so today: the same entry and environment make both
            await spawned.stop()
            return None
        return spawned

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        unclaimed = [spawned for _, spawned in self._started.values()]
        self._started.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for spawned in unclaimed:
                    tg.start_soon(spawned.stop)
