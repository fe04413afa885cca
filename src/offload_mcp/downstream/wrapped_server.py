"""One wrapped server: start it, keep its listings, call it, notice when it dies, restart it.

A `DownstreamServer` owns one MCP client session (stdio, SSE or streamable
HTTP) run by a background task in the pool's task group, so the session
outlives any one upstream connection. Its life:

- start: connect + initialize + list tools/resources/prompts (following
  pagination), all inside `startup_timeout_s`. Failure is kept as a sentence
  naming the server, its command and its stderr tail.
- call: `send_request(tools/call)` directly rather than `ClientSession.call_tool`,
  because `call_tool` re-validates `structuredContent` against the tool's
  outputSchema (a result that fails its own schema would become an exception
  instead of reaching the client) and silently issues `tools/list` for a
  tool it has not listed. The result is forwarded as the server sent it.
- death: a stdio child whose stdout closes, or a connection that drops
  mid-call, marks the server down; the call in flight gets an isError result
  saying how it ended (exit code / signal, stderr tail). The next call
  restarts it after a backoff (`restart_backoff_s`, doubling to
  `restart_backoff_max_s`; reset by a successful call).
- timeout: past `call_timeout_s` the SDK sends `notifications/cancelled`
  downstream and the caller gets an isError result.
"""

from __future__ import annotations

import logging
import math
import shlex
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ..redaction import redact_secrets
from ..relay.capabilities import DeclaringClientSession
from ..relay.roots import WatchedReadStream, is_roots_request
from ..relay.router import Relay
from .aside import LOST, StructuredAside
from .budget import META_KEY as BUDGET_META_KEY
from .budget import Held, InflightBudget
from .changes import DownstreamChange, ListChanged, ListKind, ResourceUpdated, Restarted
from .settings import DownstreamSettings, RemoteServer, ServerEntry, StdioServer
from .settle import settle
from .spawn import EarlyStarts
from .stdio import UNUSABLE_ANSWER, ProcessRecord, stdio_transport

logger = logging.getLogger(__name__)

MAX_LIST_PAGES = 1000
"""A paginator that never ends cannot hang start-up."""

ChangeCallback = Callable[["DownstreamServer", DownstreamChange], Awaitable[None]]
"""Called with (server, kind) when a listing changed: kind is tools, resources or prompts."""


class DownstreamDown(Exception):
    """The server is not running and could not be (re)started; the message says why."""


def describe_command(entry: ServerEntry) -> str:
    if isinstance(entry, StdioServer):
        return shlex.join([entry.command, *entry.args])
    return f"{entry.kind} {entry.url}"


