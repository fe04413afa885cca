"""Serve the proxy upstream over stdio, SSE or streamable HTTP.

HTTP transports bind 127.0.0.1 by default and keep the SDK's DNS-rebinding
protection (Host/Origin checks), extended by `offload.server.allowed_hosts`
and `allowed_origins`. With `offload.server.auth_token` (or the
OFFLOAD_MCP_AUTH_TOKEN environment variable), or several `auth_tokens` (one
per principal, server/identity.py), every request except /healthz must carry
`Authorization: Bearer <token>`; binding a non-loopback address without a
token is refused. `offload.server.stateless` serves streamable HTTP without
protocol sessions (replicas behind a balancer without stickiness).

The SSE transport's per-connection `server.run` enters the server lifespan
per connection; nothing process-wide lives there (the pool is in ProxyState).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from ..config import ConfigError
from .http_extras import extra_routes
from .identity import AUTH_ENV_VAR, token_table
from .proxy import ProxyState, initialization_options
from .security import guard

logger = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, initialization_options(server))


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


def auth_tokens(settings: Any, host: str) -> dict[str, str]:
    """token -> principal for every accepted bearer token; refuses a non-loopback bind without one."""
    table = token_table(settings.server)
    if not table and host not in LOOPBACK:
        raise ConfigError(
            f"--host {host}: binding a non-loopback address needs offload.server.auth_token, auth_tokens (or {AUTH_ENV_VAR})"
        )
    return table


def streamable_http_app(state: ProxyState, server: Server[Any], host: str, port: int) -> Starlette:
    return server.streamable_http_app(
        host=host,
        # Replicas without stickiness: no protocol session may live in one process's memory.
        stateless_http=state.settings.server.stateless,
        transport_security=_security(state, host, port),
        custom_starlette_routes=extra_routes(state),
    )


def sse_app(state: ProxyState, server: Server[Any], host: str, port: int) -> Starlette:
    from mcp.server.sse import SseServerTransport

    sse = SseServerTransport("/messages/", security_settings=_security(state, host, port))

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, initialization_options(server))
        return Response()

    routes: list[Any] = [
        Route("/sse", handle_sse, methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
        *extra_routes(state),
    ]
    return Starlette(routes=routes)


async def serve_http(app: ASGIApp, host: str, port: int, log_level: str, ready: Any = None) -> None:
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(), lifespan="on", access_log=False)
    server = uvicorn.Server(config)
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


async def serve(state: ProxyState, server: Server[Any], transport: str, host: str, port: int, log_level: str) -> None:
    if transport == "stdio":
        await serve_stdio(server)
        return
    tokens = auth_tokens(state.settings, host)
    if state.settings.ledger.scope == "principal" and not tokens:
        logger.warning("offload.ledger.scope is `principal` but no token is configured: every caller is the principal `anonymous`")
    state.stateless_wire = transport == "streamable-http"
    app: ASGIApp = streamable_http_app(state, server, host, port) if transport == "streamable-http" else sse_app(state, server, host, port)
    # Host/Origin on every route (the SDK checks only the MCP endpoint), then the bearer token.
    app = guard(
        app, bind_host=host, tokens=tokens,
        extra_hosts=state.settings.server.allowed_hosts, extra_origins=state.settings.server.allowed_origins,
    )
    path = "/mcp" if transport == "streamable-http" else "/sse"

    def ready(uv: Any) -> None:
        for sock_server in uv.servers:
            for sock in sock_server.sockets:
                addr = sock.getsockname()
                # One line on stderr that tests and users can read the real port from (--port 0).
                print(f"offload-mcp: serving {transport} on http://{addr[0]}:{addr[1]}{path}", flush=True, file=__import__("sys").stderr)

    await serve_http(app, host, port, log_level, ready)
