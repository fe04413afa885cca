"""The clients connected upstream: who is asking, and how list changes reach them.

How it works: every request passes `remember_session` and `meet_client`
(the server middleware, upstream/proxy.py).

- `remember_session` keeps one session per handshake-era connection, so a
  later change downstream can be announced on it (`notify_upstream`,
  `notify_resource_updated`: `notifications/*/list_changed` and
  `resources/updated`, two seconds each). A connection is forgotten when its
  stream closes (the server lifespan, upstream/identity.py), when its HTTP
  session ends (DELETE or idle, upstream/connection_limits.py), or when it cannot take
  a notification; the relay forgets it at the same time. 2026-07-28-era
  clients have no standing connection and hear changes only on their
  `subscriptions/listen` streams, fed from `bus`.
- `meet_client` folds the client's declared capabilities into what
  downstream sessions declare (relay/capabilities.py) and tells the relay
  which connections can take server requests outside a call.

`session_id(ctx)` and `owner(ctx, session_id)` turn a request into the keys
dedup history and ledger ownership are kept under (upstream/identity.py says
which key each transport and era gets).

Inert: nothing is sent while nothing changes downstream; a 2026-era client
leaves nothing behind here (no connection is kept for it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from pydantic import ValidationError

from ..config import OffloadSettings
from ..downstream.changes import ListKind
from ..downstream.pool import DownstreamPool
from ..relay.router import SessionUpstream
from .identity import connection_key, owner_key, principal_of, scope_key

logger = logging.getLogger(__name__)


class UpstreamSessions:
    """Upstream sessions by connection, their identity keys, and the list-change notifications sent to them."""

    def __init__(self, pool: DownstreamPool, settings: OffloadSettings, *, process_session: str) -> None:
        self.pool = pool
        self.settings = settings
        self.process_session = process_session
        self.bus = InMemorySubscriptionBus()
        self._upstream: dict[str, ServerSession] = {}
        """Connection key (upstream/identity.py) -> one session of it; its standalone channel carries notifications."""
        self.stateless_wire = False
        """True on streamable HTTP, where each 2026-era request is a connection of its own (no identity)."""

    def connection_key(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        return connection_key(ctx, stateless_wire=self.stateless_wire, http_sessions=not self.settings.server.stateless)

    def remember_session(self, ctx: ServerRequestContext[Any, Any]) -> None:
        key = self.connection_key(ctx)
        if key is not None and key not in self._upstream:
            self._upstream[key] = ctx.session

    def forget(self, key: str) -> None:
        """The stream closed or the HTTP session ended (upstream/connection_limits.py): nothing more reaches it."""
        self._upstream.pop(key, None)
        self.pool.relay.disconnected(key)

    @property
    def connection_count(self) -> int:
        """Handshake-era connections that hear list changes by notification."""
        return len(self._upstream)

    def for_call(self, ctx: ServerRequestContext[Any, Any]) -> SessionUpstream:
        """This call's client as the relay sees it: two calls on one connection share an origin."""
        return SessionUpstream(ctx.session, ctx.request_id, key=self.connection_key(ctx))

    async def meet_client(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Fold the client's declared capabilities into what downstream declares (relay/capabilities.py)."""
        if ctx.method in ("initialize", "server/discover"):
            # Only noted here, never waited on: both are answered at once. Servers still starting then
            # declare it in their first session (Relay.first_declaration), not in a second one. The
            # handshake declares in its params; a 2026-era request (Claude Code's discover) in its envelope.
            if ctx.method == "server/discover":
                self.pool.note_declaration(ctx.session.client_capabilities)
            else:
                with suppress(ValidationError):
                    declared = (ctx.params or {}).get("capabilities") or {}
                    self.pool.note_declaration(types.ClientCapabilities.model_validate(declared))
            return
        if ctx.method == "ping":
            return
        key = self.connection_key(ctx)
        if key is not None:
            self.pool.relay.connected(key, ctx.session)
        await self.pool.declare_for(ctx.session.client_capabilities)

    def session_id(self, ctx: ServerRequestContext[Any, Any]) -> str:
        # With offload.server.stateless every request is a connection of its own (the SDK's stateless
        # mode), so scope_key gives each a fresh key: no history lives in one replica's memory.
        return scope_key(
            ctx,
            stateless_wire=self.stateless_wire,
            http_sessions=not self.settings.server.stateless,
            process_session=self.process_session,
        )

    def owner(self, ctx: ServerRequestContext[Any, Any], session_id: str) -> str:
        """The caller's ledger ownership key: the one place a request's identity becomes the ledger's."""
        return owner_key(self.settings.ledger.scope, principal=principal_of(ctx), session_id=session_id)

    async def notify_upstream(self, kind: ListKind) -> None:
        """Pass a list change on: handshake-era sessions by notification, 2026-era by listen streams."""
        sends: dict[str, Callable[[ServerSession], Awaitable[None]]] = {
            "tools": ServerSession.send_tool_list_changed,
            "resources": ServerSession.send_resource_list_changed,
            "prompts": ServerSession.send_prompt_list_changed,
        }
        await self._tell_each(sends[kind])
        await self.bus.publish(_LIST_EVENTS[kind]())

    async def notify_resource_updated(self, uri: str) -> None:
        """A subscribed resource changed downstream: tell every upstream session that may care."""
        await self._tell_each(lambda session: session.send_resource_updated(uri))
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def _tell_each(self, send: Callable[[ServerSession], Awaitable[None]]) -> None:
        """One notification to every connection, two seconds each; one that cannot take it is dropped."""
        for key, session in list(self._upstream.items()):
            try:
                with anyio.fail_after(2):
                    await send(session)
            except Exception as err:
                logger.debug("dropping upstream session that cannot be notified: %r", err)
                self._upstream.pop(key, None)


_LIST_EVENTS: dict[str, type[ToolsListChanged | ResourcesListChanged | PromptsListChanged]] = {
    "tools": ToolsListChanged,
    "resources": ResourcesListChanged,
    "prompts": PromptsListChanged,
}