def _spawn_failure(entry: StdioServer, err: OSError) -> str:
    """What could not be used: the working directory (the error names it) or the command."""
    if entry.cwd is not None and err.filename == entry.cwd:
        if isinstance(err, FileNotFoundError):
            return f"working directory not found: {entry.cwd}"
        if isinstance(err, NotADirectoryError):
            return f"working directory is not a directory: {entry.cwd}"
        return f"working directory not accessible: {entry.cwd}"
    if isinstance(err, PermissionError):
        return f"command not executable: {entry.command}"
    first, _, rest = entry.command.partition(" ")
    if rest and shutil.which(first):  # no shell runs it: `npx -y pkg` is one program name
        return f"command not found: {entry.command} (no shell splits it: `command` {first!r}, the rest in `args`)"
    if entry.command.startswith("~"):
        return f"command not found: {entry.command} (no shell expands `~`: give the full path)"
    return f"command not found: {entry.command}"


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class DownstreamServer:
    def __init__(
        self,
        name: str,
        entry: ServerEntry,
        settings: DownstreamSettings,
        on_change: ChangeCallback | None = None,
        relay: Relay | None = None,
        early: EarlyStarts | None = None,
        budget: InflightBudget | None = None,
    ) -> None:
        self.name = name
        self.budget = budget or budget_for(settings)
        """The in-flight byte budget large answers are charged to (shared by a pool's servers)."""
        self.relay = relay
        self.early = early
        self.entry = entry
        self.settings = settings
        self.on_change = on_change
        self.state = "new"  # new | starting | ready | failed | down | stopped
        self.failure: str | None = None
        self.session: ClientSession | None = None
        self.server_info: types.Implementation | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self.tools: list[types.Tool] = []
        self.resources: list[types.Resource] = []
        self.resource_templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self.starts = 0
        self.record: ProcessRecord | None = None
        self._aside: StructuredAside | None = None
        self._stop = anyio.Event()
        self._down = anyio.Event()
        self._ended = anyio.Event()
        self._lock = anyio.Lock()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._backoff = settings.restart_backoff_s
        self._next_start_at = 0.0

    @property
    def command(self) -> str:
        return describe_command(self.entry)

    # ---- lifecycle -------------------------------------------------------

    async def start(self, task_group: anyio.abc.TaskGroup) -> bool:
        """Start the session in `task_group`; True when ready. Never raises for a server fault."""
        self._task_group = task_group
        self._stop = anyio.Event()
        self._down = anyio.Event()
        self._ended = anyio.Event()
        self.state = "starting"
        self.starts += 1
        await task_group.start(self._run)
        return self.state == "ready"

    async def stop(self) -> None:
        self._stop.set()

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        timeout = self.settings.startup_timeout_s
        try:
            # The deadline covers start-up only; it is lifted once the session is ready.
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as startup:
                async with AsyncExitStack() as stack:
                    try:
                        session = await self._connect(stack)
                        result = await session.initialize()
                        if self._aside is not None:
                            self._aside.enable_for(result.protocol_version)
                        self.server_info = result.server_info
                        self.capabilities = result.capabilities
                        await self._apply_log_level(session)
                        await self._refresh(session, "tools", "resources", "prompts")
                    except Exception as err:  # a server fault must never take the proxy down
                        await self._settle_exit()
                        self._fail(_explain(err))
                        return
                    startup.deadline = math.inf
                    self.session = session
                    self.state = "ready"
                    self.failure = None
                    logger.info("server %r ready: %d tools (%s)", self.name, len(self.tools), self.command)
                    task_status.started()
                    started = True
                    await self._wait_for_end()
            if startup.cancelled_caught and not started:
                self._fail(f"did not finish starting within {timeout:g}s")
        except Exception as err:
            logger.debug("server %r session ended with %r", self.name, err)
            if not started:
                self._fail(_explain(err))
        finally:
            self.session = None
            self._ended.set()
            if self.state == "ready":
                self.state = "stopped" if self._stop.is_set() else "down"
                if self.state == "down":
                    self.failure = self._how_it_ended()
                    logger.warning("server %r is down: %s", self.name, self.failure)
            if not started:
                task_status.started()

    async def _wait_for_end(self) -> None:
        async with anyio.create_task_group() as tg:

            async def watch(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(watch, self._stop)
            tg.start_soon(watch, self._down)
            if self.record is not None:
                tg.start_soon(watch, self.record.exited)

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        entry = self.entry
        self._aside = StructuredAside()  # one per session: its calls in flight and what they set aside
        if isinstance(entry, StdioServer):
            self.record = ProcessRecord(command=[entry.command, *entry.args])
            try:
                read, write = await stack.enter_async_context(
                    stdio_transport(
                        entry.command,
                        entry.args,
                        entry.env,
                        entry.cwd,
                        self.record,
                        self.name,
                        self.settings.max_result_bytes,
                        self._aside,
                        self.early,
                        self.budget,
                    )
                )
            except (FileNotFoundError, NotADirectoryError, PermissionError) as err:
                raise DownstreamDown(_spawn_failure(entry, err)) from None
        else:
            read, write = await stack.enter_async_context(
                _remote_transport(entry, self.settings.max_result_bytes, self.name, self._aside, self.budget)
            )
        write = self._aside.noting(write)  # the tools/call ids in flight, whichever transport carries them
        if self.relay is None:
            session = ClientSession(read, write, message_handler=self._on_message)
        else:
            await self.relay.first_declaration()  # so this session declares it at once (no reconnect)
            roots = self.relay.roots
            roots.reset(self.name)

            def count_roots_requests(item: object) -> None:
                if is_roots_request(item):
                    roots.asked(self.name)

            # Declares what the upstream clients declared; their requests are relayed (relay/router.py).
            session = DeclaringClientSession(
                WatchedReadStream(read, count_roots_requests),
                write,
                message_handler=self._on_message,
                declared=self.relay.declared,
                **self.relay.callbacks(self.name),
            )
        session = await stack.enter_async_context(session)
        return session

    async def _settle_exit(self) -> None:
        """Give a child that is exiting a moment to report its exit code."""
        if self.record is not None and not self.record.exited.is_set():
            with anyio.move_on_after(1.0):
                await self.record.exited.wait()

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self._next_start_at = max(self._next_start_at, anyio.current_time() + self._backoff)
        tail = self.record.stderr_tail() if self.record else ""
        ended = ""
        if self.record is not None and self.record.exited.is_set():
            ended = f"; the process {self.record.how_it_ended()}"
        self.failure = f"server '{self.name}' ({self.command}) failed to start: {reason}{ended}"
        if tail:
            self.failure += "\n  stderr tail:\n    " + tail.replace("\n", "\n    ")
        # Clients read it too (an unknown tool's error, a call to a server that is down): no secret in it.
        self.failure = redact_secrets(self.failure)
        logger.error("%s", self.failure)

    def _how_it_ended(self) -> str:
        if self.record is None:
            return "the connection closed"
        ended = self.record.how_it_ended() if self.record.exited.is_set() else "closed the connection"
        tail = self.record.stderr_tail()
        return f"the process {ended}" + (f"; stderr tail: {tail[-500:]}" if tail else "")

    async def _ensure_ready(self) -> ClientSession:
        """The live session, restarting a dead server after its backoff."""
        if self.state == "ready" and self.session is not None and not self._is_exiting():
            return self.session
        async with self._lock:
            if self.state == "ready" and self.session is not None and not self._is_exiting():
                return self.session
            if self._is_exiting():
                # Died between calls: let the runner finish its bookkeeping first.
                self._down.set()
                with anyio.move_on_after(2.0):
                    while self.state == "ready":
                        await anyio.sleep(0.01)
            if self._task_group is None or self.state == "stopped":
                raise DownstreamDown(f"server '{self.name}' is not running")
            wait = self._next_start_at - anyio.current_time()
            if wait > self.settings.call_timeout_s:
                # No countdown in the text: what the model sees carries no clock.
                raise DownstreamDown(
                    f"server '{self.name}' is down ({self.failure}); offload-mcp will try to restart it on a later call"
                )
            if wait > 0:
                await anyio.sleep(wait)
            previous = self.failure
            logger.info("restarting server %r (%s)", self.name, previous)
            ok = await self.start(self._task_group)
            self._next_start_at = anyio.current_time() + self._backoff
            self._backoff = min(max(self._backoff * 2, 0.05), self.settings.restart_backoff_max_s)
            if not ok or self.session is None:
                raise DownstreamDown(f"server '{self.name}' is down and could not be restarted: {self.failure}")
            await self._notify(Restarted())
            return self.session

    async def redeclare(self) -> bool:
        """Reconnect so the session declares the relay's current client capabilities; True when ready again.

        A session declares its client capabilities once, at initialize, so a
        changed declaration needs a new session. Calls waiting for the server
        wait for the new one; a server that is not running starts with the
        new declaration whenever it next starts.
        """
        async with self._lock:
            if self.state != "ready" or self._task_group is None:
                return False
            if self.relay is None or self.declares() == self.relay.declared:
                return True
            ended = self._ended
            self._stop.set()
            with anyio.move_on_after(self.settings.startup_timeout_s):
                await ended.wait()
            ok = await self.start(self._task_group)
        if ok:
            await self._notify(ListChanged("tools"))
        return ok

    def declares(self) -> types.ClientCapabilities | None:
        """What the live session declared to the server (None: no relay, or not connected)."""
        session = self.session
        return session.declared if isinstance(session, DeclaringClientSession) else None

    async def _apply_log_level(self, session: ClientSession) -> None:
        level = self.relay.log_level if self.relay is not None else None
        caps = session.server_capabilities
        if level is None or caps is None or caps.logging is None:
            return
        try:
            await session.send_request(
                types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),
                types.EmptyResult,
                request_read_timeout_seconds=self.settings.call_timeout_s,
            )
        except MCPError as err:
            logger.warning("server %r refused logging/setLevel %s: %s", self.name, level, err.error.message)

    async def set_log_level(self) -> None:
        """Apply the relay's log level to the live session (logging/setLevel from a client)."""
        if self.state == "ready" and self.session is not None:
            await self._apply_log_level(self.session)

    async def roots_changed(self) -> None:
        """Pass a client's notifications/roots/list_changed on (the server then asks roots/list again)."""
        declared = self.declares()
        if self.state == "ready" and self.session is not None and declared is not None and declared.roots is not None:
            try:
                await self.session.send_notification(types.RootsListChangedNotification())
            except Exception as err:
                logger.debug("server %r: roots/list_changed not delivered: %r", self.name, err)

    async def settle(self) -> str:
        """Wait until the server has digested what it was sent (downstream/settle.py); how that was established."""
        session = self.session
        if self.state != "ready" or session is None:
            return "not_ready"
        pid = self.record.pid if self.record is not None and isinstance(self.entry, StdioServer) else None
        return await settle(session, pid, self.settings.call_timeout_s)

    def due_for_retry(self) -> bool:
        """A server that failed to start, whose backoff has passed (retried in the background)."""
        return (
            self.state == "failed"
            and self._task_group is not None
            and not self._lock.locked()
            and anyio.current_time() >= self._next_start_at
        )

    async def retry(self) -> None:
        """Try a failed server again; on success the catalog is refreshed and clients are told."""
        async with self._lock:
            if self.state != "failed" or self._task_group is None:
                return
            ok = await self.start(self._task_group)
            self._next_start_at = anyio.current_time() + self._backoff
            self._backoff = min(max(self._backoff * 2, 0.05), self.settings.restart_backoff_max_s)
            if ok:
                logger.info("server %r started on retry", self.name)
                await self._notify(Restarted())

    def _is_exiting(self) -> bool:
        return (
            self.record is not None
            and self.record.exited.is_set()
            and self.entry is not None
            and isinstance(self.entry, StdioServer)
        )

    # ---- listings --------------------------------------------------------

    async def _refresh(self, session: ClientSession, *kinds: str) -> None:
        caps = session.server_capabilities
        for kind in kinds:
            if kind == "tools" and caps and caps.tools is not None:
                self.tools = await _all_pages(session.list_tools, "tools")
            elif kind == "resources" and caps and caps.resources is not None:
                self.resources = await _all_pages(session.list_resources, "resources")
                try:
                    self.resource_templates = await _all_pages(session.list_resource_templates, "resource_templates")
                except MCPError:
                    self.resource_templates = []
            elif kind == "prompts" and caps and caps.prompts is not None:
                self.prompts = await _all_pages(session.list_prompts, "prompts")

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            logger.debug("server %r transport reported %r", self.name, message)
            return
        kinds: dict[type[Any], ListKind] = {
            types.ToolListChangedNotification: "tools",
            types.ResourceListChangedNotification: "resources",
            types.PromptListChangedNotification: "prompts",
        }
        kind = kinds.get(type(message))
        if isinstance(message, types.ResourceUpdatedNotification) and self._task_group is not None:
            self._task_group.start_soon(self._notify, ResourceUpdated(str(message.params.uri)))
            return
        if kind is not None and self._task_group is not None:
            # Not awaited here: a listing request from inside the notification path could stall the reader.
            self._task_group.start_soon(self._refresh_and_notify, kind)
        elif (
            isinstance(message, types.ElicitCompleteNotification)
            and self.relay is not None
            and self._task_group is not None
        ):
            self._task_group.start_soon(self.relay.notify, self.name, message)
        elif isinstance(message, types.LoggingMessageNotification):
            logger.info("server %r log [%s]: %s", self.name, message.params.level, message.params.data)

    async def _refresh_and_notify(self, kind: ListKind) -> None:
        session = self.session
        if session is None:
            return
        try:
            await self._refresh(session, kind)
        except Exception as err:
            logger.warning("server %r: refreshing %s after list_changed failed: %s", self.name, kind, _explain(err))
            return
        await self._notify(ListChanged(kind))

    async def _notify(self, change: DownstreamChange) -> None:
        if self.on_change is not None:
            try:
                await self.on_change(self, change)
            except Exception:
                logger.exception("list_changed callback failed")

    # ---- requests --------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        meta: dict[str, Any] | None = None,
        progress_callback: ProgressFnT | None = None,
        held: Held | None = None,
    ) -> types.CallToolResult:
        """Forward one tools/call. Faults of the server become isError results; protocol errors re-raise.
        A large answer's share of the in-flight budget goes to `held` (the caller releases it once the result
        is shaped and stored); without `held` it is released here."""
        try:
            session = await self._ensure_ready()
        except DownstreamDown as err:
            return error_result(f"{err}")
        request = types.CallToolRequest(
            # RequestParamsMeta is an open TypedDict (extra_items=Any) that no dict[str, Any] can be typed as;
            # pydantic validates the keys when the params are built
            params=types.CallToolRequestParams(
                name=tool, arguments=arguments, _meta=cast("types.RequestParamsMeta | None", meta or None)
            )
        )
        timeout = self.settings.call_timeout_s
        try:
            result = await session.send_request(
                request, types.CallToolResult, request_read_timeout_seconds=timeout, progress_callback=progress_callback
            )
        except MCPError as err:
            code = err.error.code
            if code == types.CONNECTION_CLOSED:
                how = await self._died()
                return error_result(
                    f"server '{self.name}' died during the call to '{tool}': {how}. It will be restarted on the next call."
                )
            if code == types.REQUEST_TIMEOUT:
                return error_result(
                    f"'{tool}' on server '{self.name}' did not answer within {timeout:g}s (offload.downstream.call_timeout_s); the call was cancelled."
                )
            if code == types.INTERNAL_ERROR and err.error.message.startswith(UNUSABLE_ANSWER):
                return error_result(f"server '{self.name}' answered '{tool}', but {err.error.message}.")
            raise
        except ValidationError as err:
            return error_result(
                f"server '{self.name}' returned a malformed result for '{tool}': {err.errors()[0].get('msg')}"
            )
        self._backoff = self.settings.restart_backoff_s
        result = self._claim_charge(result, held)
        restored = result if self._aside is None else self._aside.restore(result)
        if restored is None:
            return error_result(f"server '{self.name}' answered '{tool}', but {LOST}.")
        return restored

    def _claim_charge(self, result: types.CallToolResult, held: Held | None) -> types.CallToolResult:
        """The result without the budget token its transport put in `_meta`, the charge claimed into `held`."""
        meta = result.meta
        if not isinstance(meta, dict) or not self.budget.owns(meta.get(BUDGET_META_KEY)):
            return result  # a server's own value under that key stays (it cannot know the prefix)
        charge = self.budget.claim(meta[BUDGET_META_KEY])
        if charge is not None:
            if held is None:
                charge.release()
            else:
                held.add(charge)
        rest = {key: value for key, value in meta.items() if key != BUDGET_META_KEY}
        stripped = result.model_copy(update={"meta": rest or None})
        if not rest:
            stripped.__pydantic_fields_set__.discard("meta")  # serialised as if the server had sent no `_meta`
        return stripped

    async def _died(self) -> str:
        if self.record is not None:
            with anyio.move_on_after(1.0):
                await self.record.exited.wait()
        self._down.set()
        self.state = "down" if self.state == "ready" else self.state
        self.failure = self._how_it_ended()
        return self.failure

    async def request(self, method: str, params: Any, result_type: type[Any]) -> Any:
        """Forward a non-tool request (resources/read, prompts/get, ...)."""
        try:
            session = await self._ensure_ready()
        except DownstreamDown as err:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(err)) from None
        request_types = {
            "resources/read": (types.ReadResourceRequest, types.ReadResourceRequestParams),
            "prompts/get": (types.GetPromptRequest, types.GetPromptRequestParams),
            "resources/subscribe": (types.SubscribeRequest, types.SubscribeRequestParams),
            "resources/unsubscribe": (types.UnsubscribeRequest, types.UnsubscribeRequestParams),
            "completion/complete": (types.CompleteRequest, types.CompleteRequestParams),
        }
        request_cls, _ = request_types[method]
        try:
            return await session.send_request(
                request_cls(params=params), result_type, request_read_timeout_seconds=self.settings.call_timeout_s
            )
        except MCPError as err:
            if err.error.code == types.CONNECTION_CLOSED:
                how = await self._died()
                raise MCPError(
                    code=types.INTERNAL_ERROR, message=f"server '{self.name}' died during {method}: {how}"
                ) from None
            raise

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "command": self.command,
            "tools": len(self.tools),
            "starts": self.starts,
            "failure": self.failure,
        }


