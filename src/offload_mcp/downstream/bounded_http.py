"""`max_result_bytes` for remote (HTTP, SSE) downstream servers, enforced while the body streams.

How it works: the httpx client of a remote session gets `BoundedTransport`,
which wraps each response body. A JSON body is held until it ends (the SDK
reads it whole anyway) and an SSE stream is passed on one event at a time;
either way no more than `limit` bytes of one message are ever held. When a
message passes the limit the transport stops reading, closes the connection,
and hands the SDK, in place of that message, a JSON-RPC error for the request
that asked (its id is read from the request body), so the call ends at once
with a clear isError result instead of waiting for its timeout. A
`Content-Length` over the limit is refused before a byte is read.

Why: without it a remote server's huge answer is read whole into memory
before anything refuses it (docs/design.md, "Reading large answers"). When it
is inert: stdio servers (downstream/stdio.py applies the same limit per line).

Parsing off the event loop: the SDK turns each message into a model on the
loop (SSE line splitting, then `validate_json`), and a message of tens of MB
stalls every other session meanwhile. So a message over
`PARSE_OFF_LOOP_BYTES` is parsed here, in a worker thread, with the SDK's own
adapter (the same model the SDK would have made), and the SDK is handed a
small placeholder response with the same id instead; `ParsedMessages.wrap`
puts the parsed message back in its place on the session's read stream.
When it is inert: smaller messages (most), messages that are not responses,
and ones the worker cannot parse (the SDK then parses them and reports the
error as before).

Lone surrogate escapes: a Node server writes `"row \\ud83d"` for a string cut inside an emoji, and
the SDK's parse refuses the whole message: a streamable HTTP call failed with a -32700 parse error
and a legacy SSE call waited out its whole timeout (the SDK logs the event and drops it). Each
message up to PARSE_OFF_LOOP_BYTES is searched for such an escape on its way to the SDK (one regex
search, cheap at that size); a larger one only when the worker's parse fails. Each lone
one is written `\\ufffd`, as stdio reads it (parse.py), with one warning in that server's log per
message (per batch, for small SSE events that arrive together).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import anyio.to_thread
import httpx2
import mcp_types as types
import orjson
from mcp.shared.message import SessionMessage

from .aside import SET_ASIDE_BYTES, StructuredAside
from .budget import META_KEY as BUDGET_META_KEY
from .budget import Charge, InflightBudget, Refused
from .parse import log_lone_surrogates, parse_message, with_lone_surrogates_replaced
from .shelf import TokenShelf
from .stdio import UNUSABLE_ANSWER

logger = logging.getLogger(__name__)

SSE_FRAMING = 4096
"""Bytes of an SSE event beyond its message (field names, event id, line ends)."""
LEGACY_SSE_EVENT_LIMIT = 1024 * 1024 - SSE_FRAMING
"""The SDK's legacy SSE client closes the whole connection on an event over 1 MiB; stop before it."""
_EVENT_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")')


def _first_event_end(data: bytes | bytearray, start: int = 0) -> int:
    """Index just past the first blank line at or after `start` (the end of an SSE event: "\n\n" or
    "\n\r\n"), or -1.

    From line end to line end (one memchr each: an event is a few lines, its data one long line,
    since JSON escapes its line breaks), where a search for each of the two marks would scan a large
    event twice on the event loop (test_remote_parse_off_loop)."""
    at = data.find(b"\n", start)
    while at >= 0:
        if data.startswith(b"\n", at + 1):
            return at + 2
        if data.startswith(b"\r\n", at + 1):
            return at + 3
        at = data.find(b"\n", at + 1)
    return -1


def _last_event_end(data: bytearray, start: int) -> int:
    """Index just past the last blank line lying wholly at or after `start`, or -1 (line ends from the right)."""
    at = data.rfind(b"\n", start)
    while at >= 0:
        if at - 1 >= start and data[at - 1] == 0x0A:  # the end of "\n\n"
            return at + 1
        if at - 2 >= start and data[at - 2 : at] == b"\n\r":  # the end of "\n\r\n"
            return at + 1
        at = data.rfind(b"\n", start, at)
    return -1


