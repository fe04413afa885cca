"""All wrapped servers, started together and kept for the life of the proxy.

`async with DownstreamPool(config.mcpServers, settings) as pool:` connects to
every server concurrently (each bounded by `startup_timeout_s`), logs each
failure with the server's name, command and stderr tail, and keeps serving
with the ones that came up. The pool's task group holds the sessions, so
they are independent of any upstream connection (an SSE connection's
lifespan, a streamable-HTTP session) and survive it.

`background=True` (what `serve` uses): entering returns at once and the
servers start in the pool's task group, so the proxy answers `initialize`
whatever they do (Claude Code gives up on a server after 30 s, and a hung
downstream must not cost the healthy ones). Each server that comes up later
is announced to listeners as kind `joined`; `settled` is set once every
first start attempt has ended; `wait_settled(seconds)` bounds the wait.

What `serve` also passes: `early`, the stdio processes it started before
importing the SDK (spawn.py EarlyStarts), which each server's first session
takes; and, over stdio, `declaration_wait_s`, how long a first session waits
for the client's declaration so it declares it at once (Relay.first_declaration).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from ..relay.router import Relay
from .changes import DownstreamChange, Joined
from .settings import DownstreamSettings, ServerEntry
from .spawn import EarlyStarts
from .wrapped_server import DownstreamServer, budget_for

logger = logging.getLogger(__name__)

ROOTS_PRIME_S = 2.0
"""How long a call waits, at each step, for a server to fetch the client's roots."""