async def _all_pages(fetch: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await fetch(params=params)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor:
            return items
    logger.warning("stopped following %s pagination after %d pages", attr, MAX_LIST_PAGES)
    return items


def budget_for(settings: DownstreamSettings) -> InflightBudget:
    return InflightBudget(settings.max_inflight_result_bytes, settings.max_inflight_wait_s, settings.max_result_bytes)


@asynccontextmanager
async def _remote_transport(
    entry: RemoteServer,
    max_result_bytes: int,
    log_name: str,
    aside: StructuredAside | None = None,
    budget: InflightBudget | None = None,
) -> AsyncIterator[Any]:
    from .bounded_http import LEGACY_SSE_EVENT_LIMIT, SSE_FRAMING, ParsedMessages, bounded_client_factory

    # Large answers are parsed off the event loop, and lone surrogate escapes read as U+FFFD (bounded_http.py).
    parsed = ParsedMessages(aside=aside, log=logging.getLogger(f"offload_mcp.downstream.{log_name}"), budget=budget)
    if entry.kind == "sse":
        from mcp.client.sse import sse_client

        # The SDK's SSE client drops the whole connection past 1 MiB per event: refuse first, clearly.
        factory = bounded_client_factory(min(max_result_bytes, LEGACY_SSE_EVENT_LIMIT), parsed)
        async with sse_client(entry.url, headers=entry.headers or None, httpx_client_factory=factory) as streams:
            yield parsed.wrap(streams)
        return
    from mcp.client.streamable_http import streamable_http_client

    factory = bounded_client_factory(max_result_bytes, parsed)
    async with factory(headers=entry.headers or None) as http_client:
        # Our transport bounds each event at max_result_bytes; the SDK's own 1 MiB cap would kill the call instead.
        async with streamable_http_client(
            entry.url, http_client=http_client, max_sse_event_size=max_result_bytes + SSE_FRAMING
        ) as streams:
            yield parsed.wrap(streams)


def _explain(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        inner = [e for e in err.exceptions]
        return "; ".join(_explain(e) for e in inner) or repr(err)
    if isinstance(err, MCPError):
        if err.error.code == types.CONNECTION_CLOSED:
            return "the connection closed during start-up"
        return f"error {err.error.code}: {err.error.message}"
    return str(err) or type(err).__name__