def _event_id(head: bytes) -> Any:
    """The JSON-RPC id near the start of an SSE event's data (the SDK writes it before the result)."""
    found = _EVENT_ID.search(head)
    if found is None:
        return None
    raw = found.group(1)
    return raw[1:-1].decode("utf-8", "replace") if raw.startswith(b'"') else int(raw)


def over_limit_message(size: int | None, limit: int) -> str:
    """Begins with stdio's UNUSABLE_ANSWER so the call ends as the same clear isError result."""
    what = f"{size:,} bytes" if size is not None else "larger"
    return f"{UNUSABLE_ANSWER}: the message is {what}, over offload.downstream.max_result_bytes={limit:,}"


def _error(request_id: Any, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}})


def _request_id(request: httpx2.Request) -> Any:
    try:
        body = orjson.loads(request.content) if request.method == "POST" and len(request.content) < 1_000_000 else None
    except (orjson.JSONDecodeError, httpx2.RequestNotRead):
        return None
    return body.get("id") if isinstance(body, dict) else None


PARSE_OFF_LOOP_BYTES = 256 * 1024
"""Messages larger than this are parsed in a worker thread (a 256 KiB parse takes a few ms on the loop)."""
PLACEHOLDER_KEY = "offload-mcp/parsed-off-loop"
_LINE_END = re.compile(rb"\r\n|\r|\n")


def _parse_response(data: bytes | bytearray, on_lone_surrogates: Callable[[int], None]) -> types.JSONRPCResponse | None:
    """The JSON-RPC response in `data`, as the SDK would parse it but for lone surrogate escapes (read as
    U+FFFD); None if it is anything else (worker thread)."""
    try:
        # The JSON scan holds the GIL (the loop waits for it): parse_message's is the fastest exact one.
        message = parse_message(data, on_lone_surrogates)
    except ValueError:  # pydantic's errors included: the SDK parses it again and says why
        return None
    return message if isinstance(message, types.JSONRPCResponse) else None


def _event_data(
    event: bytes | bytearray, start: int = 0, end: int | None = None
) -> tuple[list[bytes], bytes | bytearray] | None:
    """The other field lines and the data (its lines joined) of the SSE event `event[start:end]`, or None
    without data (worker thread).

    Lines are found by memchr from line end to line end, and the data is copied once at most: the whole
    event split at its line ends and the data line sliced twice would be three copies of a large answer,
    each holding the GIL while other sessions wait on the loop. When the event is the tail
    of a bytearray (the transport's own buffer) and has one data line, the data is that buffer, trimmed in
    place: no copy at all. A lone CR (also a line end in SSE) is rare enough to take the regex split."""
    end = len(event) if end is None else end
    fields: list[bytes] = []
    spans: list[tuple[int, int]] = []
    at = start
    while at < end:
        line_end = event.find(b"\n", at, end)
        line_end = end if line_end < 0 else line_end
        stop = line_end - 1 if line_end > at and event[line_end - 1] == 0x0D else line_end
        if event.find(b"\r", at, stop) >= 0:
            return _event_data_split(_copied(event, start, end))
        if event.startswith(b"data:", at, stop):
            value_at = at + 6 if event.startswith(b"data: ", at, stop) else at + 5
            spans.append((value_at, stop))
        elif stop > at:
            fields.append(_copied(event, at, stop))
        at = line_end + 1
    if not spans:
        return None
    if len(spans) == 1 and isinstance(event, bytearray) and end == len(event):
        value_at, stop = spans[0]
        del event[stop:]
        del event[:value_at]  # a bytearray drops its head by moving its start: no copy
        return fields, event
    return fields, b"\n".join(_copied(event, value_at, stop) for value_at, stop in spans)


def _copied(data: bytes | bytearray, start: int, end: int) -> bytes:
    """`bytes(data[start:end])` in one copy (a bytearray's slice would be a bytearray first)."""
    if isinstance(data, bytes):
        return data[start:end]
    with memoryview(data) as view:
        return bytes(view[start:end])


def _event_data_split(event: bytes) -> tuple[list[bytes], bytes] | None:
    """`_event_data` of an event with a lone CR, split at every SSE line end by a regex."""
    fields: list[bytes] = []
    data: list[bytes] = []
    for line in _LINE_END.split(event):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line:
            fields.append(line)
    return (fields, b"\n".join(data)) if data else None


