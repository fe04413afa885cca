"""The upstream stdio wire without a worker thread per line and without relay tasks.

The SDK's `stdio_server()` reads stdin and writes stdout through
`anyio.wrap_file`: every line read, every write and every flush is a hop to a
worker thread and back, three per tool call plus the event-loop wake-ups,
and a reader and a writer task hand each message on through a stream of
their own (docs/design.md, "The upstream stdio wire"). Together that was most of what one proxy hop
cost (bench/bench_hop_latency.py). When stdin and stdout are pipes or sockets,
as every MCP client launches a stdio server, this module reads and writes them
non-blocking on the event loop (`anyio.wait_readable` / `wait_writable`):
`PipeMessages.receive()` reads and parses the next line in the server's own
reading task, `PipeMessageWriter.send()` serialises and writes in the sender's
task. Framing and parsing are the SDK stdio transport's, line for line: UTF-8
with replacement, universal newlines, `jsonrpc_message_adapter.validate_json`,
a line that is no message handed on as its exception, `model_dump_json(by_alias,
exclude_unset)` plus a newline.

Kept from the SDK: while serving, fd 0 reads the null device and fd 1 points at
stderr, so a stray print or a child's inherited descriptor can never tear a
frame on the wire; both are restored on exit, with their blocking mode.
Inert (the SDK's thread-based transport serves unchanged) when either
descriptor is a regular file or a terminal, which cannot be polled or whose
blocking mode is shared with a shell, and on Windows; `inert_reason()` names
which (logged at debug level).
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

_READ_CHUNK = 1 << 16


def pollable(fd: int) -> bool:
    """A pipe or a socket: the event loop can wait on it, and its blocking mode is this process's own."""
    if sys.platform == "win32":  # anyio waits on sockets only there
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeLines:
    """Lines of a non-blocking descriptor as the SDK's `AsyncFile` over stdin yields them (text, newline kept)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        # As TextIOWrapper(encoding="utf-8", errors="replace") reads: universal newlines (\r\n and \r are \n).
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        line: list[str] = []  # parts of the current line: a long line is joined once, not re-copied per chunk
        held_cr = False  # a chunk ending in \r: its \n may start the next chunk
        while True:
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            text = ("\r" if held_cr else "") + decoder.decode(chunk, final=not chunk)
            held_cr = bool(chunk) and text.endswith("\r")
            if held_cr:
                text = text[:-1]
            *ends, rest = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            for end in ends:
                line.append(end)
                yield "".join(line) + "\n"
                line = []
            if rest:
                line.append(rest)
            if not chunk:
                if line:
                    yield "".join(line)
                return


class PipeWriter:
    """Writes text whole to a non-blocking descriptor, waiting for room when the reader is slow (nothing is buffered)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> int:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self.fd, data) :]
            except BlockingIOError:
                pass
            if data:
                await anyio.wait_writable(self.fd)
        return len(text)


def _claim(fd: int, diversion: int) -> tuple[int, bool]:
    """Serve `fd` from a private non-blocking duplicate and point `fd` at `diversion`: (the duplicate, was it blocking)."""
    private = os.dup(fd)  # not inheritable: no child gets the wire
    blocking = os.get_blocking(private)
    os.set_blocking(private, False)
    os.dup2(diversion, fd)
    return private, blocking


def _release(fd: int, private: int, blocking: bool) -> None:
    with suppress(OSError):
        os.set_blocking(private, blocking)
    with suppress(OSError):
        os.dup2(private, fd)
    with suppress(OSError):
        os.close(private)


class PipeMessages(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The stdin message stream: each `receive()` reads the next line and parses it exactly as the SDK's
    stdio reader does (a line that is no JSON-RPC message comes out as the exception). Pulled by the
    server's own reading task: no reader task and no hand-over stream in between."""

    def __init__(self, fd: int) -> None:
        self._lines = PipeLines(fd).__aiter__()
        self._closed = False
        self._reading: anyio.CancelScope | None = None

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        with anyio.CancelScope() as self._reading:
            try:
                line = await anext(self._lines)
            except StopAsyncIteration:
                raise anyio.EndOfStream from None
        if self._reading.cancelled_caught:  # closed while waiting (the wire broke): read as the end
            raise anyio.EndOfStream
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except Exception as exc:
            return exc

    def close(self) -> None:
        self._closed = True
        if self._reading is not None:
            self._reading.cancel()

    async def aclose(self) -> None:
        self.close()


class PipeMessageWriter(anyio.abc.ObjectSendStream[SessionMessage]):
    """The stdout message stream: `send()` serialises as the SDK's stdio writer does and writes at once,
    one message at a time (a lock keeps two senders' partial writes from interleaving). A broken wire
    (the client closed its end) ends the reading side too, so the server stops as at end of input."""

    def __init__(self, fd: int, reader: PipeMessages) -> None:
        self._writer = PipeWriter(fd)
        self._reader = reader
        self._lock = anyio.Lock(fast_acquire=True)
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        async with self._lock:
            try:
                await self._writer.write(text)
            except OSError as err:
                logger.debug("stdout: the client closed the wire: %r", err)
                self._closed = True
                self._reader.close()
                raise anyio.BrokenResourceError from err

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()


@asynccontextmanager
async def _pipe_stdio() -> AsyncIterator[tuple[Any, Any]]:
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        stdin_fd, stdin_blocking = _claim(0, null)
    finally:
        os.close(null)
    try:
        stdout_fd, stdout_blocking = _claim(1, 2)
    except OSError:
        _release(0, stdin_fd, stdin_blocking)
        raise
    try:
        messages = PipeMessages(stdin_fd)
        yield messages, PipeMessageWriter(stdout_fd, messages)
    finally:
        _release(1, stdout_fd, stdout_blocking)
        _release(0, stdin_fd, stdin_blocking)


def upstream_stdio() -> AbstractAsyncContextManager[tuple[Any, Any]]:
    """The (read, write) message streams of the process's stdio: on the event loop when both are pipes or
    sockets (see the module doc), else the SDK's `stdio_server()` as it is."""
    inert = inert_reason()
    if inert is None:
        return _pipe_stdio()
    logger.debug("stdio: the SDK's thread-based transport serves (%s)", inert)
    return cast(AbstractAsyncContextManager[tuple[Any, Any]], stdio_server())


def inert_reason() -> str | None:
    """Why the SDK's own transport serves this process's stdio (None: this module's does)."""
    if sys.platform == "win32":
        return "windows"
    if not pollable(0):
        return "stdin_not_pipe_or_socket"
    if not pollable(1):
        return "stdout_not_pipe_or_socket"
    return None
