"""Who is asking: the one place that derives a request's identity and the keys state is kept under.

How it works:

`scope_key(ctx, ...)` returns the session identity a request's dedup history, ledger
ownership under `ledger.scope: session`, and recall/expand checks are keyed by:

- a handshake-era streamable-HTTP session: its `Mcp-Session-Id` (the SDK answers 404 to an id
  it does not hold, so a request that reaches a handler carries a live one);
- an SSE or stdio stream (either era): one key per stream, which lives as long as the
  client's stream. The key is made by the server lifespan (`stream_lifespan`), which the SDK
  enters once per `Server.run`, i.e. once per stdio or SSE connection;
- a 2026-07-28 client on streamable HTTP: nobody. That wire is stateless and the spec gives
  no per-client identity (clientInfo names a program, not an instance), so each
  request gets its own throwaway key (`stateless:` + random), which is never
  shared: its dedup history is its own, and it owns nothing another request can
  name. Under `ledger.scope: session` such a request can neither read bodies
  back nor be handed ids it could never read, so the proxy refuses
  recall/expand with a clear reason and passes downstream results through
  unshaped (reason `no_session_identity`, counted in metrics).
- with `offload.server.stateless` (replicas behind a balancer) handshake-era requests are
  connections of their own too (the SDK's stateless mode), so each gets a fresh key as well;
  an `Mcp-Session-Id` header is then not trusted (no session was ever issued).

`connection_key(ctx, ...)` is the narrower question "which standing handshake-era connection
is this": the same key for SSE, stdio and HTTP sessions, and None where there is no
connection to notify later (2026-era requests, stateless HTTP, the `initialize` that opens an
HTTP session before its id exists). Everything here reads public request data only
(`ctx.protocol_version`, the HTTP request's headers, the lifespan context).

The principal is the authenticated caller: `token_table(settings)` maps each configured bearer
token to the principal it names (`offload.server.auth_tokens: {principal: token}`; the single
`auth_token`, or OFFLOAD_MCP_AUTH_TOKEN, is the principal `default`). The HTTP guard
(upstream/security.py) checks a request's token against that table and writes the principal into
the ASGI scope's `state`; `principal_of(...)` reads it back from an MCP request context or a
plain starlette request, so MCP calls and GET /expand see the same caller. `owner_key(...)`
turns a caller into the ledger's ownership key:

- scope `session`: the session identity above (2025-era clients);
- scope `principal`: `principal:<name>`, the same on every replica, so a body offloaded
  through one replica is readable by its owner through any other and by nobody else;
- scope `global`: the session identity (the ledger does not check it).

When it is inert: stdio and a proxy without tokens have no authenticated caller; they are the
principal `anonymous` (one tenant).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from ..session import ANONYMOUS_PREFIX

NO_IDENTITY_REASON = "no_session_identity"
AUTH_ENV_VAR = "OFFLOAD_MCP_AUTH_TOKEN"
DEFAULT_PRINCIPAL = "default"
"""The principal of the single `auth_token`."""
ANONYMOUS = "anonymous"
"""The caller when no token is configured (stdio, a loopback proxy without tokens)."""
STATE_KEY = "offload_mcp.principal"
"""Where the guard leaves the authenticated principal in the ASGI scope's `state`."""
STREAM_KEY = "offload_mcp.stream"
"""Where `stream_lifespan` leaves the stream's key in the server's lifespan context."""
SESSION_HEADER = "mcp-session-id"
Context = ServerRequestContext[Any, Any]


def stream_lifespan(
    on_end: Callable[[str], None] | None = None,
) -> Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]]:
    """A server lifespan giving each stream (each `Server.run`: one stdio or SSE connection) its own key.

    `on_end(key)` runs when the stream closes, so whoever kept something per stream can let it go.
    The streamable-HTTP manager enters the lifespan once for all its sessions: there the key is
    never used as an identity (`connection_key`).
    """

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        key = uuid.uuid4().hex
        try:
            yield {STREAM_KEY: key}
        finally:
            if on_end is not None:
                on_end(key)

    return lifespan


