"""A stdio transport to a downstream server that keeps what we need to explain a failure.

Same wire as the SDK's `stdio_client` (newline-delimited JSON-RPC on the
child's stdin/stdout, the child in its own process group, stdin closed then
SIGTERM then SIGKILL on shutdown), plus two things a proxy needs when a
server misbehaves: the tail of its stderr (relayed to our log at debug level
and quoted in error messages) and how the process ended (exit code or
signal). `exited` is set the moment the child's stdout closes, so a death
between calls is noticed without a call having to fail first.

Without tasks in the call path: the child's stdin and stdout are pipes we
make ourselves (spawn.py), read and written non-blocking on the event loop. A request is
serialised and written in the task that sends it (`_ChildStdin`), an answer is
read and parsed by the session's own reading task (`_ChildStdout`): no writer
or reader task, no hand-over streams and no asyncio subprocess protocol in
between, so a small call through the proxy takes fewer event-loop turns and
Python calls (docs/design.md, "Reading large answers"). The stdout pipe is
widened to 1 MiB (Linux), so a 1 MB answer is written in one go rather than in
16 rounds of the child blocking on a full 64 KiB pipe and us waking to drain
it.
Backpressure is kept: a full stdin pipe is waited on with senders queued
behind it, and nothing is read from stdout while the session is busy with a
message. Order is kept too: after a notification (a call's log line or
progress) the reader lets the loop turn three times before handing on the
next message, so the call's answer cannot overtake what the server said
before it (without that, the 2026-era relay test lost a call's log lines on
a loaded machine, 3 runs of 3). Inert parts: the pipe stays 64 KiB where it cannot be widened (not
Linux, or over the user's pipe-buffer quota); on Windows, where the event loop
cannot wait on a pipe, the child's pipes are anyio's process streams (the
tasks are gone all the same, the asyncio subprocess protocol stays).
"""

from __future__ import annotations

import logging
import re
import signal
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import cast

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from anyio.streams.text import TextReceiveStream
from mcp.shared.message import SessionMessage

from .aside import StructuredAside
from .budget import META_KEY as BUDGET_META_KEY
from .budget import Charge, InflightBudget, Refused
from .parse import log_lone_surrogates, parse_message
from .spawn import EarlyStarts, Launch, PipeIn, PipeOut, StreamIn, StreamOut, spawn, wait_returncode

logger = logging.getLogger(__name__)

STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 2000
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
_ID_KEEP_BYTES = 512
_TURNS_AFTER_NOTIFICATION = 3
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
        self._dropping = False
        self._reason: str | None = None

    @property
    def dropping(self) -> bool:
        """Whether the line in progress is being dropped (over the limit, or refused)."""
        return self._dropping

    @property
    def pending(self) -> int:
        """Bytes of the line in progress."""
        return self._size

    def drop(self, reason: str) -> None:
        """Stop keeping the line in progress (its first and last bytes stay, for its id); it ends as a line
        that could not be used, for `reason`."""
        if not self._dropping:
            self._start_dropping(b"")
        self._reason = reason

    def feed(self, chunk: bytes) -> list[_Line]:
        out: list[_Line] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl == -1:
                self._add(chunk[start:])
                return out
            if not start and nl + 1 == len(chunk):
                # A chunk that ends with its line's end goes whole, line break and all (whitespace to a JSON
                # parser): slicing it off would copy the line once more (a 1 MB answer read in one chunk).
                self._add(chunk, len(chunk) - 1)
            else:
                self._add(chunk[start:nl])
            start = nl + 1
            line = self._finish()
            if line is not None:
                out.append(line)

    def _add(self, piece: bytes, size: int | None = None) -> None:
        """`size`: the piece's bytes without the line break it may end with."""
        if not piece:
            return
        self._size += len(piece) if size is None else size
        if not self._dropping and self._size <= self.limit:
            self._parts.append(piece)
            return
        if not self._dropping:  # just crossed the limit: keep the first bytes, drop the rest
            self._start_dropping(piece)
        self._tail = (self._tail + piece[-_ID_KEEP_BYTES:])[-_ID_KEEP_BYTES:]

    def _start_dropping(self, piece: bytes) -> None:
        head = b""
        for part in [*self._parts, piece]:
            head += part[: _ID_KEEP_BYTES - len(head)]
            if len(head) >= _ID_KEEP_BYTES:
                break
        self._head = head
        self._tail = self._parts[-1][-_ID_KEEP_BYTES:] if self._parts else b""
        self._parts = []
        self._dropping = True

    def _finish(self) -> _Line | None:
        size, parts, head, tail, reason = self._size, self._parts, self._head, self._tail, self._reason
        dropped = self._dropping
        self._parts, self._size, self._head, self._tail = [], 0, b"", b""
        self._dropping, self._reason = False, None
        if dropped:
            return _Line(None, size, head, tail, reason)
        data = b"".join(parts)  # one part (a line read whole) is that part itself, not a copy
        if not data or data.isspace():
            return None
        return _Line(data, size, data[:_ID_KEEP_BYTES], data[-_ID_KEEP_BYTES:])