class ParsedMessages:
    """Large responses parsed off the loop, waiting to replace the placeholders the SDK was handed.

    One per remote session. Each placeholder carries a token with a per-session random prefix, so a
    server cannot name another placeholder's message; a held message is taken once, and at most
    `max_held` wait (the read stream hands each placeholder on as soon as the SDK has parsed it).
    """

    def __init__(
        self,
        max_held: int = 16,
        aside: StructuredAside | None = None,
        log: logging.Logger = logger,
        budget: InflightBudget | None = None,
    ) -> None:
        self.aside = aside
        """With it, a large tools/call answer's structuredContent is set aside past the SDK (aside.py)."""
        self.log = log
        """The server's own log, for the lone surrogate escapes its messages held."""
        self.budget = budget
        """With it, the transport charges large answers as it reads them (budget.py); the charge goes on with
        its message and, for a tools/call answer, crosses the SDK as a token in the result's `_meta`."""
        self._held: TokenShelf[tuple[types.JSONRPCResponse, Charge | None]] = TokenShelf(max_held)

    def _hold(self, message: types.JSONRPCResponse, charge: Charge | None = None) -> bytes:
        token, pushed = self._held.put((message, charge))
        for lost, (_, lost_charge) in pushed:
            logger.warning("a remote answer parsed off the loop was never read (%s); it is dropped", lost)
            if lost_charge is not None:
                lost_charge.release()
        return orjson.dumps({"jsonrpc": "2.0", "id": message.id, "result": {"_meta": {PLACEHOLDER_KEY: token}}})

    def _noted(self, count: int) -> None:
        log_lone_surrogates(self.log, count)

    def _lenient(self, data: bytes) -> bytes:
        """`data` with each lone surrogate escape written `\\ufffd` (the SDK's parse refuses the whole message)."""
        fixed, count = with_lone_surrogates_replaced(data)
        if count:
            self._noted(count)
        return fixed

    async def body(self, data: bytes | bytearray, charge: Charge | None = None) -> bytes:
        """A JSON response body, or its placeholder when it is large. A bytearray (the transport's buffer)
        is parsed where it lies: copying a large one to bytes would hold the GIL on the loop. `charge` (what the
        body was charged) is taken over: it goes on with the parsed message, or is released."""
        if len(data) <= PARSE_OFF_LOOP_BYTES:
            _release(charge)
            return self._lenient(bytes(data))
        try:
            message = await anyio.to_thread.run_sync(_parse_response, data, self._noted)
        except BaseException:
            _release(charge)
            raise
        if message is None:
            _release(charge)
            return self._lenient(bytes(data))
        return self._hold(message, charge)

    async def events(self, data: bytes | bytearray, charge: Charge | None = None) -> bytes:
        """Whole SSE events, each large one replaced by an event with the same fields and a placeholder.
        A bytearray is taken over: its last event, when large, is parsed where it lies (`_event_data`).
        `charge` is taken over: it goes on with the first large message, or is released."""
        try:
            if len(data) <= PARSE_OFF_LOOP_BYTES:
                return self._lenient(bytes(data))
            out: list[bytes] = []
            start = 0
            while start < len(data):
                end = _first_event_end(data, start)
                end = len(data) if end < 0 else end
                if end - start > PARSE_OFF_LOOP_BYTES:
                    # The charge covers the whole read: the first large message carries it.
                    out.append(await self._event(data, start, end, charge))
                    charge = None
                else:
                    out.append(self._lenient(_copied(data, start, end)))
                start = end  # past the end of a bytearray `_event` trimmed to its data: the last event was that one
            return b"".join(out)
        finally:
            _release(charge)

    async def _event(self, data: bytes | bytearray, start: int, end: int, charge: Charge | None = None) -> bytes:
        def parse() -> tuple[list[bytes], types.JSONRPCResponse] | bytes:
            found = _event_data(data, start, end)
            if found is None:
                return _copied(data, start, end)
            fields, value = found
            message = _parse_response(value, self._noted)
            if message is not None:
                return fields, message
            # Not a response after all: the SDK reads the event and says why.
            if value is not data:
                return _copied(data, start, end)
            # Its data was trimmed in place: the event is written again, fields first (the order of an event's
            # fields does not matter), its data on one line as it came.
            return b"".join([*(field + b"\n" for field in fields), b"data: ", value, b"\n\n"])

        try:
            parsed = await anyio.to_thread.run_sync(parse)
        except BaseException:
            _release(charge)
            raise
        if isinstance(parsed, bytes):
            _release(charge)
            return self._lenient(parsed)
        fields, message = parsed
        return b"\n".join([*fields, b"data: " + self._hold(message, charge)]) + b"\n\n"

    def swap(self, item: Any) -> Any:
        """The message a placeholder stands for (with the id the SDK gave the placeholder); anything else as is.
        With `aside`, every item is shown to it: a large answer to a call may go on with its structuredContent
        set aside (only messages over PARSE_OFF_LOOP_BYTES are held here, the same 256 KiB as SET_ASIDE_BYTES)."""
        swapped, large = self._swapped(item)
        return swapped if self.aside is None else self.aside.received(swapped, SET_ASIDE_BYTES if large else 0)

    def _swapped(self, item: Any) -> tuple[Any, bool]:
        if not isinstance(item, SessionMessage) or not isinstance(item.message, types.JSONRPCResponse):
            return item, False
        result = item.message.result
        meta = result.get("_meta") if isinstance(result, dict) and len(result) == 1 else None
        token = meta.get(PLACEHOLDER_KEY) if isinstance(meta, dict) and len(meta) == 1 else None
        if not isinstance(token, str) or not self._held.owns(token):
            return item, False
        held = self._held.take(token)
        if held is None:
            error = types.ErrorData(
                code=types.INTERNAL_ERROR, message="a large remote answer was lost before it was read"
            )
            lost = SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=item.message.id, error=error), item.metadata)
            return lost, False
        message, charge = held
        message.id = item.message.id  # the SDK may have given it the original request's id (resumption)
        if charge is not None:
            message = self._charged(message, charge)
        return SessionMessage(message, item.metadata), True

    def _charged(self, message: types.JSONRPCResponse, charge: Charge) -> types.JSONRPCResponse:
        """A tools/call answer carrying its charge's token in `_meta` (its call claims it, `DownstreamServer.
        call_tool`); the charge of any other answer is released here (no caller would claim it)."""
        result = message.result
        meta = result.get("_meta", {})
        if (
            self.budget is None
            or self.aside is None
            or not self.aside.is_call(message.id)
            or not isinstance(meta, dict)
        ):
            charge.release()
            return message
        message.result = {**result, "_meta": {**meta, BUDGET_META_KEY: self.budget.hand(charge)}}
        return message

    def wrap(self, streams: Any) -> Any:
        """The transport's streams with the read stream swapping placeholders back."""
        return (_SwappingReadStream(streams[0], self), *streams[1:])