def stream_key(ctx: Context) -> str | None:
    """The key `stream_lifespan` gave the stream this request came on (None without that lifespan)."""
    context = ctx.lifespan_context
    key = context.get(STREAM_KEY) if isinstance(context, Mapping) else None
    return key if isinstance(key, str) else None


def _session_header(ctx: Context) -> str | None:
    request = ctx.request
    return (request.headers.get(SESSION_HEADER) or None) if isinstance(request, Request) else None


def is_modern(ctx: Context) -> bool:
    """A 2026-07-28-era request: every one is a connection of its own, with no standing channel."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def connection_key(ctx: Context, *, stateless_wire: bool, http_sessions: bool) -> str | None:
    """The standing handshake-era connection behind a request, or None where there is none (see the module doc).

    `stateless_wire` is true on streamable HTTP; `http_sessions` is false under `offload.server.stateless`.
    """
    if is_modern(ctx):
        return None
    if stateless_wire:
        return _session_header(ctx) if http_sessions else None
    return stream_key(ctx)


def scope_key(ctx: Context, *, stateless_wire: bool, http_sessions: bool, process_session: str) -> str:
    """The identity of the caller behind a request context (see the module doc).

    `stateless_wire` is true on streamable HTTP, where a 2026-era request is its own connection.
    The principal (`principal_of`) is a separate question: one caller may hold many sessions.
    """
    if is_modern(ctx):
        if stateless_wire:
            return ANONYMOUS_PREFIX + uuid.uuid4().hex
        # On a stream (SSE, stdio) each 2026-era request is a connection of its own, but all share the stream.
        return stream_key(ctx) or process_session
    key = connection_key(ctx, stateless_wire=stateless_wire, http_sessions=http_sessions)
    if key is not None:
        return key
    # Streamable HTTP without a session (the SDK's stateless mode): the request is its own connection.
    return uuid.uuid4().hex if stateless_wire else process_session


def refusal(tool: str) -> str:
    return (
        f"{tool}: ledger scope is `session` but this request has no session: 2026-07-28 streamable-HTTP requests "
        "are stateless and carry no per-client identity, so nothing stored can be proven to be yours. "
        "Results on this connection are passed through unshaped (no ids are handed out); connect with a "
        "handshake-era session (Mcp-Session-Id) or use `ledger.scope: global`."
    )


def token_table(server_settings: Any, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """token -> principal for every configured token (empty: no authentication)."""
    env = os.environ if environ is None else environ
    table = {token: principal for principal, token in (server_settings.auth_tokens or {}).items()}
    single = server_settings.auth_token or env.get(AUTH_ENV_VAR) or None
    if single is not None:
        table.setdefault(single, DEFAULT_PRINCIPAL)
    return table


def principal_from_asgi(scope: Mapping[str, Any] | None) -> str | None:
    if not scope:
        return None
    state = scope.get("state")
    if isinstance(state, Mapping):
        value = state.get(STATE_KEY)
        return value if isinstance(value, str) else None
    return None


def principal_of(request_or_ctx: Any) -> str:
    """The authenticated principal of an MCP request context or a starlette request; `anonymous` without one."""
    request = getattr(request_or_ctx, "request", request_or_ctx)
    scope = getattr(request, "scope", None)
    return principal_from_asgi(scope if isinstance(scope, Mapping) else None) or ANONYMOUS


def owner_key(ledger_scope: str, *, principal: str, session_id: str) -> str:
    """The ledger ownership key of a caller under `offload.ledger.scope`."""
    if ledger_scope == "principal":
        return f"principal:{principal}"
    return session_id


def client_name(ctx: ServerRequestContext[Any, Any] | None) -> str | None:
    """The `clientInfo.name` the client declared (at initialize, or in a 2026-era request's envelope); None if none.

    It names a program, not an instance, so it keys nothing here: stats and metrics count each result
    against what that program would have shown without the proxy (analysis/clients.py).
    """
    if ctx is None:
        return None
    params = ctx.session.client_params
    info = getattr(params, "client_info", None) if params is not None else None
    name = getattr(info, "name", None)
    return name if isinstance(name, str) and name else None
