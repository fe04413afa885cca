"""tools/call: from a tool name to the result the client gets.

How it works: `call_tool` looks the name up. The proxy's own tools (recall,
expand, tool search and invoke) run in-process with a `ToolEnv` and are never
shaped. A downstream tool is called on its server (`call_downstream`):
arguments as given, `_meta` without `progressToken` and
`io.modelcontextprotocol/*`, progress relayed, cancellation propagated by the
handler's cancel scope, and the server's requests to its client routed to
this call's client while it runs (relay/router.py). A result is checked
against the tool's `outputSchema` (a mismatch is marked as an error with a
note saying what does not match, then shaped like any other result, so a
large one is bounded too; a large structuredContent is checked in a worker
thread), then shaped: a small result that needs no ledger commit
on the event loop (`ResultShaper.shape_without_blocking`, cheaper than a thread
hop), any other in a worker thread (`shape_with_report`). Metrics and the call's
log line are recorded in line (a few microseconds; the line is formatted
only when it is logged): a task per call to defer them cost more, and ran before
the answer was written all the same.

A name that is not (yet) in the catalog while servers are still starting
waits the first-listing bound; an unknown name gets an error naming the
servers that are not serving. Inert parts: without metrics nothing is
observed; under `ledger.scope: session` a caller without a session identity
gets results unshaped (reason `no_session_identity`) and recall/expand refuse.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext

from ..catalog.catalog import Catalog, CatalogEntry
from ..catalog.deferral import MAX_RESULT_SIZE
from ..config import OffloadSettings
from ..downstream.budget import Held
from ..downstream.pool import DownstreamPool
from ..record import DecisionEvent
from ..relay.parked import Parking
from ..relay.router import Upstream
from ..session import SessionMemory, is_anonymous
from ..shaping import CallInfo, ResultShaper
from ..store import Ledger
from ..tools.echo import echoed
from ..tools.names import ALWAYS_LISTED, EXPAND, RECALL
from ..tools.registry import OwnTool, ToolEnv, error_result
from .catalog_view import STATUS_TOOL, CatalogView
from .identity import NO_IDENTITY_REASON, client_name, refusal
from .metrics import ProxyMetrics
from .routing import strip_meta
from .sessions import UpstreamSessions

logger = logging.getLogger(__name__)


class CallDispatcher:
    """Runs one tools/call: own tool or downstream call, schema check, shaping, metrics."""

    def __init__(
        self,
        pool: DownstreamPool,
        settings: OffloadSettings,
        view: CatalogView,
        sessions: UpstreamSessions,
        shaper: ResultShaper,
        *,
        metrics: ProxyMetrics | None = None,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.view = view
        self.sessions = sessions
        self.shaper = shaper
        self.metrics = metrics
        self.parking = Parking()
        """2026-era calls waiting for their client's answers between input_required rounds (relay/rounds.py)."""
        self.sessions_seen: set[str] = set()
        """Sessions that made a tool call in this process (serve's exit summary reads their ledger events)."""
        self._validators: dict[str, Any] = {}
        self._validated: Catalog | None = None
        """The catalog `_validators` were built for: a rebuilt catalog may carry other schemas under the same names."""

    @property
    def ledger(self) -> Ledger | None:
        return self.shaper.ledger

    @property
    def session_scoped(self) -> bool:
        return self.settings.ledger.scope == "session"

    def memory(self, session_id: str) -> SessionMemory:
        return self.shaper.session_memory(session_id)

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
        client = client_name(ctx)
        own = self.own_tool(name)
        if own is not None:
            return await self.call_own(own, arguments, session_id, owner, client=client)
        if name == STATUS_TOOL and self.view.catalog.lookup(name) is None:
            # Listed only while no server serves, but callable any time: it names every server that is down.
            down = self.view.not_serving()
            return error_result(f"offload-mcp: {down}" if down else "offload-mcp: every wrapped server is serving.")
        entry = self.view.catalog.lookup(name)
        if entry is None and not self.pool.settled.is_set():
            # Called before listing, while servers start: the tool may be theirs; wait as a first listing would.
            await self.pool.wait_settled(self.settings.downstream.first_list_wait_s)
            entry = self.view.catalog.lookup(name)
        if entry is None:
            return error_result(self.unknown_tool(name))
        return await self.call_downstream(
            entry, arguments, session_id=session_id, meta=meta, ctx=ctx, owner=owner, client=client
        )

    def own_tool(self, name: str) -> OwnTool | None:
        if name in self.view.own_always:
            return self.view.own_always[name]
        optional = self.view.own_optional.get(name)
        if optional is not None and any(t.name == name for t in self.view.presentation().tools):
            return optional
        return None

    def unknown_tool(self, name: str) -> str:
        message = f"Unknown tool '{echoed(name)}'."
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

    async def call_own(
        self,
        own: OwnTool,
        arguments: dict[str, Any],
        session_id: str,
        owner: str | None = None,
        *,
        client: str | None = None,
    ) -> types.CallToolResult:
        if own.tool.name in ALWAYS_LISTED and self.session_scoped and is_anonymous(session_id):
            return error_result(refusal(own.tool.name))
        if own.tool.name not in ALWAYS_LISTED:
            # Tool search and invoke read the catalog: servers still starting get the first-listing bound.
            await self.view.settle()
        env = ToolEnv(
            settings=self.settings,
            ledger=self.ledger,
            session_id=session_id,
            session=self.memory(session_id),
            forward=lambda tool, args: self.forward(tool, args, session_id=session_id, owner=owner, client=client),
            catalog=self.view.catalog,
            owner=owner,
            ledger_problem=self.shaper.ledger_problem,
        )
        try:
            result = await own.handle(arguments, env)
        except Exception as err:
            logger.exception("own tool %s failed", own.tool.name)
            result = error_result(f"{own.tool.name} failed inside offload-mcp: {type(err).__name__}: {err}")
        if self.metrics is not None:
            if own.tool.name == RECALL:
                self.metrics.observe_recall(not result.is_error)
            elif own.tool.name == EXPAND:
                self.metrics.observe_expand(not result.is_error, "tool")
        return result

    async def forward(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        session_id: str,
        owner: str | None = None,
        client: str | None = None,
    ) -> types.CallToolResult:
        """Call a downstream tool by its catalog name through the same shaping as a direct call."""
        entry = self.view.catalog.lookup(name)
        if entry is None:
            return error_result(self.unknown_tool(name))
        return await self.call_downstream(entry, arguments, session_id=session_id, owner=owner, client=client)

    async def call_downstream(
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
        client: str | None = None,
    ) -> types.CallToolResult:
        """Call `entry` on its server, check the result against its outputSchema, shape it, observe it."""
        if client is None:
            client = client_name(ctx)
        # A large answer holds its share of the in-flight budget (downstream/budget.py) until it is shaped and
        # its body committed: then only the stub or the cut result is left of it.
        with Held() as held:
            started = time.perf_counter()
            result = await self._call_server(entry, arguments, meta, ctx, upstream, progress, held)
            result, violation = await self._check_schema(entry, result)
            if self.session_scoped and is_anonymous(session_id):
                return self._pass_unshaped(entry, started, result, arguments)
            call = _call_info(
                entry,
                arguments,
                session_id=session_id,
                owner=owner,
                client=client,
                schema_broken=violation is not None,
            )
            shape_started = time.perf_counter()
            shaped, report = await self._shape(call, result)
            if violation is not None and (not shaped.content or shaped.content[0] != violation):
                shaped = shaped.model_copy(update={"content": [violation, *shaped.content]})  # stubbed: say why too
            self._observe(entry, started, report, shaped, time.perf_counter() - shape_started, arguments)
            return shaped

    async def _call_server(
        self,
        entry: CatalogEntry,
        arguments: dict[str, Any],
        meta: Mapping[str, Any] | None,
        ctx: ServerRequestContext[Any, Any] | None,
        upstream: Upstream | None,
        progress: Any,
        held: Held,
    ) -> types.CallToolResult:
        """The server's result, with progress relayed and its requests to a client routed to this call's."""
        server = self.pool.servers[entry.server]
        if progress is None:
            progress = _progress_relay(ctx)
        if upstream is None and ctx is not None:
            upstream = self.sessions.for_call(ctx)
        if upstream is None:
            return await server.call_tool(entry.downstream_name, arguments, strip_meta(meta), progress, held)
        # While it runs, the server's requests to its client belong to this call's client (relay/router.py).
        with self.pool.relay.in_flight(entry.server, upstream):
            await self.pool.prime_roots(entry.server, upstream.capabilities)
            return await server.call_tool(entry.downstream_name, arguments, strip_meta(meta), progress, held)

    async def _check_schema(
        self, entry: CatalogEntry, result: types.CallToolResult
    ) -> tuple[types.CallToolResult, types.TextContent | None]:
        """The result, marked as an error with a note when it breaks the tool's outputSchema; and that note."""
        if entry.output_schema is None or result.is_error:
            return result, None
        if _many_nodes(result.structured_content):
            problem = await anyio.to_thread.run_sync(self._schema_problem, entry, result)
        else:
            problem = self._schema_problem(entry, result)
        if problem is None:
            return result, None
        # Shaped like any other result after this (a 4 MB one passed whole and broke the client's stream),
        # as an error, which clients do not check against the schema.
        violation = _schema_note(entry, problem)
        return _schema_error(result, violation), violation

    def _pass_unshaped(
        self, entry: CatalogEntry, started: float, result: types.CallToolResult, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        """No identity to own a body: hand out no id this caller could never read back."""
        if self.metrics is not None:
            self.metrics.observe_passthrough_failure(NO_IDENTITY_REASON)
        self._observe(entry, started, None, result, None, arguments)
        return result

    async def _shape(
        self, call: CallInfo, result: types.CallToolResult
    ) -> tuple[types.CallToolResult, DecisionEvent | None]:
        """The shaped result and its decision; on a shaping fault the result as the server sent it."""
        try:
            # A small kept result is shaped right here: cheaper than the worker-thread hop (shaping.INLINE_MAX_CHARS).
            inline = self.shaper.shape_without_blocking(call, result)
            if inline is not None:
                return inline
            return await anyio.to_thread.run_sync(self.shaper.shape_with_report, call, result)
        except Exception:
            # Never lose a result to a shaping fault: the client gets it as the server sent it.
            logger.exception("shaping %s failed; forwarding the result unmodified", call.tool)
            if self.metrics is not None:
                self.metrics.observe_passthrough_failure("shaper_error")
            return result, None

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
        self._record(entry, time.perf_counter() - started, report, result, shape_s, arguments)

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
                quiet=True,
            )
        except Exception:
            logger.debug("metrics observation failed", exc_info=True)

    def _schema_problem(self, entry: CatalogEntry, result: types.CallToolResult) -> str | None:
        if result.structured_content is None:
            return "it declares an outputSchema but returned no structuredContent"
        if self._validated is not self.view.catalog:
            self._validators.clear()
            self._validated = self.view.catalog
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


