"""2026-era resource subscriptions reach the downstream server that owns the resource.

A 2026-era client subscribes by naming resource URIs on a
`subscriptions/listen` stream instead of calling resources/subscribe. This
handler wraps the SDK's `ListenHandler`: before the stream opens it sends
resources/subscribe downstream for each URI nobody had subscribed yet, and
when the stream ends it unsubscribes the URIs no other stream still wants
(reference-counted, because several streams and clients share one
downstream session). Downstream `notifications/resources/updated` then flow
back through the subscription bus as before. Inert for streams that name no
resources.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

logger = logging.getLogger(__name__)

Subscribe = Callable[[str, Any], Awaitable[Any]]
"""`ProxyState.subscribe(method, params)`: forwards resources/(un)subscribe to the owning server."""


class ForwardingListenHandler:
    def __init__(
        self, inner: Callable[[Any, types.SubscriptionsListenRequestParams], Awaitable[Any]], subscribe: Subscribe
    ) -> None:
        self._inner = inner
        self._subscribe = subscribe
        self.watchers: Counter[str] = Counter()

    async def __call__(self, ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
        uris = sorted(set(params.notifications.resource_subscriptions or ()))
        taken: list[str] = []
        try:
            for uri in uris:
                self.watchers[uri] += 1
                taken.append(uri)
                if self.watchers[uri] == 1:
                    await self._forward("resources/subscribe", uri)
            return await self._inner(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):
                for uri in taken:
                    self.watchers[uri] -= 1
                    if self.watchers[uri] <= 0:
                        del self.watchers[uri]
                        await self._forward("resources/unsubscribe", uri)

    async def _forward(self, method: str, uri: str) -> None:
        params_type = (
            types.SubscribeRequestParams if method == "resources/subscribe" else types.UnsubscribeRequestParams
        )
        try:
            with anyio.fail_after(10):
                await self._subscribe(method, params_type(uri=uri))
        except (MCPError, TimeoutError) as err:
            # The stream still opens: other events on it are unaffected, and the log says why updates may not come.
            logger.warning("%s %s downstream failed: %s", method, uri, err)
