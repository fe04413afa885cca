"""Send each server-to-client request to the upstream client whose call caused it.

How it works: every forwarded tools/call registers its upstream (the client
session and the call's request id) as *in flight* on its downstream server
for as long as it runs. A downstream session is shared by every upstream
client, and neither stdio nor the SDK's client tells which outgoing call a
server request belongs to, so a request is attributed by what is in flight
on that server when it arrives:

- calls of exactly one client in flight: that client, on the call's own
  stream (streamable HTTP: the POST's response stream; 2026 era: an
  input_required round of that call);
- calls of several clients in flight: nobody. The request is refused with an
  error saying so: a request caused by client A's call must never reach
  client B, and there is no safe way to tell A from B here;
- nothing in flight: the one connected handshake-era client (its standalone
  channel), if there is exactly one; otherwise refused with the reason
  (several HTTP clients share this proxy, or no client is connected).

One exception: a roots/list that answers the roots/list_changed a call sent
to prime the server (relay/roots.py) goes to that call's client, whatever
else is in flight: that call caused it.

The chosen client must have declared the capability the request needs
(sampling and its tools/context sub-capabilities, elicitation form/URL,
roots); otherwise the server gets an error naming the missing capability.
Log messages follow the same attribution; one that no single client can be
told to own stays in offload-mcp's stderr log. Each message is named by its
server in the `logger` field.

Inert when no upstream client declared sampling, elicitation or roots: the
downstream sessions then declare none, and servers send no such requests
(one that does anyway gets the "did not declare" error, counted in stats).
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import mcp_types as types
import orjson
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata

from .capabilities import lacks, relayed_part, union
from .roots import RootsTracker

logger = logging.getLogger(__name__)


class Upstream(Protocol):
    """One upstream client as seen from one call (or from its standalone channel)."""

    @property
    def origin(self) -> object:
        """Identity of the client: two calls of one client share it."""
        ...

    @property
    def capabilities(self) -> types.ClientCapabilities | None: ...

    async def ask(self, request: types.ServerRequest, result_type: type[Any], timeout_s: float) -> Any: ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def notify(self, notification: types.ServerNotification) -> None: ...


@dataclass(eq=False)
class SessionUpstream:
    """A handshake-era upstream session; `request_id` set = the call's own stream, None = standalone."""

    session: Any  # mcp.server.session.ServerSession
    request_id: types.RequestId | None = None
    key: str | None = None
    """The client connection the session belongs to (upstream/identity.py `connection_key`); None: its own."""

    @property
    def origin(self) -> object:
        return self.session if self.key is None else self.key

    @property
    def capabilities(self) -> types.ClientCapabilities | None:
        return self.session.client_capabilities

    async def ask(self, request: types.ServerRequest, result_type: type[Any], timeout_s: float) -> Any:
        related = ServerMessageMetadata(related_request_id=self.request_id) if self.request_id is not None else None
        return await self.session.send_request(
            request, result_type, request_read_timeout_seconds=timeout_s, metadata=related
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore", MCPDeprecationWarning
            )  # deprecated in the 2026 era, live in the handshake era
            await self.session.send_log_message(
                params.level, params.data, params.logger, related_request_id=self.request_id
            )

    async def notify(self, notification: types.ServerNotification) -> None:
        await self.session.send_notification(notification, related_request_id=self.request_id)


@dataclass
class RelayStats:
    """Counted reasons, read by the status output and the tests."""

    relayed: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    logs_forwarded: int = 0
    logs_dropped: int = 0
    redeclared: int = 0
    roots_settled: Counter[str] = field(default_factory=Counter)
    """Calls held until their server digested fresh roots, by how that was established (downstream/settle.py)."""


_calling: ContextVar[Upstream | None] = ContextVar("offload_mcp_relay_calling", default=None)
"""The upstream of the downstream call the current task is making (set by `Relay.in_flight`)."""

MAX_CONNECTED = 64
"""Handshake-era connections remembered for requests outside a call (more than one means: refuse)."""

