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
import re
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
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
_ID_KEEP_BYTES = 512
UNUSABLE_ANSWER = "the server's answer could not be used"
# A response's id sits at the start (`{"jsonrpc":"2.0","id":7,...`, Python SDK) or at the very end
# (`...,"jsonrpc":"2.0","id":7}`, TypeScript SDK); only these two places are trusted.
_ID_AT_START = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*,')
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*\}\s*$')


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


class _LineSplitter:
    """Newline-delimited messages from raw stdout bytes, each line bounded in memory.

    Lines are split on bytes (0x0A never occurs inside a UTF-8 sequence), kept as
    a list of chunks (no quadratic re-joining of a 100 MB line), and a line past
    `limit` bytes is not kept: only its first and last bytes survive, enough to
    find the request id and answer that request with a clear error.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> list[_Line]:
        out: list[_Line] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl == -1:
                self._add(chunk[start:])
                return out
            self._add(chunk[start:nl])
            start = nl + 1
            line = self._finish()
            if line is not None:
                out.append(line)

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        was_over = self._size > self.limit
        self._size += len(piece)
        if self._size <= self.limit:
            self._parts.append(piece)
            return
        if not was_over:  # just crossed the limit: keep the first bytes, drop the rest
            head = b""
            for part in [*self._parts, piece]:
                head += part[: _ID_KEEP_BYTES - len(head)]
                if len(head) >= _ID_KEEP_BYTES:
                    break
            self._head = head
            self._tail = self._parts[-1][-_ID_KEEP_BYTES:] if self._parts else b""
            self._parts = []
        self._tail = (self._tail + piece[-_ID_KEEP_BYTES:])[-_ID_KEEP_BYTES:]

    def _finish(self) -> _Line | None:
        size, parts, head, tail = self._size, self._parts, self._head, self._tail
        self._parts, self._size, self._head, self._tail = [], 0, b"", b""
        if size > self.limit:
            return _Line(None, size, head, tail)
        data = b"".join(parts)
        if not data.strip():
            return None
        return _Line(data, size, data[:_ID_KEEP_BYTES], data[-_ID_KEEP_BYTES:])


@dataclass
class _Line:
    data: bytes | None
    """The whole line, or None when it was over the limit and dropped."""
    size: int
    head: bytes
    tail: bytes

    def request_id(self) -> int | str | None:
        found = _ID_AT_START.match(self.head) or _ID_AT_END.search(self.tail)
        if found is None:
            return None
        raw = found.group(1)
        return raw[1:-1].decode("utf-8", "replace") if raw.startswith(b'"') else int(raw)


def _parse_line(line: _Line, limit: int, child_log: logging.Logger) -> SessionMessage | Exception:
    """The line as a JSON-RPC message; a line that cannot be one becomes an error answer when its id is known."""
    if line.data is not None:
        try:
            # The bytes as they came: a decoded str would be re-encoded to UTF-8 for the parser (a 1 MB
            # non-ASCII result: 7.5 -> 4.7 ms; ASCII: 0.25 -> 0.21 ms).
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line.data, by_name=False))
        except ValueError as exc:
            problem = _first_error(exc)
            error: Exception = exc
        text = _lenient_text(line.data)
        if text is not None:  # not UTF-8: the message with U+FFFD for each bad byte, as a text stream reads it
            try:
                return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
            except ValueError as exc:
                problem = _first_error(exc)
                error = exc
    else:
        problem = f"the message is {line.size:,} bytes, over offload.downstream.max_result_bytes={limit:,}"
        error = ValueError(problem)
    id_ = line.request_id()
    if id_ is None:
        child_log.warning("ignored %s bytes on stdout that are not a JSON-RPC message (%s)", f"{line.size:,}", problem)
        if line.data is not None:
            child_log.debug("the ignored line began: %.200r", line.head)
        return error
    child_log.warning("answer to request %r could not be used (%s); the call gets an error", id_, problem)
    message = f"{UNUSABLE_ANSWER}: {problem}"
    return SessionMessage(
        types.JSONRPCError(jsonrpc="2.0", id=id_, error=types.ErrorData(code=types.INTERNAL_ERROR, message=message))
    )


def _lenient_text(data: bytes) -> str | None:
    """`data` decoded with U+FFFD for bytes that are not UTF-8, or None when it is UTF-8 already."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")
    return None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            return f"not valid JSON-RPC: {first.get('msg', exc)}"
        except Exception:
            pass
    return f"not valid JSON-RPC: {str(exc).splitlines()[0][:200]}"


def inherited_environment() -> dict[str, str]:
    """Our environment minus our own settings: a wrapped server never sees OFFLOAD_MCP_* (the auth token)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_MCP_")}


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
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream, anyio.abc.ObjectSendStream]]:
    """Spawn `command` and yield (read, write) streams of SessionMessage for a ClientSession."""
    process = await anyio.open_process(
        [command, *args],
        env={**inherited_environment(), **env},
        cwd=cwd,
        start_new_session=True,
    )
    record.pid = process.pid
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    child_log = logging.getLogger(f"offload_mcp.downstream.{log_name}")

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = _LineSplitter(max_line_bytes)
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    for line in lines.feed(chunk):
                        await read_writer.send(_parse_line(line, lines.limit, child_log))
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
