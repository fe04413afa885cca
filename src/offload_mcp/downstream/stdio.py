"""A stdio transport to a downstream server that keeps what we need to explain a failure.

Same wire as the SDK's `stdio_client` (newline-delimited JSON-RPC on the
child's stdin/stdout, the child in its own process group, stdin closed then
SIGTERM then SIGKILL on shutdown), plus two things a proxy needs when a
server misbehaves: the tail of its stderr (relayed to our log at debug level
and quoted in error messages) and how the process ended (exit code or
signal). `exited` is set the moment the child's stdout closes, so a death
between calls is noticed without a call having to fail first.
"""

from __future__ import annotations

import logging
import os
import signal
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.text import TextReceiveStream
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

STDIN_CLOSE_GRACE_S = 2.0
TERM_GRACE_S = 2.0
STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 2000


@dataclass
class ProcessRecord:
    """What we know about one run of a downstream process."""

    command: list[str]
    pid: int | None = None
    returncode: int | None = None
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    exited: anyio.Event = field(default_factory=anyio.Event)
    stopping: bool = False

    def stderr_tail(self) -> str:
        text = "\n".join(self.stderr).strip()
        return text[-STDERR_TAIL_CHARS:]

    def how_it_ended(self) -> str:
        code = self.returncode
        if code is None:
            return "closed its stdout (process still running)"
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"


async def _wait_returncode(process: anyio.abc.Process, timeout: float) -> bool:
    # Poll returncode rather than process.wait(): a grandchild holding the pipes
    # open would make wait() hang on pipe EOF.
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


async def _stop(process: anyio.abc.Process) -> None:
    if process.stdin is not None:
        with suppress(Exception):
            await process.stdin.aclose()
    if await _wait_returncode(process, STDIN_CLOSE_GRACE_S):
        return
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 2.0)):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        if await _wait_returncode(process, grace):
            return
    logger.warning("downstream process %d survived SIGKILL; abandoning it", process.pid)


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: str | None,
    record: ProcessRecord,
    log_name: str,
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream, anyio.abc.ObjectSendStream]]:
    """Spawn `command` and yield (read, write) streams of SessionMessage for a ClientSession."""
    process = await anyio.open_process(
        [command, *args],
        env={**os.environ, **env},
        cwd=cwd,
        start_new_session=True,
    )
    record.pid = process.pid
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    child_log = logging.getLogger(f"offload_mcp.downstream.{log_name}")

    async def stdout_reader() -> None:
        assert process.stdout is not None
        buffer = ""
        try:
            async with read_writer:
                async for chunk in TextReceiveStream(process.stdout, encoding="utf-8", errors="replace"):
                    lines = (buffer + chunk).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            child_log.warning("ignored a line that is not JSON-RPC on stdout: %.200s", line)
                            await read_writer.send(exc)
                            continue
                        await read_writer.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            await _wait_returncode(process, 0.5)
            record.returncode = process.returncode
            record.exited.set()

    async def stderr_reader() -> None:
        assert process.stderr is not None
        buffer = ""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            async for chunk in TextReceiveStream(process.stderr, encoding="utf-8", errors="replace"):
                lines = (buffer + chunk).split("\n")
                buffer = lines.pop()
                for line in lines:
                    record.stderr.append(line)
                    child_log.debug("stderr: %s", line)
        if buffer:
            record.stderr.append(buffer)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stderr_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            record.stopping = True
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await _stop(process)
                record.returncode = process.returncode
                with anyio.move_on_after(1.0):
                    await record.exited.wait()
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        with suppress(Exception):
                            await pipe.aclose()
            tg.cancel_scope.cancel()
