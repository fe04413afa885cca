"""Who is asking: the one place that derives the key session-scoped state is kept under.

How it works: `scope_key(connection, ...)` returns the identity a request's
dedup history, ledger ownership (`ledger.scope: session`) and recall/expand
checks are keyed by:

- a handshake-era streamable-HTTP session: its `Mcp-Session-Id`;
- an SSE or stdio connection (either era): one id per connection, which
  lives as long as the client's stream;
- a 2026-07-28 client on streamable HTTP: nobody. That wire is stateless and the spec gives
  no per-client identity (clientInfo names a program, not an instance), so each
  request gets its own throwaway key (`stateless:` + random), which is never
  shared: its dedup history is its own, and it owns nothing another request can
  name. Under `ledger.scope: session` such a request can neither read bodies
  back nor be handed ids it could never read, so the proxy refuses
  recall/expand with a clear reason and passes downstream results through
  unshaped (reason `no_session_identity`, counted in metrics).

When a principal scope (bearer-token identity) lands it belongs here, in
`scope_key` (which gets the whole request context, HTTP request included), so
every consumer keeps asking one function.
"""

from __future__ import annotations

import uuid
import weakref
from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

ANONYMOUS_PREFIX = "stateless:"
_stream_ids: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
NO_IDENTITY_REASON = "no_session_identity"


def scope_key(ctx: Any, *, stateless_wire: bool, process_session: str) -> str:
    """The identity of the caller behind a request context (see the module doc).

    `stateless_wire` is true on streamable HTTP, where a 2026-era request is its own connection.
    `ctx.request` (the HTTP request, on HTTP transports) is where a principal would be read from.
    """
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    if connection is None:
        return process_session
    if connection.session_id:
        return str(connection.session_id)
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        if stateless_wire:
            return ANONYMOUS_PREFIX + uuid.uuid4().hex
        # On a stream (SSE, stdio) each 2026-era request gets a fresh Connection, but all share the stream's outbound.
        try:
            return _stream_ids.setdefault(connection.outbound, uuid.uuid4().hex)
        except TypeError:  # not weak-referenceable: the stream is the process's only one (stdio)
            return process_session
    return str(connection.state.setdefault("offload_mcp.session_id", uuid.uuid4().hex))


def is_anonymous(session_id: str) -> bool:
    """True for a stateless HTTP request that carries no identity of its own."""
    return session_id.startswith(ANONYMOUS_PREFIX)


def refusal(tool: str) -> str:
    return (
        f"{tool}: ledger scope is `session` but this request has no session: 2026-07-28 streamable-HTTP requests "
        "are stateless and carry no per-client identity, so nothing stored can be proven to be yours. "
        "Results on this connection are passed through unshaped (no ids are handed out); connect with a "
        "handshake-era session (Mcp-Session-Id) or use `ledger.scope: global`."
    )
