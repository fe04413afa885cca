"""The tool list a client sees, kept in step with the wrapped servers.

How it works: `CatalogView` builds the catalog (catalog/catalog.py) from the
tools every ready server lists plus the proxy's own tools, and rebuilds it
when the pool reports a change (`downstream_changed`: a server joined,
restarted, or announced a new tool or prompt list), then has the upstream
sessions told (`ListChanges`, upstream/sessions.py). `presentation()` is what
tools/list shows under the catalog mode (catalog/presentation.py); while a
tools/list request is being answered, `presenting(...)` pins that request's
presentation so the handler and the wire splice agree.

Start-up: the first tools/list waits, up to `downstream.first_list_wait_s`,
for servers still starting (`wait_for_first_listing`); requests that need the
servers (resources, prompts, tool search) wait the same bound (`settle`).
While no wrapped server serves, `status_tool()` is an extra tool entry
naming why, so a broken setup shows in the tool list.

Inert parts: with every server ready there is no status tool; later
listings never wait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

import mcp_types as types

from ..catalog.catalog import Catalog, build_catalog
from ..catalog.presentation import Presentation, present
from ..config import OffloadSettings
from ..downstream.changes import DownstreamChange, Joined, ListChanged, ListKind, ResourceUpdated, Restarted
from ..downstream.pool import DownstreamPool
from ..store import Ledger
from ..tools.registry import OwnTool
from .metrics import ProxyMetrics
from .routing import ResourcePromptRouter

STATUS_TOOL = "offload_mcp_status"
"""Listed only while no wrapped server is serving, so a broken setup is visible in the tool list."""

_presentation: ContextVar[Presentation | None] = ContextVar("offload_presentation", default=None)


class ListChanges(Protocol):
    """Who hears that a list changed downstream (upstream/sessions.py)."""

    async def notify_upstream(self, kind: ListKind) -> None: ...

    async def notify_resource_updated(self, uri: str) -> None: ...


class CatalogView:
    """The catalog, its presentation on tools/list, and the start-up waits around it."""

    def __init__(
        self,
        pool: DownstreamPool,
        settings: OffloadSettings,
        *,
        own_always: dict[str, OwnTool],
        own_optional: dict[str, OwnTool],
        routing: ResourcePromptRouter,
        process_session: str,
        ledger: Callable[[], Ledger | None] = lambda: None,
        metrics: ProxyMetrics | None = None,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.own_always = own_always
        self.own_optional = own_optional
        self.routing = routing
        self.metrics = metrics
        self._ledger = ledger
        self._process_session = process_session
        self.catalog: Catalog = Catalog([])
        self._first_list_waited = False
        self.rebuild(strict=True)

    def rebuild(self, *, strict: bool = False) -> None:
        server_tools = {s.name: s.tools for s in self.pool.servers.values() if s.tools}
        reserved = list(self.own_always) + list(self.own_optional)
        self.catalog = build_catalog(server_tools, self.settings.catalog, reserved, strict=strict)
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
            ledger=self._ledger(),
            session_id=session_id or self._process_session,
            offload=self.settings,
        )

    @contextmanager
    def presenting(self, presentation: Presentation) -> Iterator[None]:
        """While one tools/list is answered, every `presentation()` is this one."""
        token = _presentation.set(presentation)
        try:
            yield
        finally:
            _presentation.reset(token)

    async def downstream_changed(self, server: str, change: DownstreamChange, changes: ListChanges) -> None:
        if isinstance(change, ResourceUpdated):
            await changes.notify_resource_updated(change.uri)
            return
        if isinstance(change, Restarted):
            if self.metrics is not None:
                self.metrics.observe_restart(server)
            change = ListChanged("tools")
        if isinstance(change, Joined):
            # A server that finished starting after the proxy was serving: every list may have grown.
            self.rebuild()
            joined = self.pool.servers.get(server)
            caps = joined.capabilities if joined is not None else None
            await changes.notify_upstream("tools")
            if caps is not None and caps.resources is not None:
                await changes.notify_upstream("resources")
            if caps is not None and caps.prompts is not None:
                await changes.notify_upstream("prompts")
            return
        if change.kind in ("tools", "prompts"):
            self.rebuild()
        await changes.notify_upstream(change.kind)

    def follow(self, changes: ListChanges) -> None:
        """Rebuild on every change the pool reports, and pass it on to `changes`."""

        async def changed(server: str, change: DownstreamChange) -> None:
            await self.downstream_changed(server, change, changes)

        self.pool.on_change(changed)

    async def wait_for_first_listing(self) -> None:
        """The first tools/list waits (bounded by `downstream.first_list_wait_s`) for servers still
        starting, so a client that lists once sees them; initialize never waits, later lists never do."""
        if self._first_list_waited:
            return
        self._first_list_waited = True
        await self.settle()

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