@dataclass
class _Line:
    data: bytes | None
    """The whole line (its line break may end it), or None when it was over the limit and dropped."""
    size: int
    head: bytes
    tail: bytes
    reason: str | None = None
    """Why a line that was not kept was dropped (None: over the limit)."""
    charge: Charge | None = None
    """Its share of the in-flight budget, when it was large."""

    def request_id(self) -> int | str | None:
        found = _ID_AT_START.match(self.head) or _ID_AT_END.search(self.tail)
        if found is None:
            return None
        raw = found.group(1)
        return raw[1:-1].decode("utf-8", "replace") if raw.startswith(b'"') else int(raw)


def _parse_line(
    line: _Line, limit: int, child_log: logging.Logger, on_lone_surrogates: Callable[[int], None]
) -> SessionMessage | Exception:
    """The line as a JSON-RPC message; a line that cannot be one becomes an error answer when its id is known."""
    if line.data is not None:
        try:
            # The bytes as they came: a decoded str would be re-encoded to UTF-8 for the parser, which
            # costs most on non-ASCII results (docs/design.md, "Reading large answers").
            return SessionMessage(parse_message(line.data, on_lone_surrogates))
        except ValueError as exc:
            problem = _first_error(exc)
            error: Exception = exc
        text = _lenient_text(line.data)
        if text is not None:  # not UTF-8: the message with U+FFFD for each bad byte, as a text stream reads it
            try:
                return SessionMessage(parse_message(text, on_lone_surrogates))
            except ValueError as exc:
                problem = _first_error(exc)
                error = exc
    else:
        problem = (
            line.reason or f"the message is {line.size:,} bytes, over offload.downstream.max_result_bytes={limit:,}"
        )
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


class _ChildStdin(anyio.abc.ObjectSendStream[SessionMessage]):
    """The session's write stream: `send()` serialises as the SDK's stdio client does and writes to the
    child's stdin at once, in the sender's task (no writer task, no hand-over stream).

    One message at a time (a lock): a full pipe is waited on with the lock held, so senders queue
    behind it as they queued behind the writer task (backpressure, nothing buffered but the message
    being written). A broken pipe (the child died or closed its stdin) ends the read side too, so
    calls in flight fail with the usual "died" error, and every later send raises BrokenResourceError."""

    def __init__(self, out: PipeOut | StreamOut, on_broken: Callable[[], None]) -> None:
        self._out = out
        self._on_broken = on_broken
        self._lock = anyio.Lock(fast_acquire=True)
        self._closed = False
        self._broken = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        data = (item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")
        async with self._lock:
            if self._broken:
                raise anyio.BrokenResourceError
            try:
                await self._out.write(data)
            except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError) as err:
                self._broken = True
                self._on_broken()
                raise anyio.BrokenResourceError from err

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()


