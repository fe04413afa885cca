"""What can go wrong with a ledger, in words a user can act on (shared by every backend)."""

from __future__ import annotations

from datetime import UTC, datetime


class LedgerError(Exception):
    """The ledger could not be opened or used."""


class LedgerUnavailable(LedgerError):
    """The ledger could not be opened or reached at all (file, URL, server down)."""


class LedgerCorrupt(LedgerUnavailable):
    """What is stored cannot be read back: a damaged file or row, a body that does not decompress or decode.

    Reading again reads the same bytes, so a caller says so and points at the original call instead of
    "try again shortly". A LedgerUnavailable still, so code that only asks "can I read?" is unchanged."""


class LedgerWriteError(LedgerError):
    """A write did not commit; `cause` says why in words a user can act on."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class UnknownId(LookupError):
    """No body or stash entry with this id was ever stored here (or it is out of scope)."""

    def __init__(self, id_: str, detail: str = "") -> None:
        super().__init__(detail or f"{id_} is not in the ledger")
        self.id = id_


class Evicted(UnknownId):
    """The id was stored once and removed by retention; says when and why."""

    def __init__(self, id_: str, evicted_at: float, reason: str) -> None:
        when = datetime.fromtimestamp(evicted_at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        super().__init__(id_, f"{id_} was evicted from the ledger at {when} ({reason})")
        self.evicted_at = evicted_at
        self.reason = reason
