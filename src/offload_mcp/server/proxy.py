"""The upstream face: one low-level MCP `Server` whose handlers forward to the pool.

`ProxyState` holds everything that lives as long as the process: the
downstream pool, the catalog, the shaper, the own tools, and the upstream
sessions to notify. `build_server(state)` makes the `Server`; the same state
serves any number of upstream connections on any transport.

tools/call: catalog lookup -> downstream call (arguments as given, `_meta`
without `progressToken` and `io.modelcontextprotocol/*`, progress relayed,
cancellation propagated by the handler's cancel scope) -> outputSchema check
-> `ResultShaper.shape` in a worker thread -> the client. Own tools
(recall, expand, search) are dispatched to their modules; their results are
never shaped.
"""

from __future__ import annotations

import logging
import time
import uuid
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..catalog.catalog import Catalog, CatalogEntry, build_catalog
from ..catalog.paging import BadCursor, page
from ..catalog.presentation import Presentation, present
from ..config import Config, OffloadSettings
from ..downstream.pool import DownstreamPool
from ..record import DecisionEvent
from ..reducers.base import SessionMemory
from ..relay.listen import ForwardingListenHandler
from ..relay.parked import TOKEN_PREFIX, Parking
from ..relay.rounds import call_in_rounds
from ..relay.router import SessionUpstream, Upstream
from ..shaping import CallInfo, build_shaper
from ..store import Ledger
from ..tool_names import ALWAYS_LISTED
from ..tools.own import load_own_tools
from ..tools.registry import OwnTool, ToolEnv, error_result
from .identity import (
    NO_IDENTITY_REASON,
    is_anonymous,
    owner_key,
    principal_of,
    refusal,
    scope_key,
)
from .metrics import ProxyMetrics
from .routing import ResourcePromptRouter, strip_meta

logger = logging.getLogger(__name__)

_presentation: ContextVar[Presentation | None] = ContextVar("offload_presentation", default=None)

STATUS_TOOL = "offload_mcp_status"
"""Listed only while no wrapped server is serving, so a broken setup is visible in the tool list."""

INSTRUCTIONS = (
    "offload-mcp forwards the tools of the servers it wraps. A large tool result may come back as a short "
    "stub with a trm_ id, and cut passages as <<cg:HASH>> markers: call recall_tool_result or "
    "context_guru_expand to get the exact bytes back."
)


