"""The SQLite ledger: full bodies by `trm_` id, reducer stash by cg hash, events for stats."""

from .ledger import (
    BodyInfo,
    BodyRecord,
    Evicted,
    Ledger,
    LedgerError,
    LedgerEvent,
    LedgerUnavailable,
    LedgerWriteError,
    UnknownId,
    canonical_json,
    default_ledger_path,
    trm_id_for,
)

__all__ = [
    "BodyInfo",
    "BodyRecord",
    "Evicted",
    "Ledger",
    "LedgerError",
    "LedgerEvent",
    "LedgerUnavailable",
    "LedgerWriteError",
    "UnknownId",
    "canonical_json",
    "default_ledger_path",
    "trm_id_for",
]
