"""Whether each downstream server has the client's roots in hand before a call reaches it.

A server in roots mode (server-filesystem without directory arguments) asks
`roots/list` when it is told `notifications/initialized` and again on each
`notifications/roots/list_changed`, then applies the answer *asynchronously*
(server-filesystem resolves each root with realpath and stat before it
replaces its allowed directories). A tool call sent right behind the answer
is served with the old roots: the first call through the proxy was refused.
So before a call of a client that declared roots, the proxy (downstream/pool.py
`prime_roots`) makes sure, per server:

1. unanswered: the server's last roots/list could not be answered (no client
   yet at start-up, or a 2026-era client, which can be asked only inside a
   call): it is sent roots/list_changed and the call waits for its answer;
2. asking: a roots/list the server sent is still being relayed (counted as it
   is read off the wire, before the SDK dispatches it, so a request sent just
   before a listing answer is never missed): the call waits for it;
3. fresh: the server was given roots since it last settled: the call waits
   until the server has digested them (downstream/settle.py).

Inert for servers that never ask for roots and for clients without the roots
capability: nothing is counted and calls go straight through.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

ROOTS_METHOD = "roots/list"


class RootsTracker:
    """Per server: roots/list requests unanswered, in flight, and answered but not yet digested."""

    def __init__(self) -> None:
        self.unanswered: set[str] = set()
        """Servers whose last roots/list no client answered."""
        self.fresh: set[str] = set()
        """Servers given roots since they last settled."""
        self.primer: dict[str, Any] = {}
        """Per server: the call (an Upstream) whose priming provoked the roots/list now expected."""
        self._asking: Counter[str] = Counter()
        self._quiet: dict[str, anyio.Event] = {}
        self._answered: dict[str, anyio.Event] = {}
        self._priming: dict[str, anyio.Lock] = {}

    def settled(self, server: str) -> bool:
        """Nothing to wait for before a call to `server` (no lookup of the lock when nothing is pending)."""
        lock = self._priming.get(server)
        return (
            server not in self.unanswered
            and server not in self.fresh
            and self._asking[server] == 0
            and (lock is None or not lock.locked())
        )

    def priming(self, server: str) -> anyio.Lock:
        """Held by the one call that primes and settles `server`; the others wait for it."""
        return self._priming.setdefault(server, anyio.Lock())

    @contextmanager
    def primed_by(self, server: str, upstream: Any) -> Iterator[None]:
        """While priming: a roots/list from `server` answers our list_changed, so it belongs to `upstream`."""
        if upstream is not None:
            self.primer[server] = upstream
        try:
            yield
        finally:
            self.primer.pop(server, None)

    def reset(self, server: str) -> None:
        """A new session to `server`: requests of the old one will never be answered."""
        self._asking.pop(server, None)
        self._quiet.pop(server, anyio.Event()).set()

    def asked(self, server: str) -> None:
        """A roots/list from `server` was read off the wire."""
        self._asking[server] += 1

    def answered(self, server: str, ok: bool) -> None:
        """Our answer to one roots/list of `server` is going out (`ok`: the client's roots, not an error)."""
        if ok:
            self.unanswered.discard(server)
            self.fresh.add(server)
            self._answered.pop(server, anyio.Event()).set()
        else:
            self.unanswered.add(server)
        if self._asking[server] > 0:
            self._asking[server] -= 1
        if self._asking[server] == 0:
            self._quiet.pop(server, anyio.Event()).set()

    def next_answer(self, server: str) -> anyio.Event:
        """Set when `server` next gets the client's roots."""
        return self._answered.setdefault(server, anyio.Event())

    async def wait_quiet(self, server: str, seconds: float) -> bool:
        """Wait (at most `seconds`) until no roots/list of `server` is being relayed; True when none is.

        A request still unanswered after the wait is forgotten (one the SDK refused before it reached our
        callback is never answered by us): later calls do not wait for it again.
        """
        if self._asking[server] == 0:
            return True  # the common case, kept off the call path's clock
        with anyio.move_on_after(seconds):
            while self._asking[server] > 0:
                await self._quiet.setdefault(server, anyio.Event()).wait()
        if self._asking[server] == 0:
            return True
        self.reset(server)
        return False

    def take_fresh(self, server: str) -> bool:
        """True once after `server` was given roots: the caller lets it settle."""
        if server in self.fresh:
            self.fresh.discard(server)
            return True
        return False


def is_roots_request(item: object) -> bool:
    return (
        isinstance(item, SessionMessage)
        and isinstance(item.message, types.JSONRPCRequest)
        and item.message.method == ROOTS_METHOD
    )


class WatchedReadStream(anyio.abc.ObjectReceiveStream[Any]):
    """A session's read stream that shows each message to `seen` before the SDK dispatches it.

    The SDK handles an incoming request in a task of its own, so a request the
    server sent before answering our tools/list may reach its callback only
    after that answer. Counting it here, in wire order, closes that gap.
    """

    def __init__(self, inner: Any, seen: Callable[[object], None]) -> None:
        self._inner = inner
        self._seen = seen

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._seen(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()