def _release(charge: Charge | None) -> None:
    if charge is not None:
        charge.release()


class _SwappingReadStream:
    """A read stream (the SDK's ReadStream protocol) handing on each item through `ParsedMessages.swap`."""

    def __init__(self, inner: Any, parsed: ParsedMessages) -> None:
        self.inner = inner
        self.parsed = parsed

    async def receive(self) -> Any:
        return self.parsed.swap(await self.inner.receive())

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> _SwappingReadStream:
        return self

    async def __anext__(self) -> Any:
        return self.parsed.swap(await self.inner.__anext__())  # the inner stream's end-of-stream behaviour as is

    async def __aenter__(self) -> _SwappingReadStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. `last_context`, which the dispatcher reads if present
        return getattr(self.inner, name)


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(
        self, inner: Any, *, limit: int, sse: bool, request_id: Any, url: str, parsed: ParsedMessages | None = None
    ) -> None:
        self.inner = inner
        self.limit = limit
        self.sse = sse
        self.request_id = request_id
        self.url = url
        self.parsed = parsed
        self.budget = parsed.budget if parsed is not None else None

    def _refuse(self, size: int | None, request_id: Any = None, message: str | None = None) -> bytes:
        request_id = self.request_id if request_id is None else request_id
        message = over_limit_message(size, self.limit) if message is None else message
        logger.warning("remote server %s: %s (request %r)", self.url, message, request_id)
        body = _error(request_id, message)
        return b"event: message\ndata: " + body + b"\n\n" if self.sse else body

    def _charge(self) -> Charge | None:
        return self.budget.charge() if self.budget is not None else None

    async def _charged(self, charge: Charge | None, read: int) -> str | None:
        """Charge `read` bytes of the message being read (waits while the budget is spent); the refusal, if any."""
        if charge is None:
            return None
        try:
            await charge.grow(read)
        except Refused as refused:
            return f"{UNUSABLE_ANSWER}: {refused}"
        return None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        charge = self._charge()
        pieces = self._pieces(charge)
        try:
            async for piece in pieces:
                if isinstance(piece, tuple):
                    piece, charge = piece  # with the charge of what is read next (the last went on, or was released)
                if piece:
                    yield piece
        finally:
            _release(charge)
            await pieces.aclose()  # its own `finally` closes the response now, not when it is collected

    async def _pieces(self, charge: Charge | None) -> AsyncGenerator[bytes | tuple[bytes, Charge | None]]:
        """The body's pieces; one that handed `charge` on to its message comes with the next message's charge."""
        if not self.sse:
            body = bytearray()
            try:
                async for chunk in self.inner:
                    body += chunk
                    if len(body) > self.limit:
                        yield self._refuse(None)
                        return
                    refusal = await self._charged(charge, len(body))
                    if refusal is not None:
                        yield self._refuse(len(body), message=refusal)
                        return
            finally:
                await self.aclose()
            if self.parsed:
                yield await self.parsed.body(body, charge), None
            else:
                yield bytes(body)
            return
        # SSE: whole events pass on; one over the limit is dropped as it streams and answered with an error.
        pending = bytearray()
        dropping = False
        dropped_id: Any = None
        dropped_because: str | None = None
        carry = b""
        try:
            async for chunk in self.inner:
                if dropping:
                    window = carry + chunk
                    end = _first_event_end(window)
                    if end < 0:
                        carry = window[-2:]
                        continue
                    yield self._refuse(None, dropped_id, dropped_because)
                    dropping, pending = False, bytearray(window[end:])
                    searched_from = 0
                else:
                    searched_from = max(0, len(pending) - 2)
                    pending += chunk
                last = _last_event_end(pending, searched_from)
                if last > 0:
                    # The buffer itself goes on, cut at `last`, and a new one holds the rest: a large event is
                    # not copied on the loop, where bytes() of it would hold the GIL while other sessions wait.
                    events, pending = pending, pending[last:]
                    del events[last:]
                    if self.parsed:
                        given, charge = charge, self._charge()
                        yield await self.parsed.events(events, given), charge
                    else:
                        yield bytes(events)
                dropped_because = None
                if len(pending) <= self.limit and pending:
                    dropped_because = await self._charged(charge, len(pending))
                if len(pending) > self.limit or dropped_because is not None:
                    # The rest of its event is read and dropped; what it was charged is released now.
                    dropping, dropped_id, carry = True, _event_id(bytes(pending[:512])), bytes(pending[-2:])
                    pending.clear()
                    _release(charge)
                    charge = self._charge()
                    yield b"", charge
        finally:
            await self.aclose()
        if pending:
            yield bytes(pending)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """An httpx transport whose response messages are at most `limit` bytes each (see the module doc)."""

    def __init__(
        self, limit: int, inner: httpx2.AsyncBaseTransport | None = None, parsed: ParsedMessages | None = None
    ) -> None:
        self.limit = limit
        self.inner = inner or httpx2.AsyncHTTPTransport()
        self.parsed = parsed

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        sse = "text/event-stream" in response.headers.get("content-type", "")
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-length"]
        body = _BoundedBody(
            response.stream,
            limit=self.limit,
            sse=sse,
            request_id=_request_id(request),
            url=str(request.url),
            parsed=self.parsed,
        )
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit and not sse:
            await response.aclose()
            refusal = body._refuse(int(declared))
            return httpx2.Response(response.status_code, headers=headers, content=refusal, request=request)
        return httpx2.Response(
            response.status_code, headers=headers, stream=body, extensions=response.extensions, request=request
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_client_factory(limit: int, parsed: ParsedMessages | None = None) -> Any:
    """An `McpHttpClientFactory` (what the SDK's sse_client takes) whose clients use `BoundedTransport`.

    With `parsed`, large answers are parsed off the loop: wrap the session's streams with `parsed.wrap`.
    """
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            auth=auth,
            transport=BoundedTransport(limit, parsed=parsed),
        )

    return factory
