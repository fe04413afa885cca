"""The ledger's contracts: what callers may ask of it, and what a storage backend must provide.

Callers depend on the small interfaces they use (a recall needs a `BodyStore`, an expand a
`StashStore`, stats an `EventLog`, hot-tool learning a `CallHistory`, the shaper a `LedgerWriter`);
`store.Ledger` offers all of them over any `LedgerBackend`. A backend only moves encoded rows in and
out in transactions: compression, id derivation, batching, scope checks and the retention policy
live in `Ledger` and `retention`, beside it, so SQLite and PostgreSQL behave the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, Protocol

from .records import BodyInfo, BodyRecord, CheckpointRow, LedgerEvent, SessionSpan

Scope = Literal["global", "session", "principal"]
EntryKind = Literal["body", "stash"]

# ---- what callers use ---------------------------------------------------------------------


class BodyStore(Protocol):
    """Offloaded results by `trm_` id (recall_tool_result, replay's verification)."""

    @property
    def scope(self) -> Scope: ...

    @property
    def location(self) -> str: ...

    def get_body_json(self, trm_id: str, *, session_id: str | None = None) -> bytes: ...

    def get_body(self, trm_id: str, *, session_id: str | None = None) -> dict[str, Any]: ...

    def body_info(self, trm_id: str) -> BodyInfo: ...

    def has_body(self, trm_id: str) -> bool: ...


class StashStore(Protocol):
    """Reducer cuts by marker hash (context_guru_expand, GET /expand)."""

    @property
    def scope(self) -> Scope: ...

    def get_stash(self, cg_hash: str, *, session_id: str | None = None) -> str: ...


class EventLog(Protocol):
    """Decision, recall and expand events, oldest first (stats, exit summary)."""

    def record_later(self, event: LedgerEvent) -> None: ...

    def record_recall(
        self, session_id: str, trm_id: str, *, ok: bool, chars_out: int = 0, detail: Mapping[str, Any] | None = None
    ) -> None: ...

    def record_expand(
        self, session_id: str, cg_hash: str, *, ok: bool, chars_out: int = 0, detail: Mapping[str, Any] | None = None
    ) -> None: ...

    def events(self, since: float | None = None, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]: ...


class CallHistory(Protocol):
    """How often each (server, tool) was called since a time (catalog.hotset has the same shape)."""

    def call_counts(self, since: float | None = None) -> dict[tuple[str, str], int]: ...


class LedgerWriter(Protocol):
    """One transaction of bodies, stash entries and events (the shaper's commit-before-show)."""

    def commit(
        self,
        bodies: Sequence[BodyRecord] = (),
        stash: Mapping[str, str] | None = None,
        events: Sequence[LedgerEvent] = (),
        owner: str | None = None,
    ) -> None: ...

    def record_later(self, event: LedgerEvent) -> None: ...


# ---- what a backend provides ----------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    """Compressed bytes as stored, with the codec that reads them."""

    data: bytes
    codec: str


class _Row:
    """A table row whose fields are its columns, in the order the INSERT statements (store/queries.py) list them.
    Subclasses are dataclasses; `fields` of the base itself is what mypy cannot see."""

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))  # type: ignore[arg-type]


@dataclass(frozen=True)
class BodyRow(_Row):
    id: str
    server: str
    tool: str
    arguments: str
    session_id: str
    body: bytes
    codec: str
    raw_bytes: int
    stored_bytes: int
    chars: int
    created_at: float
    last_used_at: float


@dataclass(frozen=True)
class StashRow(_Row):
    hash: str
    original: bytes
    codec: str
    chars: int
    created_at: float
    last_used_at: float


@dataclass(frozen=True)
class CallRow(_Row):
    trm_id: str
    session_id: str
    server: str
    tool: str
    at: float


@dataclass(frozen=True)
class EventRow(_Row):
    at: float
    kind: str
    session_id: str
    server: str
    tool: str
    verdict: str
    reason: str
    ref_id: str
    chars_in: int
    chars_out: int
    detail: str
    """Canonical JSON of the event's detail, or "" when it has none."""


