"""The ledger: full bodies by `trm_` id, reducer stash by cg hash, events for stats.

`Ledger` offers the small interfaces callers use (`BodyStore`, `StashStore`, `EventLog`,
`CallHistory`, `LedgerWriter`) over a backend: a local SQLite file (the default) or a shared
PostgreSQL database (`postgresql://` URL, `offload-mcp[postgres]`).
"""

from .errors import Evicted, LedgerCorrupt, LedgerError, LedgerUnavailable, LedgerWriteError, UnknownId
from .interfaces import BodyStore, CallHistory, EventLog, LedgerBackend, LedgerWriter, StashStore
from .ledger import Ledger
from .location import ENV_VAR, default_ledger_path
from .records import BodyInfo, BodyRecord, LedgerEvent, canonical_json, trm_id_for
from .sqlite import created_by_offload_mcp

__all__ = [
    "BodyInfo",
    "BodyRecord",
    "BodyStore",
    "CallHistory",
    "ENV_VAR",
    "EventLog",
    "Evicted",
    "Ledger",
    "LedgerBackend",
    "LedgerCorrupt",
    "LedgerError",
    "LedgerEvent",
    "LedgerUnavailable",
    "LedgerWriteError",
    "LedgerWriter",
    "StashStore",
    "UnknownId",
    "canonical_json",
    "created_by_offload_mcp",
    "default_ledger_path",
    "trm_id_for",
]
