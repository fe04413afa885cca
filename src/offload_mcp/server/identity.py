"""Who is calling: bearer token -> principal, and the key the ledger checks ownership by.

How it works: `token_table(settings)` maps each configured bearer token to the
principal it names (`offload.server.auth_tokens: {principal: token}`; the single
`auth_token`, or OFFLOAD_MCP_AUTH_TOKEN, is the principal `default`). The HTTP
guard (server/security.py) checks a request's token against that table and
writes the principal into the ASGI scope's `state`; `principal_of(...)` reads it
back from an MCP request context or a plain starlette request, so MCP calls and
GET /expand see the same caller. `owner_key(...)` is the one place that turns a
caller into the ledger's ownership key:

- scope `session`: the protocol session id (2025-era clients);
- scope `principal`: `principal:<name>`, the same on every replica, so a body
  offloaded through one replica is readable by its owner through any other and
  by nobody else;
- scope `global`: the session id (the ledger does not check it).

When it is inert: stdio and a proxy without tokens have no authenticated caller;
they are the principal `anonymous` (one tenant).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

AUTH_ENV_VAR = "OFFLOAD_MCP_AUTH_TOKEN"
DEFAULT_PRINCIPAL = "default"
"""The principal of the single `auth_token`."""
ANONYMOUS = "anonymous"
"""The caller when no token is configured (stdio, a loopback proxy without tokens)."""
STATE_KEY = "offload_mcp.principal"
"""Where the guard leaves the authenticated principal in the ASGI scope's `state`."""


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