REFUSED_AMBIGUOUS = "ambiguous"
REFUSED_NO_CLIENT = "no_client"
REFUSED_CAPABILITY = "capability"
REFUSED_UPSTREAM_ERROR = "upstream_error"
REFUSED_TIMEOUT = "timeout"
REFUSED_TOO_LARGE = "too_large"
DEFAULT_MAX_REQUEST_BYTES = 1_000_000
"""Under the SDK streamable-HTTP client's 1 MiB limit per event: a larger request broke that client's stream."""


def wire_bytes(message: Any) -> int:
    """The size of a request's or notification's params as JSON, which is what a client's transport carries."""
    return len(orjson.dumps(message.model_dump(by_alias=True, mode="json", exclude_none=True)))


class Relay:
    """Process-wide: the capability declaration, the calls in flight, the connected clients."""

    def __init__(
        self, timeout_s: float, declaration_wait_s: float = 0.0, *, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    ) -> None:
        self.timeout_s = timeout_s
        self.max_request_bytes = max_request_bytes
        """Largest request or log message relayed, as JSON (offload.downstream.max_relayed_request_bytes)."""
        self.declared = types.ClientCapabilities()
        self.declaration_wait_s = declaration_wait_s
        """How long a server's first session waits for the first client's declaration (`first_declaration`)."""
        self._first_observed = anyio.Event()
        self.log_level: types.LoggingLevel | None = None
        self.stats = RelayStats()
        self._in_flight: dict[str, list[Upstream]] = {}
        self._last_observed: types.ClientCapabilities | None = None
        self.roots = RootsTracker()
        """Which servers still wait for, or are still digesting, the client's roots (relay/roots.py)."""
        # Bounded, newest last: a session holds its connection, so weak keys would never be freed, and a
        # closed HTTP session has no flag to read. Stale entries only ever make routing refuse, never misdeliver.
        self._connected: dict[str, Any] = {}

    # ---- clients ---------------------------------------------------------

    def observe(self, caps: types.ClientCapabilities | None) -> bool:
        """Fold one client's declaration into what downstream declares; True when it grew."""
        self._first_observed.set()
        if caps is self._last_observed:
            return False  # the same connection's declaration again: the common case, kept off the hot path
        self._last_observed = caps
        grown = union(self.declared, relayed_part(caps))
        if grown == self.declared:
            return False
        self.declared = grown
        return True

    async def first_declaration(self) -> None:
        """Wait, at most `declaration_wait_s`, until a client's declaration has been observed.

        Why: a downstream session declares once, at its initialize. One that initialized before the
        client's declaration arrived declared nothing and was reconnected when it came: a second start
        of every server whenever the client declares roots, elicitation or sampling (Claude Code
        declares roots and elicitation). A stdio client's initialize is the first thing it sends, so
        the wait is the time the proxy takes to read it. Inert (no wait) when `declaration_wait_s` is 0:
        HTTP clients come and go, and their union only grows, so no first declaration is the one.
        """
        if self.declaration_wait_s > 0 and not self._first_observed.is_set():
            with anyio.move_on_after(self.declaration_wait_s):
                await self._first_observed.wait()

    def connected(self, connection: str, session: Any) -> None:
        """A handshake-era client connection (its key) that can take requests outside a call."""
        if connection is not None and connection not in self._connected:
            self._connected[connection] = session
            while len(self._connected) > MAX_CONNECTED:
                del self._connected[next(iter(self._connected))]

    def disconnected(self, connection: str) -> None:
        """A client connection ended (its stream closed, its HTTP session was deleted or expired)."""
        self._connected.pop(connection, None)

    def gone(self, upstream: Upstream) -> None:
        """A standalone client that could not be reached is no longer counted as connected."""
        if isinstance(upstream.origin, str):
            self._connected.pop(upstream.origin, None)

    def standalone(self) -> list[Upstream]:
        return [SessionUpstream(session, key=key) for key, session in list(self._connected.items())]

    @contextmanager
    def in_flight(self, server: str, upstream: Upstream) -> Iterator[None]:
        calls = self._in_flight.setdefault(server, [])
        calls.append(upstream)
        token = _calling.set(upstream)
        try:
            yield
        finally:
            _calling.reset(token)
            calls.remove(upstream)

    def calling(self) -> Upstream | None:
        """The upstream of the call this task is making (inside `in_flight`), else None."""
        return _calling.get()

    # ---- routing ---------------------------------------------------------

    def route(self, server: str, method: str, params: Any = None) -> Upstream | str:
        """The client to send `method` to, or the sentence saying why there is none."""
        calls = self._in_flight.get(server, [])
        origins = {u.origin for u in calls}
        primer = self.roots.primer.get(server) if method == "roots/list" else None
        if primer is not None:
            target = primer  # the server answers the list_changed this call's priming sent (relay/roots.py)
        elif len(origins) > 1:
            self.stats.refused[REFUSED_AMBIGUOUS] += 1
            return (
                f"offload-mcp did not relay {method} from server '{server}': calls of {len(origins)} clients are in "
                "flight on it and it cannot tell which one caused this request, so it goes to none of them"
            )
        elif calls:
            target = calls[-1]
        else:
            clients = self.standalone()
            if len(clients) != 1:
                self.stats.refused[REFUSED_NO_CLIENT] += 1
                why = "no client is connected" if not clients else f"{len(clients)} clients are connected"
                return (
                    f"offload-mcp did not relay {method} from server '{server}': it came outside any tool call and "
                    f"{why}, so there is no one client it belongs to"
                )
            target = clients[0]
        missing = lacks(target.capabilities, method, params)
        if missing is not None:
            self.stats.refused[REFUSED_CAPABILITY] += 1
            return (
                f"offload-mcp did not relay {method} from server '{server}': the client it belongs to did not "
                f"declare the {missing} capability"
            )
        return target

    async def relay(self, server: str, request: types.ServerRequest, result_type: type[Any]) -> Any:
        """Relay one request; the client's result, or ErrorData for the downstream server."""
        params = getattr(request, "params", None)
        size = wire_bytes(request)
        if size > self.max_request_bytes:
            # Refused before routing: no client transport is asked to carry it (one over 1 MiB broke the
            # SDK client's stream, and the call died with a transport error instead of this sentence).
            self.stats.refused[REFUSED_TOO_LARGE] += 1
            message = (
                f"offload-mcp did not relay {request.method} from server '{server}': it is {size:,} bytes of JSON, "
                f"over the {self.max_request_bytes:,} bytes a relayed request may have "
                "(offload.downstream.max_relayed_request_bytes)"
            )
            logger.warning("%s", message)
            return types.ErrorData(code=types.INVALID_REQUEST, message=message)
        target = self.route(server, request.method, params)
        if isinstance(target, str):
            logger.warning("%s", target)
            return types.ErrorData(code=types.INVALID_REQUEST, message=target)
        try:
            result = await target.ask(request, result_type, self.timeout_s)
        except MCPError as err:
            self.stats.refused[REFUSED_UPSTREAM_ERROR] += 1
            if err.error.code == types.CONNECTION_CLOSED:
                self.gone(target)
            if err.error.code == types.REQUEST_TIMEOUT:
                self.stats.refused[REFUSED_TIMEOUT] += 1
                message = (
                    f"the client did not answer {request.method} within {self.timeout_s:g}s "
                    "(offload.downstream.call_timeout_s)"
                )
                return types.ErrorData(code=types.REQUEST_TIMEOUT, message=message)
            return err.error
        except TimeoutError:
            self.stats.refused[REFUSED_TIMEOUT] += 1
            message = f"the client did not answer {request.method} within {self.timeout_s:g}s (offload.downstream.call_timeout_s)"
            return types.ErrorData(code=types.REQUEST_TIMEOUT, message=message)
        except Exception as err:  # a broken upstream must not take the downstream session down
            self.stats.refused[REFUSED_UPSTREAM_ERROR] += 1
            if isinstance(err, anyio.ClosedResourceError | anyio.BrokenResourceError):
                self.gone(target)
            logger.warning("relaying %s from %r failed: %r", request.method, server, err)
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"offload-mcp could not relay {request.method}: {err}"
            )
        self.stats.relayed[request.method] += 1
        return result

    async def log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        named = params.model_copy(update={"logger": f"{server}/{params.logger}" if params.logger else server})
        size = wire_bytes(named)
        if size > self.max_request_bytes:
            self.stats.logs_dropped += 1
            logger.warning(
                "server %r log not relayed: %s bytes of JSON, over offload.downstream.max_relayed_request_bytes=%s",
                server,
                f"{size:,}",
                f"{self.max_request_bytes:,}",
            )
            return
        calls = self._in_flight.get(server, [])
        origins = {u.origin for u in calls}
        if len(origins) > 1:
            self.stats.logs_dropped += 1
            logger.info(
                "server %r log (not relayed: %d clients in flight) [%s]: %s",
                server,
                len(origins),
                params.level,
                params.data,
            )
            return
        targets = calls[-1:] if calls else self.standalone()
        if len(targets) > 1:
            # No call explains it and several clients could see it: a late line of one client's call must not
            # reach another, so it stays in our own log.
            self.stats.logs_dropped += 1
            logger.info(
                "server %r log (not relayed: %d clients connected) [%s]: %s",
                server,
                len(targets),
                params.level,
                params.data,
            )
            return
        for target in targets:
            try:
                with anyio.fail_after(2):
                    await target.log(named)
                self.stats.logs_forwarded += 1
            except Exception as err:
                self.stats.logs_dropped += 1
                if isinstance(err, anyio.ClosedResourceError | anyio.BrokenResourceError):
                    self.gone(target)
                logger.debug("log from %r not delivered: %r", server, err)

    async def notify(self, server: str, notification: types.ServerNotification) -> None:
        """A notification meant for one client (notifications/elicitation/complete), routed like a log line."""
        calls = self._in_flight.get(server, [])
        targets = calls[-1:] if len({u.origin for u in calls}) == 1 else ([] if calls else self.standalone())
        if len(targets) != 1:
            logger.info("server %r %s not relayed: no single client owns it", server, notification.method)
            return
        try:
            with anyio.fail_after(2):
                await targets[0].notify(notification)
        except Exception as err:
            logger.debug("%s from %r not delivered: %r", notification.method, server, err)

    # ---- the downstream session's callbacks --------------------------------

    def callbacks(self, server: str) -> dict[str, Any]:
        """Keyword arguments for the server's ClientSession."""

        async def sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
            result_type = (
                types.CreateMessageResultWithTools
                if (params.tools or params.tool_choice)
                else types.CreateMessageResult
            )
            return await self.relay(server, types.CreateMessageRequest(params=params), result_type)

        async def elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
            return await self.relay(server, types.ElicitRequest(params=params), types.ElicitResult)

        async def list_roots(context: ClientRequestContext) -> Any:
            result: Any = types.ErrorData(code=types.INTERNAL_ERROR, message="offload-mcp could not relay roots/list")
            try:
                result = await self.relay(server, types.ListRootsRequest(), types.ListRootsResult)
            finally:
                self.roots.answered(server, ok=not isinstance(result, types.ErrorData))
            return result

        async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
            await self.log(server, params)

        return {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": list_roots,
            "logging_callback": logging_callback,
        }

    def status(self) -> dict[str, Any]:
        from .capabilities import wire

        return {
            "declared": wire(self.declared),
            "relayed": dict(self.stats.relayed),
            "refused": dict(self.stats.refused),
            "logs_forwarded": self.stats.logs_forwarded,
            "logs_dropped": self.stats.logs_dropped,
            "redeclared": self.stats.redeclared,
            "roots_settled": dict(self.stats.roots_settled),
        }