_SCHEMA_ON_LOOP_NODES = 256
"""A structuredContent of more JSON values than this is checked against its outputSchema in a worker
thread: jsonschema's time grows with the values it reads, and on the event loop every other call would
wait that long; a result this small costs less than the hop to a thread (docs/design.md, "Checks and
reads off the event loop")."""


def _many_nodes(value: Any) -> bool:
    """Whether `value` holds more than _SCHEMA_ON_LOOP_NODES JSON values, told by a walk that stops there."""
    stack, seen = [value], 0
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        seen += len(children)
        if seen > _SCHEMA_ON_LOOP_NODES:
            return True
        stack.extend(children)
    return False


SCHEMA_PROBLEM_CHARS = 500
"""jsonschema's message quotes the offending value whole (a 4 MB string, in the note): cut to this."""


def _schema_note(entry: CatalogEntry, problem: str) -> types.TextContent:
    if len(problem) > SCHEMA_PROBLEM_CHARS:
        problem = problem[:SCHEMA_PROBLEM_CHARS] + f"... ({len(problem) - SCHEMA_PROBLEM_CHARS:,} characters cut)"
    return types.TextContent(
        text=f"[offload-mcp] '{entry.downstream_name}' on server '{entry.server}' returned a result its own schema rejects: "
        f"{problem}. The result follows, shaped like any other and marked as an error so clients do not reject it."
    )