class ProxyState:
    """Process-lifetime state shared by every upstream connection."""

    def __init__(self, config: Config, pool: DownstreamPool, *, ledger_path: Any | None = None) -> None:
        self.config = config
        self.settings: OffloadSettings = config.offload
        self.pool = pool
        self.shaper = build_shaper(self.settings, ledger_path)
        self.own_always, self.own_optional = load_own_tools()
        self.bus = InMemorySubscriptionBus()
        self.catalog: Catalog = Catalog([])
        self.routing = ResourcePromptRouter(pool)
        self._upstream: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._validators: dict[str, Any] = {}
        self._process_session = uuid.uuid4().hex
        self.stateless_wire = False
        """True on streamable HTTP, where each 2026-era request is a connection of its own (no identity)."""
        self.sessions_seen: set[str] = set()
        """Sessions that made a tool call in this process (serve's exit summary reads their ledger events)."""
        self.metrics = _make_metrics(self.settings)
        self.parking = Parking()
        self._first_list_waited = False
        self.rebuild(strict=True)
        pool.on_change(self._downstream_changed)

    # ---- catalog -----------------------------------------------------------

    @property
    def ledger(self) -> Ledger | None:
        return self.shaper.ledger

    def rebuild(self, *, strict: bool = False) -> None:
        server_tools = {s.name: s.tools for s in self.pool.servers.values() if s.tools}
        reserved = list(self.own_always) + list(self.own_optional)
        self.catalog = build_catalog(server_tools, self.settings.catalog, reserved, strict=strict)
        self._validators.clear()
        self.routing.rebuild(self.settings.catalog.separator)

    def presentation(self, session_id: str | None = None) -> Presentation:
        current = _presentation.get()
        if current is not None:
            return current
        return present(
            self.catalog.entries,
            [t.tool for t in self.own_always.values()],
            self.settings.catalog,
            optional_tools={name: t.tool for name, t in self.own_optional.items()},
            ledger=self.ledger,
            session_id=session_id or self._process_session,
            offload=self.settings,
        )

    async def _downstream_changed(self, server: str, kind: str) -> None:
        if kind.startswith("updated:"):
            await self.notify_resource_updated(kind.removeprefix("updated:"))
            return
        if kind == "restart":
            if self.metrics is not None:
                self.metrics.observe_restart(server)
            kind = "tools"
        if kind == "joined":
            # A server that finished starting after the proxy was serving: every list may have grown.
            self.rebuild()
            joined = self.pool.servers.get(server)
            caps = getattr(joined, "capabilities", None)
            await self.notify_upstream("tools")
            if caps is not None and caps.resources is not None:
                await self.notify_upstream("resources")
            if caps is not None and caps.prompts is not None:
                await self.notify_upstream("prompts")
            return
        if kind in ("tools", "prompts"):
            self.rebuild()
        await self.notify_upstream(kind)

    async def wait_for_first_listing(self) -> None:
        """The first tools/list waits (bounded by `downstream.first_list_wait_s`) for servers still
        starting, so a client that lists once sees them; initialize never waits, later lists never do."""
        if self._first_list_waited:
            return
        self._first_list_waited = True
        wait = getattr(self.pool, "wait_settled", None)
        if wait is not None and not self.pool.settled.is_set():
            await wait(self.settings.downstream.first_list_wait_s)

    async def settle(self) -> None:
        """Before a request that needs the servers (resources, prompts, tool search): those still starting get the first-listing bound."""
        if not self.pool.settled.is_set():
            await self.pool.wait_settled(self.settings.downstream.first_list_wait_s)

    def status_tool(self) -> types.Tool | None:
        """A tool entry saying no wrapped server is serving (and why), or None while any serves."""
        servers = list(self.pool.servers.values())
        if not servers or any(s.state == "ready" for s in servers):
            return None
        return types.Tool(
            name=STATUS_TOOL,
            description="offload-mcp is running but NO wrapped MCP server is serving, so their tools are missing. "
            + self.not_serving(),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        )

    def not_serving(self) -> str:
        parts = []
        for s in self.pool.servers.values():
            if s.state == "ready":
                continue
            # A failed server being retried in the background is "starting" again: its failure is the news.
            why = (
                s.failure.splitlines()[0]
                if s.failure
                else ("still starting" if s.state in ("new", "starting") else s.state)
            )
            parts.append(f"{s.name} ({why})")
        return "Servers not serving: " + "; ".join(parts) if parts else ""

    # ---- upstream sessions ------------------------------------------------

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
        return scope_key(ctx, stateless_wire=self.stateless_wire, process_session=self._process_session)

    @property
    def session_scoped(self) -> bool:
        return self.settings.ledger.scope == "session"

    def owner(self, ctx: ServerRequestContext[Any, Any], session_id: str) -> str:
        """The caller's ledger ownership key: the one place a request's identity becomes the ledger's."""
        return owner_key(self.settings.ledger.scope, principal=principal_of(ctx), session_id=session_id)

    def memory(self, session_id: str) -> SessionMemory:
        return self.shaper.session_memory(session_id)

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

    # ---- tools/call --------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        session_id: str,
        meta: Mapping[str, Any] | None = None,
        ctx: ServerRequestContext[Any, Any] | None = None,
        owner: str | None = None,
    ) -> types.CallToolResult:
        if not (self.settings.server.stateless or is_anonymous(session_id)):
            # A stateless request's key is its own and never comes back: nothing to summarise, and
            # remembering each would grow without bound.
            self.sessions_seen.add(session_id)
        own = self._own_tool(name)
        if own is not None:
            return await self._call_own(own, arguments, session_id, owner)
        if name == STATUS_TOOL and self.catalog.lookup(name) is None:
            return error_result(
                ("offload-mcp: " + self.not_serving())
                if self.status_tool()
                else "offload-mcp: every wrapped server is serving."
            )
        entry = self.catalog.lookup(name)
        if entry is None and not self.pool.settled.is_set():
            # Called before listing, while servers start: the tool may be theirs; wait as a first listing would.
            await self.pool.wait_settled(self.settings.downstream.first_list_wait_s)
            entry = self.catalog.lookup(name)
        if entry is None:
            return error_result(self._unknown_tool(name))
        return await self._call_downstream(entry, arguments, session_id=session_id, meta=meta, ctx=ctx, owner=owner)

    def _own_tool(self, name: str) -> OwnTool | None:
        if name in self.own_always:
            return self.own_always[name]
        optional = self.own_optional.get(name)
        if optional is not None and any(t.name == name for t in self.presentation().tools):
            return optional
        return None

    def _unknown_tool(self, name: str) -> str:
        message = f"Unknown tool '{name}'."
        # A server being retried in the background ("starting") still counts as not serving.
        down = [
            s for s in self.pool.servers.values() if s.state != "ready" and (s.failure or s.state in ("failed", "down"))
        ]
        if down:
            message += " Servers not serving: " + "; ".join(
                f"{s.name} ({(s.failure or s.state).splitlines()[0]})" for s in down
            )
        starting = [s.name for s in self.pool.servers.values() if s.state in ("new", "starting") and not s.failure]
        if starting:
            message += " Still starting (their tools join when ready): " + ", ".join(starting) + "."
        return message

    async def _call_own(
        self, own: OwnTool, arguments: dict[str, Any], session_id: str, owner: str | None = None
    ) -> types.CallToolResult:
        if own.tool.name in ALWAYS_LISTED and self.session_scoped and is_anonymous(session_id):
            return error_result(refusal(own.tool.name))
        if own.tool.name not in ALWAYS_LISTED:
            # Tool search and invoke read the catalog: servers still starting get the first-listing bound.
            await self.settle()
        env = ToolEnv(
            settings=self.settings,
            ledger=self.ledger,
            session_id=session_id,
            session=self.memory(session_id),
            forward=lambda tool, args: self.forward(tool, args, session_id=session_id, owner=owner),
            catalog=self.catalog,
            owner=owner,
        )
        try:
            result = await own.handle(arguments, env)
        except Exception as err:
            logger.exception("own tool %s failed", own.tool.name)
            result = error_result(f"{own.tool.name} failed inside offload-mcp: {type(err).__name__}: {err}")
        if self.metrics is not None:
            if own.tool.name == "recall_tool_result":
                self.metrics.observe_recall(not result.is_error)
            elif own.tool.name == "context_guru_expand":
                self.metrics.observe_expand(not result.is_error, "tool")
        return result

    async def forward(
        self, name: str, arguments: dict[str, Any], *, session_id: str, owner: str | None = None
    ) -> types.CallToolResult:
        """Call a downstream tool by its catalog name through the same shaping as a direct call."""
        entry = self.catalog.lookup(name)
        if entry is None:
            return error_result(self._unknown_tool(name))
        return await self._call_downstream(entry, arguments, session_id=session_id, owner=owner)

    async def _call_downstream(
        self,
        entry: CatalogEntry,
        arguments: dict[str, Any],
        *,
        session_id: str,
        meta: Mapping[str, Any] | None = None,
        ctx: ServerRequestContext[Any, Any] | None = None,
        upstream: Upstream | None = None,
        progress: Any = None,
        owner: str | None = None,
    ) -> types.CallToolResult:
        server = self.pool.servers[entry.server]
        if progress is None and ctx is not None and ctx.meta and ctx.meta.get("progress_token") is not None:
            session = ctx.session

            async def pass_progress(value: float, total: float | None, message: str | None) -> None:
                await session.report_progress(value, total, message)

            progress = pass_progress

        if upstream is None and ctx is not None:
            upstream = SessionUpstream(ctx.session, ctx.request_id)
        started = time.perf_counter()
        if upstream is None:
            result = await server.call_tool(entry.downstream_name, arguments, strip_meta(meta), progress)
        else:
            # While it runs, the server's requests to its client belong to this call's client (relay/router.py).
            with self.pool.relay.in_flight(entry.server, upstream):
                await self.pool.prime_roots(entry.server, upstream.capabilities)
                result = await server.call_tool(entry.downstream_name, arguments, strip_meta(meta), progress)
        if entry.output_schema is not None and not result.is_error:
            problem = self._schema_problem(entry, result)
            if problem is not None:
                result = _schema_error(entry, result, problem)
                self._observe(entry, started, None, result, None, arguments)
                return result
        if self.session_scoped and is_anonymous(session_id):
            # No identity to own a body: hand out no id this caller could never read back.
            if self.metrics is not None:
                self.metrics.observe_passthrough_failure(NO_IDENTITY_REASON)
            self._observe(entry, started, None, result, None, arguments)
            return result
        call = CallInfo(
            server=entry.server,
            tool=entry.name,
            downstream_tool=entry.downstream_name,
            arguments=arguments,
            session_id=session_id,
            output_schema=entry.output_schema,
            owner=owner,
        )
        shape_started = time.perf_counter()
        report: DecisionEvent | None = None
        try:
            shaped, report = await anyio.to_thread.run_sync(self.shaper.shape_with_report, call, result)
        except Exception:
            # Never lose a result to a shaping fault: the client gets it as the server sent it.
            logger.exception("shaping %s failed; forwarding the result unmodified", entry.name)
            if self.metrics is not None:
                self.metrics.observe_passthrough_failure("shaper_error")
            shaped = result
        self._observe(entry, started, report, shaped, time.perf_counter() - shape_started, arguments)
        return shaped

    def _observe(
        self,
        entry: CatalogEntry,
        started: float,
        report: DecisionEvent | None,
        result: types.CallToolResult,
        shape_s: float | None,
        arguments: dict[str, Any],
    ) -> None:
        if self.metrics is None:
            return
        duration_s = time.perf_counter() - started

        async def record() -> None:
            # After the answer is on its way: metrics and the call's log line never delay the client.
            self._record(entry, duration_s, report, result, shape_s, arguments)

        if not self.pool.spawn(record):
            self._record(entry, duration_s, report, result, shape_s, arguments)

    def _record(
        self,
        entry: CatalogEntry,
        duration_s: float,
        report: DecisionEvent | None,
        result: types.CallToolResult,
        shape_s: float | None,
        arguments: dict[str, Any],
    ) -> None:
        assert self.metrics is not None
        try:
            self.metrics.observe_report(
                server=entry.server,
                tool=entry.name,
                duration_s=duration_s,
                report=report,
                is_error=result.is_error,
                shape_s=shape_s,
                arguments=arguments,
            )
        except Exception:
            logger.debug("metrics observation failed", exc_info=True)

    def _schema_problem(self, entry: CatalogEntry, result: types.CallToolResult) -> str | None:
        if result.structured_content is None:
            return "it declares an outputSchema but returned no structuredContent"
        validator = self._validators.get(entry.name)
        if validator is None:
            from jsonschema.validators import validator_for

            try:
                cls = validator_for(entry.output_schema)
                validator = cls(entry.output_schema)
            except Exception as err:
                return f"its outputSchema is not a valid JSON Schema ({err})"
            self._validators[entry.name] = validator
        try:
            from jsonschema import exceptions as jexc

            error = jexc.best_match(validator.iter_errors(result.structured_content))
        except Exception as err:
            return f"its outputSchema could not be applied ({err})"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"structuredContent does not match its outputSchema at {where}: {error.message}"

    # ---- resources and prompts: server/routing.py ---------------------------

    async def read_resource(self, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        await self.settle()
        return await self.routing.read_resource(params)

    async def get_prompt(self, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        await self.settle()
        return await self.routing.get_prompt(params)

    async def subscribe(
        self, method: str, params: types.SubscribeRequestParams | types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        await self.settle()
        return await self.routing.subscribe(method, params)

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        await self.settle()
        return await self.routing.complete(params)

    def list_prompts(self) -> list[types.Prompt]:
        return self.routing.list_prompts()

    def list_resources(self) -> list[types.Resource]:
        return self.routing.list_resources()

    def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return self.routing.list_resource_templates()


def _make_metrics(settings: OffloadSettings) -> ProxyMetrics:
    return ProxyMetrics(chars_per_token=settings.policy.chars_per_token, log_bodies=settings.server.log_bodies)


def _schema_error(entry: CatalogEntry, result: types.CallToolResult, problem: str) -> types.CallToolResult:
    note = types.TextContent(
        text=f"[offload-mcp] '{entry.downstream_name}' on server '{entry.server}' returned a result its own schema rejects: "
        f"{problem}. The result is passed on unchanged below, marked as an error so clients do not reject it."
    )
    return types.CallToolResult(
        content=[note, *result.content],
        structured_content=result.structured_content,
        is_error=True,
        _meta=result.meta,
    )


def _asks_relay(ctx: ServerRequestContext[Any, Any]) -> bool:
    """The client declared something a server may ask it for (sampling, elicitation, roots)."""
    caps = getattr(ctx.session, "client_capabilities", None)
    return caps is not None and (caps.sampling is not None or caps.elicitation is not None or caps.roots is not None)


def build_server(state: ProxyState) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await state.wait_for_first_listing()
        state.pool.retry_failed()
        presentation = state.presentation()
        status = state.status_tool()
        listed = [*presentation.tools, status] if status is not None else presentation.tools
        try:
            tools, next_cursor = page(
                listed,
                params.cursor if params else None,
                state.settings.catalog.list_page_bytes,
                presentation.wire_extras,
            )
        except BadCursor as err:
            raise MCPError(code=types.INVALID_PARAMS, message=str(err)) from None
        return types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.request_state is not None and params.request_state.startswith(TOKEN_PREFIX):
            return await call_in_rounds(state, ctx, params)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and connection.protocol_version in MODERN_PROTOCOL_VERSIONS and _asks_relay(ctx):
            return await call_in_rounds(state, ctx, params)
        session_id = state.session_id(ctx)
        return await state.call_tool(
            params.name,
            dict(params.arguments or {}),
            session_id=session_id,
            meta=params.meta,
            ctx=ctx,
            owner=state.owner(ctx, session_id),
        )

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        await state.settle()
        return types.ListResourcesResult(resources=state.list_resources())

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=state.list_resource_templates())

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await state.read_resource(params)

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        await state.settle()
        return types.ListPromptsResult(prompts=state.list_prompts())

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await state.get_prompt(params)

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        return await state.subscribe("resources/subscribe", params)

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        return await state.subscribe("resources/unsubscribe", params)

    async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        return await state.complete(params)

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        # Applied to every server now and to each one that starts later.
        await state.pool.set_log_level(params.level)
        return types.EmptyResult()

    async def roots_list_changed(ctx: Any, params: types.NotificationParams | None) -> None:
        await state.pool.roots_changed()

    server: Server[Any] = Server(
        "offload-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_completion=complete,
        on_subscriptions_listen=ForwardingListenHandler(ListenHandler(state.bus), state.subscribe),
    )
    # Registered directly rather than as on_set_logging_level=/on_roots_list_changed=, which warn that the
    # 2026 era deprecates them: handshake-era clients still send both, and they must reach the servers.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, roots_list_changed)

    async def splice_wire_extras(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        state.remember_session(ctx)
        await state.meet_client(ctx)
        if ctx.method != "tools/list":
            return await call_next(ctx)
        await state.wait_for_first_listing()  # before the listing is computed: it must include who joined
        session_id = state.session_id(ctx)
        presentation = state.presentation(None if is_anonymous(session_id) else session_id)
        token = _presentation.set(presentation)
        try:
            result = await call_next(ctx)
        finally:
            _presentation.reset(token)
        if presentation.wire_extras and isinstance(result, dict):
            for tool in result.get("tools", []):
                extra = presentation.wire_extras.get(tool.get("name"))
                if extra:
                    tool.update(extra)
        return result

    server.middleware.append(splice_wire_extras)
    return server


def initialization_options(server: Server[Any]) -> Any:
    return server.create_initialization_options(
        NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True)
    )
