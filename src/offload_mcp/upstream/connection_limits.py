"""Limits that keep one HTTP client from locking out the others.

How it works:

- `guarded_h11(...)` is uvicorn's h11 protocol with a watchdog per connection.
  Request headers must be complete within `header_timeout_s` of the
  connection opening (or of the previous response), and a request body must
  make progress at least every `body_idle_timeout_s`; otherwise the connection
  is closed. At most `max_connections` are open at once: a new connection past
  the cap evicts the connection that has waited longest for its headers (a
  slow or idle client), and is itself closed only when every open connection
  is busy with a real request. Uvicorn alone has none of these: a client
  trickling a byte every few seconds kept its connection (and an fd) forever.
- `SessionCaps` wraps the streamable-HTTP app and refuses (429) an
  `initialize` that would open more than `max_sessions_per_peer` sessions for
  one client address. It counts the sessions it saw open and end in the HTTP
  exchanges themselves (no SDK internals). The SDK's own `max_sessions`
  (overall) and `session_idle_timeout` are set from the same settings, so idle
  sessions go sooner than the SDK's 30 minutes.

When it is inert: stdio; 2026-07-28 requests open no sessions, so only the
connection limits apply to them.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Callable

import h11
import orjson
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger(__name__)

_TICK_S = 0.5
_FD_RESERVE = 128
"""File descriptors kept for downstream pipes, the ledger and JSONPath workers when the cap is automatic."""


def connection_cap(configured: int | None) -> int:
    """The configured cap, or half the soft fd limit (at least 16) so the proxy never runs out of fds first."""
    if configured is not None:
        return configured
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, (soft - _FD_RESERVE) // 2))


def guarded_h11(*, header_timeout_s: float, body_idle_timeout_s: float, max_connections: int) -> type[H11Protocol]:
    """An h11 protocol class for `uvicorn.Config(http=...)` with the limits above."""

    class GuardedH11Protocol(H11Protocol):
        _waiting_since = 0.0
        _last_data = 0.0
        _watchdog: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            now = self.loop.time()
            self._waiting_since = self._last_data = now
            if len(self.connections) > max_connections:
                self._make_room()
            if not transport.is_closing():
                self._watchdog = self.loop.call_later(_TICK_S, self._check)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._watchdog is not None:
                self._watchdog.cancel()
                self._watchdog = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self._last_data = self.loop.time()
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._waiting_since = self.loop.time()
            super().on_response_complete()

        def waiting_for_headers(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _make_room(self) -> None:
            waiting = [
                c
                for c in self.connections
                if c is not self
                and isinstance(c, GuardedH11Protocol)
                and c.waiting_for_headers()
                and not c.transport.is_closing()
            ]
            if waiting:
                oldest = min(waiting, key=lambda c: c._waiting_since)
                logger.warning(
                    "connection cap (%d) reached: closing %s, idle or slow for its headers",
                    max_connections,
                    oldest.client,
                )
                oldest.transport.close()
            else:
                logger.warning(
                    "connection cap (%d) reached and every connection is busy: refusing %s",
                    max_connections,
                    self.client,
                )
                self.transport.close()

        def _check(self) -> None:
            self._watchdog = None
            if self.transport.is_closing():
                return
            now = self.loop.time()
            if self.waiting_for_headers():
                if now - self._waiting_since > header_timeout_s:
                    logger.info("closing %s: no complete request headers within %gs", self.client, header_timeout_s)
                    self.transport.close()
                    return
            elif self.conn.their_state is h11.SEND_BODY and now - self._last_data > body_idle_timeout_s:
                logger.info("closing %s: request body stalled for %gs", self.client, body_idle_timeout_s)
                self.transport.close()
                return
            self._watchdog = self.loop.call_later(_TICK_S, self._check)

    return GuardedH11Protocol


class SessionCaps:
    """ASGI middleware: at most `per_peer` live streamable-HTTP sessions per client address.

    It keeps its own book of the sessions it saw open, from the HTTP exchanges alone: a session is
    opened by an `initialize` answered (< 400) with an `Mcp-Session-Id`, and ends when a DELETE for
    it is answered (< 400), when any request for it is answered 404 (the SDK no longer holds it:
    it crashed or expired), or when it has had no request in flight for `idle_timeout_s`, the rule
    the SDK expires sessions by (same setting). Our idle clock starts when the ASGI call returns,
    a moment after the SDK's, so a session is counted at most that moment longer, never shorter.
    `on_end(session_id)` is told of each end (the upstream sessions forget it).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_peer: int,
        idle_timeout_s: float | None,
        on_end: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.per_peer = per_peer
        self.idle_timeout_s = idle_timeout_s
        self.on_end = on_end
        self.clock = clock
        self.owner: dict[str, str] = {}
        """Live session id -> the client address that opened it."""
        self._in_flight: dict[str, int] = {}
        self._idle_since: dict[str, float] = {}

    def _end(self, sid: str) -> None:
        if self.owner.pop(sid, None) is None:
            return
        self._in_flight.pop(sid, None)
        self._idle_since.pop(sid, None)
        if self.on_end is not None:
            self.on_end(sid)

    def _expire(self) -> None:
        if self.idle_timeout_s is None:
            return
        now = self.clock()
        for sid in [s for s in self.owner if not self._in_flight.get(s)]:
            if now - self._idle_since.get(sid, now) > self.idle_timeout_s:
                self._end(sid)

    def count(self, peer: str) -> int:
        """Live sessions `peer` holds now."""
        self._expire()
        return sum(1 for p in self.owner.values() if p == peer)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sid = _header(scope, b"mcp-session-id")
        if sid is not None:
            await self._in_session(sid, scope, receive, send)
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more and len(body) <= 1_000_000:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        peer = (scope.get("client") or ("?", 0))[0]
        if _is_initialize(body) and self.count(peer) >= self.per_peer:
            logger.warning(
                "refused a new session for %s: it holds %d (offload.server.max_sessions_per_peer)", peer, self.per_peer
            )
            text = (
                f"Too many sessions from {peer}: at most {self.per_peer} open at once (offload.server.max_sessions_per_peer); "
                "close one (HTTP DELETE) or wait for idle ones to expire\n"
            )
            await PlainTextResponse(text, status_code=429, headers={"Retry-After": "5"})(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": more}
            return await receive()

        opened: str | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message.get("status", 500) < 400:
                for key, value in message.get("headers") or []:
                    if key.lower() == b"mcp-session-id":
                        opened = value.decode("latin-1")
                        self.owner[opened] = peer
                        self._in_flight[opened] = self._in_flight.get(opened, 0) + 1
            await send(message)

        try:
            await self.app(scope, replay, watch)
        finally:
            if opened is not None and opened in self.owner:
                self._finished(opened)

    async def _in_session(self, sid: str, scope: Scope, receive: Receive, send: Send) -> None:
        if sid not in self.owner:
            await self.app(scope, receive, send)
            return
        self._in_flight[sid] = self._in_flight.get(sid, 0) + 1
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message.get("status")
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._finished(sid)
            if status == 404 or (scope.get("method") == "DELETE" and status is not None and status < 400):
                self._end(sid)

    def _finished(self, sid: str) -> None:
        left = self._in_flight.get(sid, 1) - 1
        self._in_flight[sid] = left
        if not left:
            self._idle_since[sid] = self.clock()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _is_initialize(body: bytes) -> bool:
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"