def _schema_error(result: types.CallToolResult, note: types.TextContent) -> types.CallToolResult:
    return types.CallToolResult(
        content=[note, *result.content],
        structured_content=result.structured_content,
        is_error=True,
        _meta=result.meta,
    )


def _progress_relay(ctx: ServerRequestContext[Any, Any] | None) -> Any:
    """A progress callback passing the server's progress to the client that asked for it, or None."""
    if ctx is None or not ctx.meta or ctx.meta.get("progress_token") is None:
        return None
    session = ctx.session

    async def pass_progress(value: float, total: float | None, message: str | None) -> None:
        await session.report_progress(value, total, message)

    return pass_progress


def _call_info(
    entry: CatalogEntry,
    arguments: dict[str, Any],
    *,
    session_id: str,
    owner: str | None,
    client: str | None,
    schema_broken: bool,
) -> CallInfo:
    """What the shaper knows of the call; a result that broke its schema is not read against it."""
    return CallInfo(
        server=entry.server,
        tool=entry.name,
        downstream_tool=entry.downstream_name,
        arguments=arguments,
        session_id=session_id,
        output_schema=None if schema_broken else entry.output_schema,
        owner=owner,
        structured_from_json=True,
        client=client,
        declared_by_tool=_declared_max_chars(entry),
    )


def _declared_max_chars(entry: CatalogEntry) -> int | None:
    """The `anthropic/maxResultSizeChars` a downstream tool declares itself (what Claude Code alone honours)."""
    value = (entry.tool.meta or {}).get(MAX_RESULT_SIZE)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
