"""tools/call for a 2026-era client that may be asked something: the call runs parked (see parked.py).

First round: the downstream call starts in the pool's process-lifetime task
group with the `ParkedCall` as its upstream, and the round answers with the
result or the server's first questions. Later rounds (carrying our
`requestState`) deliver the client's answers and wait again. Own tools and
unknown names take the ordinary path: they never ask the client anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

import anyio
import mcp_types as types

from ..catalog.catalog import CatalogEntry
from ..downstream.settings import DownstreamSettings
from ..tools.registry import error_result
from ..upstream.identity import client_name
from .parked import ParkedCall, Parking
from .router import Upstream

logger = logging.getLogger(__name__)

UNKNOWN_ROUND = (
    "offload-mcp no longer holds the call this input_required answer belongs to (it finished, timed out, "
    "or ran on another offload-mcp process); call the tool again."
)


class _Identities(Protocol):
    def session_id(self, ctx: Any) -> str: ...

    def owner(self, ctx: Any, session_id: str) -> str: ...


class _Lookup(Protocol):
    def lookup(self, name: str) -> CatalogEntry | None: ...


class _Calls(Protocol):
    def own_tool(self, name: str) -> object | None: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        session_id: str,
        meta: Mapping[str, Any] | None = ...,
        ctx: Any = ...,
        owner: str | None = ...,
    ) -> types.CallToolResult: ...

    async def call_downstream(
        self,
        entry: CatalogEntry,
        arguments: dict[str, Any],
        *,
        session_id: str,
        meta: Mapping[str, Any] | None = ...,
        upstream: Upstream | None = ...,
        progress: Any = ...,
        owner: str | None = ...,
        client: str | None = ...,
    ) -> types.CallToolResult: ...


class _Spawner(Protocol):
    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool: ...


class _Settings(Protocol):
    @property
    def downstream(self) -> DownstreamSettings: ...


class RoundsHost(Protocol):
    """What a call in rounds needs from the proxy (upstream/proxy.py's ProxyState is one), and nothing more."""

    @property
    def settings(self) -> _Settings: ...
    @property
    def parking(self) -> Parking: ...
    @property
    def sessions_seen(self) -> set[str]: ...
    @property
    def upstream(self) -> _Identities: ...
    @property
    def catalog(self) -> _Lookup: ...
    @property
    def dispatch(self) -> _Calls: ...
    @property
    def pool(self) -> _Spawner: ...


async def call_in_rounds(
    state: RoundsHost, ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    if params.request_state is not None:
        parked = state.parking.get(params.request_state)
        if parked is None:
            return error_result(UNKNOWN_ROUND)
        parked.session = ctx.session
        unknown = parked.deliver(params.input_responses)
        if unknown:
            logger.info(
                "input responses nobody waits for (answered already or timed out): %s", ", ".join(sorted(unknown))
            )
        return await _next_round(state, parked)

    arguments = dict(params.arguments or {})
    session_id = state.upstream.session_id(ctx)
    owner = state.upstream.owner(ctx, session_id)
    entry = state.catalog.lookup(params.name)
    if entry is None or state.dispatch.own_tool(params.name) is not None:
        return await state.dispatch.call_tool(
            params.name, arguments, session_id=session_id, meta=params.meta, ctx=ctx, owner=owner
        )

    parked = ParkedCall(ctx.session.client_capabilities, ctx.session)
    client = client_name(ctx)
    progress = None
    if ctx.meta and ctx.meta.get("progress_token") is not None:

        async def report(value: float, total: float | None, message: str | None) -> None:
            # Progress rides the stream of the round in progress.
            if parked.session is not None:
                await parked.session.report_progress(value, total, message)

        progress = report

    async def run() -> None:
        try:
            result = await state.dispatch.call_downstream(
                entry,
                arguments,
                session_id=session_id,
                meta=params.meta,
                upstream=parked,
                progress=progress,
                owner=owner,
                client=client,
            )
        except Exception as err:
            logger.exception("parked call to %s failed", entry.name)
            result = error_result(
                f"offload-mcp could not complete the call to '{entry.name}': {type(err).__name__}: {err}"
            )
        parked.finish(result)
        # A client that never comes back for the result (it gave up) must not pin the call forever.
        with anyio.move_on_after(state.settings.downstream.call_timeout_s):
            await parked.claimed.wait()
        state.parking.release(parked)

    state.sessions_seen.add(session_id)
    state.parking.park(parked)
    if not state.pool.spawn(run):
        state.parking.release(parked)
        return await state.dispatch.call_tool(
            params.name, arguments, session_id=session_id, meta=params.meta, ctx=ctx, owner=owner
        )
    return await _next_round(state, parked)


async def _next_round(state: RoundsHost, parked: ParkedCall) -> types.CallToolResult | types.InputRequiredResult:
    outcome = await parked.next_round()
    if isinstance(outcome, types.CallToolResult):
        state.parking.release(parked)
    return outcome
