"""Retention: which bodies and stash entries leave the ledger, and the tombstone each one leaves.

Off by default (both limits null). `max_age_days` removes entries not used for that long;
`max_total_bytes` removes the least recently used entries until the stored bytes fit. A removed
id keeps a tombstone, so a recall of it says when and why it went. The policy is the same for
every backend; backends only list entries and delete them.
"""

from __future__ import annotations

import logging

from .interfaces import Entry, LedgerBackend
from .settings import LedgerSettings

log = logging.getLogger(__name__)


def evict(backend: LedgerBackend, settings: LedgerSettings, now: float) -> list[str]:
    """Apply max_age_days, then max_total_bytes; return the evicted ids (bodies and stash hashes)."""
    max_age = settings.max_age_days
    max_total = settings.max_total_bytes
    evicted: list[str] = []
    if max_age is not None:
        cutoff = now - max_age * 86400.0
        stale = sorted(backend.unused_since(cutoff), key=lambda e: (e.kind != "body", e.id))
        evicted += backend.tombstone(stale, now, f"not used for more than max_age_days={max_age:g}")
    if max_total is not None:
        total = backend.stored_total()
        if total > max_total:
            victims: list[Entry] = []
            for entry in backend.by_recency():
                if total <= max_total:
                    break
                victims.append(entry)
                total -= entry.stored_bytes
            victims.sort(key=lambda e: e.kind != "body")  # bodies first, as before the split
            evicted += backend.tombstone(
                victims, now, f"least recently used when the ledger exceeded max_total_bytes={max_total}"
            )
    if evicted:
        log.info("ledger retention evicted %d entries", len(evicted))
    return evicted
