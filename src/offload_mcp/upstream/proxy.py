"""The upstream face: one low-level MCP `Server` whose handlers forward to the pool.

`ProxyState` is what lives as long as the process, composed of parts that
each do one job and can be built and tested on their own:

- `CatalogView` (upstream/catalog_view.py): the catalog, its presentation on
  tools/list, the status tool and the start-up waits;
- `UpstreamSessions` (upstream/sessions.py): the connected clients, their
  identity keys, and list-change notifications to them;
- `CallDispatcher` (upstream/dispatch.py): tools/call, own tools, the
  downstream call, schema check, shaping and metrics;
- `ResourcePromptRouter` (upstream/routing.py): resources, prompts and
  completions.

`build_server(state)` makes the `Server` and wires its handlers to the parts;
the same state serves any number of upstream connections on any transport.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..catalog.catalog import Catalog
from ..catalog.paging import BadCursor, page
from ..config import Config, OffloadSettings
from ..downstream.pool import DownstreamPool
from ..relay.listen import ForwardingListenHandler
from ..relay.parked import TOKEN_PREFIX, Parking
from ..relay.rounds import call_in_rounds
from ..session import is_anonymous
from ..shaping import build_shaper
from ..store import Ledger
from ..tools.own import load_own_tools
from . import stored_resources
from .catalog_view import STATUS_TOOL, CatalogView
from .dispatch import CallDispatcher
from .identity import is_modern, stream_lifespan
from .metrics import ProxyMetrics
from .routing import ResourcePromptRouter
from .sessions import UpstreamSessions

__all__ = ["INSTRUCTIONS", "STATUS_TOOL", "ProxyState", "build_server", "initialization_options"]

INSTRUCTIONS = (
    "offload-mcp forwards the tools of the servers it wraps. A large tool result may come back as a short "
    "stub with a trm_ id, and cut passages as <<cg:HASH>> markers: call recall_tool_result or "
    "context_guru_expand to get the exact bytes back."
)


class ProxyState:
    """Process-lifetime state shared by every upstream connection: the parts above, built once."""

    def __init__(self, config: Config, pool: DownstreamPool, *, ledger_path: Any | None = None) -> None:
        self.config = config
        self.settings: OffloadSettings = config.offload
        self.pool = pool
        self.shaper = build_shaper(self.settings, ledger_path)
        self.metrics = ProxyMetrics(
            chars_per_token=self.settings.policy.chars_per_token, log_bodies=self.settings.server.log_bodies
        )
        self.metrics.watch_budget(pool.budget)
        process_session = uuid.uuid4().hex
        self.routing = ResourcePromptRouter(pool)
        own_always, own_optional = load_own_tools()
        self.catalog_view = CatalogView(
            pool,
            self.settings,
            own_always=own_always,
            own_optional=own_optional,
            routing=self.routing,
            process_session=process_session,
            ledger=lambda: self.shaper.ledger,
            metrics=self.metrics,
        )
        self.upstream = UpstreamSessions(pool, self.settings, process_session=process_session)
        self.dispatch = CallDispatcher(
            pool, self.settings, self.catalog_view, self.upstream, self.shaper, metrics=self.metrics
        )
        self.catalog_view.follow(self.upstream)

    @property
    def ledger(self) -> Ledger | None:
        return self.shaper.ledger

    @property
    def catalog(self) -> Catalog:
        return self.catalog_view.catalog

    @property
    def parking(self) -> Parking:
        return self.dispatch.parking

    @property
    def sessions_seen(self) -> set[str]:
        return self.dispatch.sessions_seen

    async def subscribe(
        self, method: str, params: types.SubscribeRequestParams | types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        await self.catalog_view.settle()
        return await self.routing.subscribe(method, params)


def initialization_options(server: Server[Any]) -> Any:
    return server.create_initialization_options(
        NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True)
    )


def _asks_relay(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The client declared something a server may ask it for (sampling, elicitation, roots)."""
    caps = ctx.session.client_capabilities
    return caps is not None and (caps.sampling is not None or caps.elicitation is not None or caps.roots is not None)