class DownstreamPool:
    def __init__(
        self,
        servers: Mapping[str, ServerEntry],
        settings: DownstreamSettings | None = None,
        *,
        background: bool = False,
        early: EarlyStarts | None = None,
        declaration_wait_s: float = 0.0,
    ) -> None:
        self.background = background
        self.settled = anyio.Event()
        """Set when every server's first start attempt has ended (ready or failed)."""
        self.settings = settings or DownstreamSettings()
        self.relay = Relay(
            self.settings.call_timeout_s, declaration_wait_s, max_request_bytes=self.settings.max_relayed_request_bytes
        )
        self.budget = budget_for(self.settings)
        """One in-flight byte budget for the large answers of every server (budget.py)."""
        self.servers: dict[str, DownstreamServer] = {
            name: DownstreamServer(
                name, entry, self.settings, on_change=self._changed, relay=self.relay, early=early, budget=self.budget
            )
            for name, entry in servers.items()
        }
        self._redeclaring = anyio.Lock()
        self._declaration_unapplied = False
        self._listeners: list[Callable[[str, DownstreamChange], Awaitable[None]]] = []
        self._task_group: anyio.abc.TaskGroup | None = None

    def on_change(self, listener: Callable[[str, DownstreamChange], Awaitable[None]]) -> None:
        """Register `listener(server_name, change)` for downstream list changes (and restarts)."""
        self._listeners.append(listener)

    async def _changed(self, server: DownstreamServer, change: DownstreamChange) -> None:
        for listener in list(self._listeners):
            await listener(server.name, change)

    async def __aenter__(self) -> DownstreamPool:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        try:
            if self.background:
                self._task_group.start_soon(self.start_all)
            else:
                await self.start_all()
        except BaseException:
            self._task_group.cancel_scope.cancel()
            await self._task_group.__aexit__(None, None, None)
            raise
        return self

    async def start_all(self) -> None:
        assert self._task_group is not None
        tg_servers = self._task_group

        async def start(server: DownstreamServer) -> None:
            ok = await server.start(tg_servers)
            if ok and server.declares() != self.relay.declared:
                # A client's declaration arrived while this server was connecting (relay/capabilities.py).
                ok = await server.redeclare()
            if ok and self.background:
                await self._changed(server, Joined())

        try:
            async with anyio.create_task_group() as starting:
                for server in self.servers.values():
                    starting.start_soon(start, server)
        finally:
            self.settled.set()
        ready = [s.name for s in self.servers.values() if s.state == "ready"]
        failed = [s for s in self.servers.values() if s.state != "ready"]
        if self.servers:
            logger.info("downstream servers ready: %s", ", ".join(ready) or "none")
        if failed:
            # A failure was logged whole where it happened (DownstreamServer._fail): here only which ones.
            logger.warning(
                "not serving: %s",
                ", ".join(f"{s.name} ({'failed, see above' if s.failure else s.state})" for s in failed),
            )

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for server in self.servers.values():
            await server.stop()
        if self.relay.stats.relayed or self.relay.stats.refused or self.relay.stats.logs_forwarded:
            logger.info("relay: %s", self.relay.status())
        assert self._task_group is not None
        if any(s.state in ("new", "starting") for s in self.servers.values()):
            # A server still starting (hung, or a first npx download) does not hold the exit for its
            # startup_timeout_s: cancel; each child is still stopped (stdio cleanup runs shielded).
            self._task_group.cancel_scope.cancel()
        await self._task_group.__aexit__(exc_type, exc, tb)
        self._task_group = None

    async def wait_settled(self, seconds: float) -> bool:
        """Wait up to `seconds` for every first start attempt to end; True when they all have."""
        with anyio.move_on_after(max(0.0, seconds)):
            await self.settled.wait()
        return self.settled.is_set()

    def starting(self) -> list[DownstreamServer]:
        return [s for s in self.servers.values() if s.state in ("new", "starting")]

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool:
        """Run `fn(*args)` in the pool's process-lifetime task group (work that must not delay an answer)."""
        if self._task_group is None:
            return False
        self._task_group.start_soon(fn, *args)
        return True

    def retry_failed(self) -> None:
        """Start again, in the background, each server that failed to start and whose backoff has passed."""
        if self._task_group is None:
            return
        for server in self.servers.values():
            if server.due_for_retry():
                self._task_group.start_soon(server.retry)

    def note_declaration(self, capabilities: Any) -> None:
        """A client's initialize (or discover): when servers wait for its declaration (stdio), it is folded in
        at once, so those still starting declare it in their first session (Relay.first_declaration); one
        already connected is reconnected by the client's first request (`declare_for`), which may wait,
        where initialize must not. Over HTTP a declaration is folded at each client's first request only."""
        if self.relay.declaration_wait_s > 0 and self.relay.observe(capabilities):
            self._declaration_unapplied = True

    async def declare_for(self, capabilities: Any) -> None:
        """A client declared `capabilities`: when that widens what downstream declares, reconnect every server.

        Serialised, so concurrent first requests of new clients wait for one
        round of reconnects rather than starting several.
        """
        widened = self.relay.observe(capabilities) or self._declaration_unapplied
        self._declaration_unapplied = False
        if not widened and not self._redeclaring.locked():
            return
        async with self._redeclaring:
            if not self.settled.is_set():
                # Servers still starting: let them come up first, so the client's first listing already
                # shows what its declaration unlocks (bounded like that first listing).
                await self.wait_settled(self.settings.first_list_wait_s)
            stale = [s for s in self.servers.values() if s.state == "ready" and s.declares() != self.relay.declared]
            if not stale:
                return
            self.relay.stats.redeclared += 1
            logger.info(
                "client capabilities now %s: reconnecting %d server(s)", self.relay.status()["declared"], len(stale)
            )
            async with anyio.create_task_group() as tg:
                for server in stale:
                    tg.start_soon(server.redeclare)

    async def set_log_level(self, level: Any) -> None:
        self.relay.log_level = level
        async with anyio.create_task_group() as tg:
            for server in self.ready():
                tg.start_soon(server.set_log_level)

    async def roots_changed(self) -> None:
        async with anyio.create_task_group() as tg:
            for server in self.ready():
                tg.start_soon(server.roots_changed)

    async def prime_roots(self, name: str, capabilities: Any) -> None:
        """Before a call of a client that declared roots: the server has that client's roots in hand.

        Three waits, each bounded by `ROOTS_PRIME_S` (relay/roots.py says why
        each is needed): a server whose roots/list went unanswered (asked at
        start-up before any client could answer; always so for 2026-era
        clients, which can be asked only inside a call) is sent
        notifications/roots/list_changed and the call waits for its answer
        (that roots/list goes to this call's client even when other calls are
        in flight on the server: it answers our notification);
        a roots/list still being relayed is waited for; and a server that was
        given roots since it last settled is let settle (downstream/settle.py),
        since servers apply roots asynchronously. Inert for servers that never
        asked for roots, and for clients without the roots capability.
        """
        server = self.servers.get(name)
        if server is None or getattr(capabilities, "roots", None) is None:
            return
        roots = self.relay.roots
        if roots.settled(name):
            return  # the common case, kept off the call path's clock
        # One call at a time primes and settles a server: calls made together (Claude Code runs read-only
        # tools in parallel) wait for the first one's roots instead of racing it.
        async with roots.priming(name):
            if name in roots.unanswered:
                answered = roots.next_answer(name)
                # The roots/list this provokes belongs to this call, whoever else has calls in flight.
                with roots.primed_by(name, self.relay.calling()):
                    await server.roots_changed()
                    with anyio.move_on_after(ROOTS_PRIME_S):
                        await answered.wait()
            if not await roots.wait_quiet(name, ROOTS_PRIME_S):
                logger.info("server %r: a roots/list is still unanswered; calling it anyway", name)
            if roots.take_fresh(name):
                how = await server.settle()
                self.relay.stats.roots_settled[how] += 1

    def ready(self) -> list[DownstreamServer]:
        return [s for s in self.servers.values() if s.state == "ready"]

    def status(self) -> list[dict[str, Any]]:
        return [s.status() for s in self.servers.values()]
