"""Serve the proxy upstream over stdio, SSE or streamable HTTP.

HTTP transports bind 127.0.0.1 by default and keep the SDK's DNS-rebinding
protection (Host/Origin checks), extended by `offload.server.allowed_hosts`
and `allowed_origins`. With `offload.server.auth_token` (or the
OFFLOAD_MCP_AUTH_TOKEN environment variable), or several `auth_tokens` (one
per principal, upstream/identity.py), every request except /healthz must carry
`Authorization: Bearer <token>`; binding a non-loopback address without a
token is refused. `offload.server.stateless` serves streamable HTTP without
protocol sessions (replicas behind a balancer without stickiness).

The SSE transport's per-connection `server.run` enters the server lifespan
per connection; nothing process-wide lives there (the pool is in ProxyState), and
the per-stream identity key is made there (upstream/identity.py).
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
from typing import Any

import anyio
import anyio.abc
from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..config import ConfigError
from .connection_limits import SessionCaps, connection_cap, guarded_h11
from .http_extras import extra_routes
from .identity import AUTH_ENV_VAR, DEFAULT_PRINCIPAL, token_table
from .proxy import ProxyState, initialization_options
from .security import guard
from .stdio_pipes import upstream_stdio

logger = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


async def serve_stdio(server: Server[Any]) -> None:
    async with upstream_stdio() as (read, write):
        await server.run(AnswerUnparseableLines(read, write), write, initialization_options(server))


_ID_PREFIX = re.compile(r'"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")')


class AnswerUnparseableLines(anyio.abc.ObjectReceiveStream[Any]):
    """The stdin message stream, answering a line that is not a JSON-RPC message (bad JSON, 1M-deep nesting) with an error.

    The SDK's stdio reader hands such a line over as an exception, which its
    dispatcher only logs: the client would wait for an answer forever. The id
    is recovered from the line's first bytes where it can be (else `null`, as
    JSON-RPC 2.0 prescribes). A wrapper rather than a relaying task: each
    message would otherwise cost one more task switch on its way in.
    """

    def __init__(self, read: Any, write: Any) -> None:
        self._read = read
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender context of the last message, as the SDK's context-aware stream carries it."""
        return getattr(self._read, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def _answer(self, item: Exception) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        kind, detail, request_id = _describe_bad_line(item)
        code, what = (-32700, "Parse error") if kind == "json_invalid" else (-32600, "Invalid Request")
        message = f"{what}: the line is not a valid JSON-RPC message ({kind}: {detail})"
        logger.warning("stdin: %s", message)
        await self._write.send(
            SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message)))
        )

    async def aclose(self) -> None:
        await self._read.aclose()


def _describe_bad_line(exc: Exception) -> tuple[str, str, int | str | None]:
    """(error type, short message, the request id if one can be recovered) from the SDK's validation error."""
    try:
        first = exc.errors(include_url=False)[0]  # type: ignore[attr-defined]
    except Exception:
        return type(exc).__name__, str(exc)[:200], None
    value = first.get("input")
    request_id: int | str | None = None
    if isinstance(value, dict):  # valid JSON, not a valid message
        found_id = value.get("id")
        request_id = found_id if isinstance(found_id, (str, int)) and not isinstance(found_id, bool) else None
    elif isinstance(value, (str, bytes)):  # not JSON at all: read the id from the line's first bytes
        head = value[:512].decode("utf-8", "replace") if isinstance(value, bytes) else value[:512]
        found = _ID_PREFIX.search(head)
        if found:
            raw = found.group(1)
            request_id = raw[1:-1] if raw.startswith('"') else int(raw)
    return str(first.get("type")), str(first.get("msg"))[:200], request_id


