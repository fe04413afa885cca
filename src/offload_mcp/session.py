"""The session: who a call belongs to and what that session has already shown its model.

A session id names one client session (upstream/identity.py issues them); a stateless HTTP request
without an identity of its own gets an anonymous id that shares nothing. `SessionMemory` is what a
session remembers between calls: the outputs its model saw (dedup points back at them) and the cg
hashes it expanded (kept verbatim when they arrive again).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

ANONYMOUS_PREFIX = "stateless:"
"""Session ids with this prefix belong to a request with no identity of its own (a 2026-07-28 stateless HTTP
request, upstream/identity.py): it has no history to share and keeps none."""


def is_anonymous(session_id: str) -> bool:
    """True for a stateless HTTP request that carries no identity of its own."""
    return session_id.startswith(ANONYMOUS_PREFIX)


def cg_hash(original: str) -> str:
    """Content hash of a stashed segment: the first 16 hex of sha256 of its UTF-8 bytes."""
    return hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class SessionMemory:
    """Per-session state reducers may read and extend (dedup's history).

    `seen` maps the cg hash of an earlier output to the description of the
    call that produced it, e.g. "`git_status`".
    """

    seen: dict[str, str] = field(default_factory=dict)
    expanded: set[str] = field(default_factory=set)
    """cg hashes the model expanded in this session: their content is kept verbatim if it arrives again."""
    seen_lengths: set[int] = field(default_factory=set)
    """Lengths of the outputs in `seen`: a text of another length is no repeat, known without hashing it
    (hashing is linear in the text and would be paid on every large output of a session that has seen
    anything; docs/design.md, "Session memory")."""

    def remember(self, hash_: str, chars: int, producer: str) -> None:
        """An output of `chars` characters with cg hash `hash_` reached the model; the first producer keeps the name."""
        self.seen.setdefault(hash_, producer)
        self.seen_lengths.add(chars)

    def seen_hash(self, text: str) -> str | None:
        """The cg hash of `text` when it repeats a seen output, else None; hashed only when some seen
        output has its length."""
        if len(text) not in self.seen_lengths:
            return None
        hash_ = cg_hash(text)
        return hash_ if hash_ in self.seen else None
