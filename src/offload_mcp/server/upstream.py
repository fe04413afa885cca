"""The clients connected upstream: who is asking, and how list changes reach them.

How it works: every request passes `remember_session` and `meet_client`
(the server middleware, server/proxy.py). The first keeps one session per
handshake-era connection so a later change downstream can be announced on it
(`notify_upstream`, `notify_resource_updated`: `notifications/*/list_changed`
and `resources/updated`, two seconds each; a session that cannot take one is
dropped). 2026-07-28-era clients have no standing connection and hear changes
only on their `subscriptions/listen` streams, fed from `bus`. The second
folds the client's declared capabilities into what downstream sessions
declare (relay/capabilities.py).

`session_id(ctx)` and `owner(ctx, session_id)` turn a request into the keys
dedup history and ledger ownership are kept under (server/identity.py says
which key each transport and era gets).

Inert: stdio with a client that never lists twice has one session and no
listen stream; nothing is sent when nothing changes downstream.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..config import OffloadSettings
from ..downstream.pool import DownstreamPool
from .identity import owner_key, principal_of, scope_key

logger = logging.getLogger(__name__)


class UpstreamSessions:
    """Upstream sessions by connection, their identity keys, and the list-change notifications sent to them."""

    def __init__(self, pool: DownstreamPool, settings: OffloadSettings, *, process_session: str) -> None:
        self.pool = pool
        self.settings = settings
        self.process_session = process_session
        self.bus = InMemorySubscriptionBus()
        self._upstream: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self.stateless_wire = False
        """True on streamable HTTP, where each 2026-era request is a connection of its own (no identity)."""

    def remember_session(self, ctx: ServerRequestContext[Any, Any]) -> None:
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and connection not in self._upstream:
            self._upstream[connection] = ctx.session

    async def meet_client(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """Fold the client's declared capabilities into what downstream declares (relay/capabilities.py)."""
        if ctx.method in ("initialize", "server/discover", "ping"):
            return
        caps = getattr(ctx.session, "client_capabilities", None)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.pool.relay.connected(connection, ctx.session)
        await self.pool.declare_for(caps)

    def session_id(self, ctx: ServerRequestContext[Any, Any]) -> str:
        # With offload.server.stateless every request is a connection of its own (the SDK's stateless
        # mode), so scope_key gives each a fresh key: no history lives in one replica's memory.
        return scope_key(ctx, stateless_wire=self.stateless_wire, process_session=self.process_session)

    @property
    def session_scoped(self) -> bool:
        return self.settings.ledger.scope == "session"

    def owner(self, ctx: ServerRequestContext[Any, Any], session_id: str) -> str:
        """The caller's ledger ownership key: the one place a request's identity becomes the ledger's."""
        return owner_key(self.settings.ledger.scope, principal=principal_of(ctx), session_id=session_id)

    async def notify_upstream(self, kind: str) -> None:
        """Pass a list change on: handshake-era sessions by notification, 2026-era by listen streams."""
        for connection, session in list(self._upstream.items()):
            if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue
            send = {
                "tools": session.send_tool_list_changed,
                "resources": session.send_resource_list_changed,
                "prompts": session.send_prompt_list_changed,
            }[kind]
            try:
                with anyio.fail_after(2):
                    await send()
            except Exception as err:
                logger.debug("dropping upstream session that cannot be notified: %r", err)
                self._upstream.pop(connection, None)
        events: dict[str, type[ToolsListChanged | ResourcesListChanged | PromptsListChanged]] = {
            "tools": ToolsListChanged,
            "resources": ResourcesListChanged,
            "prompts": PromptsListChanged,
        }
        await self.bus.publish(events[kind]())

    async def notify_resource_updated(self, uri: str) -> None:
        """A subscribed resource changed downstream: tell every upstream session that may care."""
        for connection, session in list(self._upstream.items()):
            if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue
            try:
                with anyio.fail_after(2):
                    await session.send_resource_updated(uri)
            except Exception:
                self._upstream.pop(connection, None)
        await self.bus.publish(ResourceUpdated(uri=uri))