@dataclass(frozen=True)
class CommitRows:
    """Everything one commit writes, encoded; a backend writes it in one transaction or not at all.

    Same id means the same bytes: an existing body or stash row keeps its content and only its
    `last_used_at` is refreshed, and a tombstone for it is removed (storing it again revives it).
    Call and owner rows that exist already are left as they are.
    """

    bodies: Sequence[BodyRow] = ()
    stash: Sequence[StashRow] = ()
    calls: Sequence[CallRow] = ()
    stash_owners: Sequence[tuple[str, str]] = ()
    events: Sequence[EventRow] = ()

    def __bool__(self) -> bool:
        return bool(self.bodies or self.stash or self.events)


@dataclass(frozen=True)
class Entry:
    """One body or stash entry as retention sees it."""

    kind: EntryKind
    id: str
    stored_bytes: int
    last_used_at: float


@dataclass(frozen=True)
class Tombstone:
    evicted_at: float
    reason: str


@dataclass
class Counts:
    bodies: int = 0
    stored_bytes: int = 0
    stash: int = 0
    tombstones: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "bodies": self.bodies,
            "stored_bytes": self.stored_bytes,
            "stash": self.stash,
            "tombstones": self.tombstones,
        }


class LedgerBackend(Protocol):
    """Rows in, rows out. Every method raises LedgerWriteError (writes) or LedgerUnavailable (reads)
    with a cause a user can act on; none raises the driver's own exceptions."""

    location: str
    """The file path, or the URL without its password: what logs and errors name."""

    path: Path | None
    """The local file, when there is one (its modes are checked at start)."""

    writable: bool

    def write(self, rows: CommitRows) -> None: ...

    def read_body(self, trm_id: str) -> Stored | None: ...

    def read_stash(self, cg_hash: str) -> Stored | None: ...

    def seen_by(self, kind: EntryKind, id_: str, session_id: str) -> bool:
        """Whether this session was shown the body (it made the call) or the marker (it got the result)."""
        ...

    def tombstone_of(self, id_: str) -> Tombstone | None: ...

    def body_info(self, trm_id: str) -> BodyInfo | None: ...

    def touch(self, kind: EntryKind, id_: str, now: float, not_since: float) -> None:
        """Set last_used_at = now where it is older than `not_since` (a hint: never raises)."""
        ...

    def events(self, since: float, kinds: Sequence[str]) -> list[tuple[Any, ...]]:
        """(id, at, kind, session_id, server, tool, verdict, reason, ref_id, chars_in, chars_out, detail), oldest first."""
        ...

    def events_page(
        self, since: float, kinds: Sequence[str], owner: str | None, after: tuple[float, int] | None, limit: int
    ) -> list[tuple[Any, ...]]: ...
    def session_calls(self, since: float, kinds: Sequence[str], owner: str | None) -> dict[str, int]: ...
    def session_spans(self, since: float, kinds: Sequence[str], owner: str | None) -> dict[str, SessionSpan]: ...
    def recorded_before(self, after_id: int, before_at: float) -> bool: ...
    def read_checkpoint(self, scope: str) -> CheckpointRow | None: ...
    def write_checkpoint(self, row: CheckpointRow) -> None: ...
    def call_counts(self, since: float) -> dict[tuple[str, str], int]: ...

    def events_mark(self) -> tuple[int, int]: ...

    def counts(self) -> Counts: ...

    def stored_total(self) -> int:
        """Stored bytes of all bodies and stash entries (what max_total_bytes bounds)."""
        ...

    def unused_since(self, cutoff: float) -> list[Entry]: ...

    def by_recency(self) -> Iterator[Entry]:
        """Every entry, least recently used first (ties by id)."""
        ...

    def tombstone(self, entries: Sequence[Entry], now: float, reason: str) -> list[str]:
        """Delete these entries and leave tombstones, in one transaction; an entry used again since
        it was chosen (its last_used_at moved) is kept. Returns the ids removed."""
        ...

    def set_last_used(self, kind: EntryKind, id_: str, at: float) -> None:
        """Set an entry's last use (retention tests age entries with it; `touch` only moves forward)."""
        ...

    def reachable(self) -> tuple[bool, str]:
        """Whether the ledger answers a trivial query now, and why not (health checks)."""
        ...

    def integrity(self) -> str:
        """ "ok" when the storage is sound, else what is wrong."""
        ...

    def close(self) -> None: ...