class _Handlers:
    """The handlers the `Server` calls, each bound to the process's state and doing one request's job."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state
        self.view = state.catalog_view
        self.upstream = state.upstream
        self.dispatch = state.dispatch
        self.routing = state.routing

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self.view.wait_for_first_listing()
        self.state.pool.retry_failed()
        presentation = self.view.presentation()
        status = self.view.status_tool()
        listed = [*presentation.tools, status] if status is not None else presentation.tools
        try:
            tools, next_cursor = page(
                listed,
                params.cursor if params else None,
                self.state.settings.catalog.list_page_bytes,
                presentation.wire_extras,
            )
        except BadCursor as err:
            raise MCPError(code=types.INVALID_PARAMS, message=str(err)) from None
        return types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.request_state is not None and params.request_state.startswith(TOKEN_PREFIX):
            return await call_in_rounds(self.state, ctx, params)
        if is_modern(ctx) and _asks_relay(ctx):
            return await call_in_rounds(self.state, ctx, params)
        session_id = self.upstream.session_id(ctx)
        return await self.dispatch.call_tool(
            params.name,
            dict(params.arguments or {}),
            session_id=session_id,
            meta=params.meta,
            ctx=ctx,
            owner=self.upstream.owner(ctx, session_id),
        )

    async def list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        await self.view.settle()
        return types.ListResourcesResult(resources=self.routing.list_resources())

    async def list_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [*self.routing.list_resource_templates(), stored_resources.TEMPLATE]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if stored_resources.is_stored_uri(uri):
            owner = self.upstream.owner(ctx, self.upstream.session_id(ctx))
            return await stored_resources.read(self.state.ledger, uri, owner)
        await self.view.settle()
        return await self.routing.read_resource(params)

    async def list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        await self.view.settle()
        return types.ListPromptsResult(prompts=self.routing.list_prompts())

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        await self.view.settle()
        return await self.routing.get_prompt(params)

    async def subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        return await self.state.subscribe("resources/subscribe", params)

    async def unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        return await self.state.subscribe("resources/unsubscribe", params)

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        await self.view.settle()
        return await self.routing.complete(params)

    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        # Applied to every server now and to each one that starts later.
        await self.state.pool.set_log_level(params.level)
        return types.EmptyResult()

    async def roots_list_changed(self, ctx: Any, params: types.NotificationParams | None) -> None:
        await self.state.pool.roots_changed()

    async def splice_wire_extras(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Middleware: meets each client, and gives a session's tools/list its own presentation and wire extras."""
        self.upstream.remember_session(ctx)
        await self.upstream.meet_client(ctx)
        if ctx.method != "tools/list":
            return await call_next(ctx)
        await self.view.wait_for_first_listing()  # before the listing is computed: it must include who joined
        session_id = self.upstream.session_id(ctx)
        # Off the loop: a session's first listing reads call counts from the ledger (hot-tool learning),
        # and a stalled database must not hold the other sessions' requests meanwhile.
        presentation = await anyio.to_thread.run_sync(
            self.view.presentation, None if is_anonymous(session_id) else session_id
        )
        with self.view.presenting(presentation):
            result = await call_next(ctx)
        if presentation.wire_extras and isinstance(result, dict):
            for tool in result.get("tools", []):
                extra = presentation.wire_extras.get(tool.get("name"))
                if extra:
                    tool.update(extra)
        return result


def build_server(state: ProxyState) -> Server[Any]:
    handlers = _Handlers(state)
    server: Server[Any] = Server(
        "offload-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        # One key per stdio or SSE stream (upstream/identity.py); a closed stream is forgotten upstream.
        lifespan=stream_lifespan(state.upstream.forget),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
        on_subscribe_resource=handlers.subscribe,
        on_unsubscribe_resource=handlers.unsubscribe,
        on_completion=handlers.complete,
        on_subscriptions_listen=ForwardingListenHandler(ListenHandler(state.upstream.bus), state.subscribe),
    )
    # Registered directly rather than as on_set_logging_level=/on_roots_list_changed=, which warn that the
    # 2026 era deprecates them: handshake-era clients still send both, and they must reach the servers.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, handlers.set_level)
    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, handlers.roots_list_changed
    )
    server.middleware.append(handlers.splice_wire_extras)
    return server
