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

Why: the limit applied to stdio only; 200 MB from a remote server took 1 GB of
RSS and 67 s (issue 13 #5). When it is inert: stdio servers (downstream/stdio.py
applies the same limit per line).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson

from .stdio import UNUSABLE_ANSWER

logger = logging.getLogger(__name__)

SSE_FRAMING = 4096
"""Bytes of an SSE event beyond its message (field names, event id, line ends)."""
LEGACY_SSE_EVENT_LIMIT = 1024 * 1024 - SSE_FRAMING
"""The SDK's legacy SSE client closes the whole connection on an event over 1 MiB; stop before it."""
_EVENT_ENDS = (b"\n\n", b"\n\r\n")
_EVENT_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")')


def _first_event_end(data: bytes) -> int:
    """Index just past the first blank line (the end of an SSE event), or -1."""
    found = [(i, len(mark)) for mark in _EVENT_ENDS if (i := data.find(mark)) >= 0]
    if not found:
        return -1
    i, size = min(found)
    return i + size


def _last_event_end(data: bytearray, start: int) -> int:
    """Index just past the last blank line at or after `start`, or -1."""
    found = [(i, len(mark)) for mark in _EVENT_ENDS if (i := data.rfind(mark, start)) >= 0]
    if not found:
        return -1
    i, size = max(found)
    return i + size


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


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, *, limit: int, sse: bool, request_id: Any, url: str) -> None:
        self.inner = inner
        self.limit = limit
        self.sse = sse
        self.request_id = request_id
        self.url = url

    def _refuse(self, size: int | None, request_id: Any = None) -> bytes:
        request_id = self.request_id if request_id is None else request_id
        message = over_limit_message(size, self.limit)
        logger.warning("remote server %s: %s (request %r)", self.url, message, request_id)
        body = _error(request_id, message)
        return b"event: message\ndata: " + body + b"\n\n" if self.sse else body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if not self.sse:
            body = bytearray()
            try:
                async for chunk in self.inner:
                    body += chunk
                    if len(body) > self.limit:
                        yield self._refuse(None)
                        return
            finally:
                await self.aclose()
            yield bytes(body)
            return
        # SSE: whole events pass on; one over the limit is dropped as it streams and answered with an error.
        pending = bytearray()
        dropping = False
        dropped_id: Any = None
        carry = b""
        try:
            async for chunk in self.inner:
                if dropping:
                    window = carry + chunk
                    end = _first_event_end(window)
                    if end < 0:
                        carry = window[-2:]
                        continue
                    yield self._refuse(None, dropped_id)
                    dropping, pending = False, bytearray(window[end:])
                    searched_from = 0
                else:
                    searched_from = max(0, len(pending) - 2)
                    pending += chunk
                last = _last_event_end(pending, searched_from)
                if last > 0:
                    yield bytes(pending[:last])
                    del pending[:last]
                if len(pending) > self.limit:
                    dropping, dropped_id, carry = True, _event_id(bytes(pending[:512])), bytes(pending[-2:])
                    pending.clear()
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

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.limit = limit
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        sse = "text/event-stream" in response.headers.get("content-type", "")
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-length"]
        body = _BoundedBody(
            response.stream, limit=self.limit, sse=sse, request_id=_request_id(request), url=str(request.url)
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


def bounded_client_factory(limit: int) -> Any:
    """An `McpHttpClientFactory` (what the SDK's sse_client takes) whose clients use `BoundedTransport`."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            auth=auth,
            transport=BoundedTransport(limit),
        )

    return factory
