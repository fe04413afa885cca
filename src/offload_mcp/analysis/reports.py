"""The stats report of a ledger: from the stored checkpoint of the fold when one can serve, else a full fold.

Its own module because the checkpoint (stats_checkpoint.py) is built on the fold (stats.py): the
choice between them sits above both, so neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..policy.settings import PolicySettings
from ..store import Ledger
from .stats import StatsReport, fold_ledger
from .stats_checkpoint import report_with_checkpoint


def report_from_ledger(
    ledger: Ledger,
    settings: PolicySettings | None = None,
    *,
    since: float | None = None,
    session_ids: Iterable[str] | None = None,
    model: str | None = None,
    client: str | None = None,
    owner: str | None = None,
    checkpoint: bool = True,
) -> StatsReport:
    """The report `stats --json` prints and the dashboard draws. A report of every event (no `since`,
    no `session_ids`) carries on from the ledger's checkpoint and folds only the events after it, with
    the same result byte for byte; `checkpoint=False` folds every event."""
    if checkpoint and since is None and session_ids is None:
        return report_with_checkpoint(ledger, settings, model=model, client=client, owner=owner)
    return fold_ledger(ledger, settings, since=since, session_ids=session_ids, model=model, client=client, owner=owner)