class _ChildStdout(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """The session's read stream: each `receive()` reads the child's stdout and parses the next line in
    the SDK's own reading task (no reader task, no hand-over stream).

    Bounded as before: at most one read chunk plus the lines split from it are held, and nothing is
    read while the session is busy with a message. At the end of input `on_eof` runs (the process
    record notes how the child ended); `close()` ends a waiting `receive()` as the end of input."""

    def __init__(
        self,
        source: PipeIn | StreamIn,
        limit: int,
        child_log: logging.Logger,
        on_eof: Callable[[], None],
        aside: StructuredAside | None = None,
        budget: InflightBudget | None = None,
    ) -> None:
        self._source = source
        self._aside = aside
        self._budget = budget
        self._charge: Charge | None = None
        """The line in progress's share of the budget (budget.py), once it is large."""
        self._lines = _LineSplitter(limit)
        self._ready: deque[_Line] = deque()
        self._log = child_log
        self._on_lone_surrogates = partial(log_lone_surrogates, child_log)
        self._on_eof = on_eof
        self._ended = False
        self._closed = False
        self._reading: anyio.CancelScope | None = None
        self._after_notification = False
        self._after_answer = False

    async def receive(self) -> SessionMessage | Exception:
        if self._after_notification:
            # The SDK hands a notification to its handler through a task and a queue (about three turns of
            # the loop), an answer to its waiting caller in one: the answer to a call must not overtake the
            # call's own log lines and progress, which are relayed only while the call is in flight. The
            # reader task this replaced gave them those turns between any two messages.
            self._after_notification = False
            for _ in range(_TURNS_AFTER_NOTIFICATION):
                await anyio.lowlevel.checkpoint()
        elif self._after_answer:
            # The caller the answer just woke goes first: the next read (a try, then a wait registered
            # with the loop) is off the path from a 1 MB answer to its stub.
            self._after_answer = False
            await anyio.lowlevel.checkpoint()
        while not self._ready:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            with anyio.CancelScope() as self._reading:
                chunk = await self._source.read()
            if self._reading.cancelled_caught:  # closed while waiting: read as the end
                raise anyio.EndOfStream
            if chunk is None:
                self._ended = True
                self._release_charge()
                self._on_eof()
                raise anyio.EndOfStream
            continued = self._lines.pending > 0
            lines = self._lines.feed(chunk)
            if lines and continued and self._charge is not None:
                lines[0].charge, self._charge = self._charge, None  # the line it was charged for has ended
            self._ready.extend(lines)
            await self._charge_pending()
        line = self._ready.popleft()
        item = _parse_line(line, self._lines.limit, self._log, self._on_lone_surrogates)
        if line.charge is not None:
            item = self._charged(item, line.charge)
        if self._aside is not None:
            item = self._aside.received(item, line.size)
        message = item.message if isinstance(item, SessionMessage) else None
        self._after_notification = isinstance(message, types.JSONRPCNotification)
        self._after_answer = isinstance(message, (types.JSONRPCResponse, types.JSONRPCError))
        return item

    async def _charge_pending(self) -> None:
        """Charge the line in progress to the budget: nothing more is read (the child waits on a full pipe)
        until it fits; a refused line is dropped as it streams and answered with the refusal."""
        pending = self._lines.pending
        if self._budget is None or pending == 0 or self._lines.dropping:
            return
        if self._charge is None:
            self._charge = self._budget.charge()
        try:
            await self._charge.grow(pending)
        except Refused as refused:
            self._lines.drop(str(refused))
            self._release_charge()
        except BaseException:
            self._release_charge()
            raise

    def _release_charge(self) -> None:
        if self._charge is not None:
            self._charge.release()
            self._charge = None

    def _charged(self, item: SessionMessage | Exception, charge: Charge) -> SessionMessage | Exception:
        """A tools/call answer carrying its charge's token in `_meta` (its call claims it); any other
        item's charge is released here."""
        message = item.message if isinstance(item, SessionMessage) else None
        if (
            self._budget is None
            or not isinstance(message, types.JSONRPCResponse)
            or self._aside is None
            or not self._aside.is_call(message.id)
            or not isinstance(message.result.get("_meta", {}), dict)
        ):
            charge.release()
            return item
        meta = message.result.get("_meta", {})
        message.result = {**message.result, "_meta": {**meta, BUDGET_META_KEY: self._budget.hand(charge)}}
        return item

    def close(self) -> bool:
        """End reading; True when the end of input had not been seen yet."""
        was_open = not (self._closed or self._ended)
        self._closed = True
        self._release_charge()
        while self._ready:  # lines read but never handed on
            left = self._ready.popleft()
            if left.charge is not None:
                left.charge.release()
        if self._reading is not None:
            self._reading.cancel()
        return was_open

    async def aclose(self) -> None:
        self.close()


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: str | None,
    record: ProcessRecord,
    log_name: str,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    aside: StructuredAside | None = None,
    early: EarlyStarts | None = None,
    budget: InflightBudget | None = None,
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream, anyio.abc.ObjectSendStream]]:
    """Spawn `command` and yield (read, write) streams of SessionMessage for a ClientSession; with
    `aside`, large tools/call answers have their structuredContent set aside (aside.py: the session's
    write stream shows it the calls, `StructuredAside.noting`); with `early`, the process started
    for `log_name` before the SDK was imported (spawn.py) is taken instead of a new one."""
    launch = Launch.of(command, args, env, cwd)
    spawned = (await early.claim(log_name, launch) if early is not None else None) or await spawn(launch)
    process, stdin, stdout = spawned
    record.pid = process.pid
    child_log = logging.getLogger(f"offload_mcp.downstream.{log_name}")

    async def note_exit() -> None:
        await wait_returncode(process, 0.5)
        record.returncode = process.returncode
        record.exited.set()

    async def note_exit_when_output_moves() -> None:
        # The read side was ended by a broken write: the child is noted as ended once its stdout moves
        # (typically its end), as a reader task blocked on a closed stream would have noticed it.
        await stdout.readable()
        await note_exit()

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

    async with anyio.create_task_group() as tg:

        def on_eof() -> None:
            tg.start_soon(note_exit)

        def on_broken() -> None:
            if read_stream.close():
                tg.start_soon(note_exit_when_output_moves)

        read_stream = _ChildStdout(stdout, max_line_bytes, child_log, on_eof, aside, budget)
        write_stream = _ChildStdin(stdin, on_broken)
        tg.start_soon(stderr_reader)
        try:
            yield cast(anyio.abc.ObjectReceiveStream, read_stream), cast(anyio.abc.ObjectSendStream, write_stream)
        finally:
            record.stopping = True
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await spawned.stop()
                record.returncode = process.returncode
                record.exited.set()
            tg.cancel_scope.cancel()