def _security(state: ProxyState, host: str, port: int) -> TransportSecuritySettings:
    settings = state.settings.server
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", *settings.allowed_hosts]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *settings.allowed_origins]
    if host not in LOOPBACK and host not in ("0.0.0.0", "::"):
        hosts += [host, f"{host}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def auth_token(settings: Any, host: str) -> str | None:
    """The single bearer token (if any); refuses a non-loopback bind without any token."""
    auth_tokens(settings, host)
    return settings.server.auth_token or os.environ.get(AUTH_ENV_VAR) or None


MIN_TOKEN_CHARS = 8
"""The shortest bearer token a non-loopback bind accepts, however it is given (auth_tokens entries: always)."""


def auth_tokens(settings: Any, host: str) -> dict[str, str]:
    """token -> principal for every accepted bearer token; refuses a non-loopback bind without one, a
    token nobody can send (blank, or with spaces at its ends: the header is trimmed), and on a
    non-loopback bind a token shorter than MIN_TOKEN_CHARS, whichever way it was given."""
    table = token_table(settings.server)
    if not table and host not in LOOPBACK:
        raise ConfigError(
            f"--host {host}: binding a non-loopback address needs offload.server.auth_token, auth_tokens (or {AUTH_ENV_VAR})"
        )
    for token, principal in table.items():
        problem = token_problem(token, remote=host not in LOOPBACK)
        if problem is not None:
            named = (
                f"the token (--auth-token, offload.server.auth_token or {AUTH_ENV_VAR})"
                if principal == DEFAULT_PRINCIPAL and token not in (settings.server.auth_tokens or {}).values()
                else f"the token of principal {principal!r} (offload.server.auth_tokens)"
            )
            raise ConfigError(f"--host {host}: {named} {problem}")
    return table


def token_problem(token: str, *, remote: bool) -> str | None:
    """Why `token` cannot guard the proxy (None when it can); `remote`: the bind is not a loopback address."""
    if not token.strip():
        return "is blank: no client could ever send it"
    if token != token.strip():
        return "starts or ends with whitespace, which no client can send (the header is trimmed)"
    if remote and len(token) < MIN_TOKEN_CHARS:
        return f"has {len(token)} characters; a non-loopback address needs at least {MIN_TOKEN_CHARS}"
    return None


def streamable_http_app(state: ProxyState, server: Server[Any], host: str, port: int) -> ASGIApp:
    settings = state.settings.server
    app = server.streamable_http_app(
        host=host,
        # Replicas without stickiness: no protocol session may live in one process's memory.
        stateless_http=state.settings.server.stateless,
        transport_security=_security(state, host, port),
        custom_starlette_routes=extra_routes(state),
        max_sessions=settings.max_sessions,
        session_idle_timeout=settings.session_idle_timeout_s,
    )
    return SessionCaps(
        app,
        per_peer=settings.max_sessions_per_peer,
        idle_timeout_s=settings.session_idle_timeout_s,
        on_end=state.upstream.forget,
    )


def sse_app(state: ProxyState, server: Server[Any], host: str, port: int) -> Starlette:
    from mcp.server.sse import SseServerTransport

    sse = SseServerTransport("/messages/", security_settings=_security(state, host, port))
    settings = state.settings.server
    open_streams: dict[str, int] = {}

    async def handle_sse(scope: Scope, receive: Receive, send: Send) -> None:
        # Each SSE stream is a session: the same caps as streamable HTTP (per peer, and overall).
        peer = (scope.get("client") or ("?", 0))[0]
        if (
            open_streams.get(peer, 0) >= settings.max_sessions_per_peer
            or sum(open_streams.values()) >= settings.max_sessions
        ):
            logger.warning(
                "refused a new SSE session for %s (offload.server.max_sessions_per_peer / max_sessions)", peer
            )
            refusal = PlainTextResponse(
                f"Too many sessions: at most {settings.max_sessions_per_peer} per client address and {settings.max_sessions} "
                "in all (offload.server.max_sessions_per_peer, max_sessions); close one first\n",
                status_code=429,
                headers={"Retry-After": "5"},
            )
            await refusal(scope, receive, send)
            return
        open_streams[peer] = open_streams.get(peer, 0) + 1
        try:
            async with sse.connect_sse(scope, receive, send) as (read, write):
                await server.run(read, write, initialization_options(server))
        finally:
            open_streams[peer] -= 1
            if not open_streams[peer]:
                del open_streams[peer]

    routes: list[Any] = [
        # A raw ASGI endpoint: the SSE transport writes the response itself, through the ASGI `send`.
        Route("/sse", _AsgiEndpoint(handle_sse), methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
        *extra_routes(state),
    ]
    return Starlette(routes=routes)


class _AsgiEndpoint:
    """Makes starlette's Route treat a function as an ASGI app (it wraps plain functions as request handlers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class Stopper:
    """Ends serving on a stop signal (SIGTERM, SIGHUP) the way each transport ends cleanly: stdio
    by cancelling the serving task group; HTTP by asking uvicorn to exit, as its own Ctrl-C handler
    does. Cancelling uvicorn mid-serve instead made starlette log the lifespan's CancelledError as
    an ERROR traceback on every `docker stop` or `systemctl stop`."""

    def __init__(self, scope: anyio.CancelScope) -> None:
        self._scope = scope
        self._http: Any = None

    def attach(self, http_server: Any) -> None:
        self._http = http_server

    @property
    def exiting(self) -> bool:
        """uvicorn is shutting down (asked here, or by its own Ctrl-C handler)."""
        return bool(self._http is not None and self._http.should_exit)

    def stop(self) -> None:
        if self._http is None:
            self._scope.cancel()
            return
        self._http.should_exit = True
        # uvicorn waits for open connections to close, and an event stream (the SSE transport's,
        # streamable HTTP's GET stream) closes only when sse-starlette sees the exit. It learns of
        # it from uvicorn's signal handler, which our signal receiver replaces, so it is told here,
        # the way its AppStatus documents. Ctrl-C goes through uvicorn's handler and needs none of this.
        from sse_starlette.sse import AppStatus

        AppStatus.should_exit = True


class EndStreamsOnExit:
    """Ends, as a complete response, an event stream that a stopping server cut short.

    sse-starlette stops its streams on exit without sending the last (empty) body, and uvicorn
    logs each as `ERROR: ASGI callable returned without completing response`: one error line per
    connected client on every clean stop. Outside a stop an unfinished response is left to
    uvicorn to report, as ever."""

    def __init__(self, app: ASGIApp, stopper: Stopper) -> None:
        self.app = app
        self.stopper = stopper

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def noting_send(message: Any) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        await self.app(scope, receive, noting_send)
        if started and not finished and self.stopper.exiting:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def serve_http(
    app: ASGIApp,
    host: str,
    port: int,
    log_level: str,
    ready: Any = None,
    limits: Any = None,
    stopper: Stopper | None = None,
) -> None:
    import uvicorn

    http: Any = "auto"
    if limits is not None:
        http = guarded_h11(
            header_timeout_s=limits.header_timeout_s,
            body_idle_timeout_s=limits.body_idle_timeout_s,
            max_connections=connection_cap(limits.max_connections),
        )
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level.lower(), lifespan="on", access_log=False, http=http
    )
    server = uvicorn.Server(config)
    if stopper is not None:
        stopper.attach(server)
    if ready is not None:

        async def report() -> None:
            while not server.started:
                await anyio.sleep(0.02)
            ready(server)

        async with anyio.create_task_group() as tg:
            tg.start_soon(report)
            await server.serve()
    else:
        await server.serve()


async def serve(
    state: ProxyState,
    server: Server[Any],
    transport: str,
    host: str,
    port: int,
    log_level: str,
    stopper: Stopper | None = None,
) -> None:
    if transport == "stdio":
        await serve_stdio(server)
        return
    tokens = auth_tokens(state.settings, host)
    if state.settings.ledger.scope == "principal" and not tokens:
        logger.warning(
            "offload.ledger.scope is `principal` but no token is configured: every caller is the principal `anonymous`"
        )
    state.upstream.stateless_wire = transport == "streamable-http"
    if state.upstream.stateless_wire and state.settings.ledger.scope == "session":
        logger.warning(
            "ledger.scope is `session`: 2026-07-28 streamable-HTTP requests carry no session, so their results pass "
            "through unshaped and recall/expand refuse them (handshake-era sessions are unaffected)"
        )
    app: ASGIApp = (
        streamable_http_app(state, server, host, port)
        if transport == "streamable-http"
        else sse_app(state, server, host, port)
    )
    # Host/Origin on every route (the SDK checks only the MCP endpoint), then the bearer token.
    app = guard(
        app,
        bind_host=host,
        tokens=tokens,
        extra_hosts=state.settings.server.allowed_hosts,
        extra_origins=state.settings.server.allowed_origins,
    )
    if stopper is not None:
        app = EndStreamsOnExit(app, stopper)
    path = "/mcp" if transport == "streamable-http" else "/sse"

    def ready(uv: Any) -> None:
        for sock_server in uv.servers:
            for sock in sock_server.sockets:
                addr = sock.getsockname()
                # One line on stderr that tests and users can read the real port from (--port 0).
                print(
                    f"offload-mcp: serving {transport} on http://{addr[0]}:{addr[1]}{path}",
                    flush=True,
                    file=__import__("sys").stderr,
                )

    await serve_http(app, host, port, log_level, ready, limits=state.settings.server, stopper=stopper)
