"""Values kept beside the SDK under tokens a server cannot guess (aside.py, bounded_http.py).

Each token carries a random per-shelf prefix, so a server cannot name what another message put
aside; each value is taken once; at most `max_held` wait, and the oldest is pushed out (its owner says
what that costs: an error for its call, never a result missing a part).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from itertools import count
from typing import Generic, TypeVar

T = TypeVar("T")


class TokenShelf(Generic[T]):
    def __init__(self, max_held: int) -> None:
        self.max_held = max_held
        self._held: OrderedDict[str, T] = OrderedDict()
        self._prefix = secrets.token_hex(8) + "-"
        self._next = count(1)

    def put(self, value: T) -> tuple[str, list[tuple[str, T]]]:
        """The new token, and the (token, value) pairs pushed out to make room."""
        token = f"{self._prefix}{next(self._next)}"
        self._held[token] = value
        pushed: list[tuple[str, T]] = []
        while len(self._held) > self.max_held:
            pushed.append(self._held.popitem(last=False))
        return token, pushed

    def owns(self, token: object) -> bool:
        """A token this shelf handed out (held or not); any other value is a server's own."""
        return isinstance(token, str) and token.startswith(self._prefix)

    def take(self, token: str) -> T | None:
        """The value, once; None when it was pushed out, dropped or taken already."""
        return self._held.pop(token, None)

    def __len__(self) -> int:
        return len(self._held)
