"""A stats report that folds only the events after a stored checkpoint of the fold.

A report folds every call event in (at, id) order (stats.Accumulator). A checkpoint is the fold's
state (`Accumulator.state()`, JSON) over every event of a scope recorded before a time `through_at`,
stored in the ledger's `stats_checkpoints` table, one row per scope (`all`, or one caller's
ownership key under `ledger.scope: principal`). A report loads it and folds only the events at or
after `through_at`, in the same order the full fold would meet them, so it adds the same numbers in
the same order: the report is byte for byte the full fold's.

That holds because of how `through_at` is chosen. A result's price depends on how many calls its
session holds in the end (the observed horizon), so a checkpoint ends only where no session goes on
across it: every session it counts had its last event before `through_at`, and no session after it
started before. And it ends at least SAFETY_S before the clock, so events still on their way (a
replica's clock a little behind, a transaction not yet committed) land after it. What could still
make it wrong is checked on every load, and any one of them makes the report fold every event and
write a new checkpoint, with a line on stderr:

- an event written after the checkpoint's fold began that carries a time before `through_at`;
- a session it counts that has events after `through_at` (a conversation resumed much later);
- the ledger's lowest event id moved (retention removed events the checkpoint counts);
- another state version, other settings, model or client (the fingerprint), or state that does not
  parse: an older build's or a damaged checkpoint.

The checkpoint is derived data, a cache: the events stay the truth, and a checkpoint missing, old
or unwritable (a read-only ledger) only costs the full fold. Reports filtered by time (`since`) or
by session fold every event and neither read nor write a checkpoint.
"""

from __future__ import annotations

import binascii
import hashlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..policy.settings import PolicySettings
from ..store import Ledger
from ..store.errors import LedgerError
from ..store.records import CheckpointRow, SessionSpan
from .stats import CALL_KINDS, Accumulator, SessionSet, StatsReport

log = logging.getLogger(__name__)

STATE_VERSION = 2
"""The layout of `Accumulator.state()` and of what the fold computes from it: a checkpoint written
under another version is rebuilt, never read."""
SAFETY_S = 300.0
"""A checkpoint counts only events older than this: later ones may still be arriving out of order."""
MIN_NEW_EVENTS = 1000
"""A checkpoint is rewritten only when it would count at least this many more events than the stored one."""


def scope_of(owner: str | None) -> str:
    return owner or "all"


def fingerprint(settings: PolicySettings, model: str | None, client: str | None) -> str:
    """What the folded state depends on besides the events: the state's version, the settings that
    price it, the model and the client it is counted against."""
    basis = {"version": STATE_VERSION, "settings": settings.model_dump(mode="json"), "model": model, "client": client}
    return hashlib.sha256(orjson.dumps(basis, option=orjson.OPT_SORT_KEYS)).hexdigest()


def checkpoint_cut(spans: Iterable[SessionSpan], after: float, before: float) -> float | None:
    """The latest time C in (after, before] such that every session lies wholly before C or wholly at
    or after it (none has first_at < C <= last_at); None when there is none."""
    cut = before
    blocks: list[list[float]] = []
    for first, last in sorted((s.first_at, s.last_at) for s in spans if s.last_at > s.first_at):
        if blocks and first <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], last)
        else:
            blocks.append([first, last])
    for first, last in blocks:
        if first < cut <= last:
            cut = first
            break
    return cut if cut > after else None


@dataclass
class _Loaded:
    row: CheckpointRow
    state: Mapping[str, Any]
    sessions: SessionSet
    events: int


def _load(ledger: Ledger, scope: str, key: str, low_id: int) -> _Loaded | None:
    """The stored checkpoint of `scope` if it can be carried on from; None (and why, on stderr) if not."""
    try:
        row = ledger.read_checkpoint(scope)
    except (LedgerError, OSError) as err:
        log.warning("stats checkpoint of %s: not read (%s); folding every event", scope, err)
        return None
    except Exception as err:  # noqa: BLE001 - e.g. a read-only ledger older than the table: the full fold answers
        log.warning("stats checkpoint of %s: not read (%s: %s); folding every event", scope, type(err).__name__, err)
        return None
    if row is None:
        return None
    try:
        data = orjson.loads(row.state)
        if data["version"] != STATE_VERSION or data["fingerprint"] != key:
            log.warning("stats checkpoint of %s: another version or settings wrote it; rebuilding it", scope)
            return None
        state = data["fold"]
        sessions = SessionSet.from_state(state["sessions"])
        events = int(data["events"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, binascii.Error) as err:
        log.warning("stats checkpoint of %s: damaged (%s: %s); rebuilding it", scope, type(err).__name__, err)
        return None
    if row.low_id != low_id:
        log.info("stats checkpoint of %s: events it counts were removed; rebuilding it", scope)
        return None
    if ledger.recorded_before(row.through_id, row.through_at):
        log.info("stats checkpoint of %s: an event before it was written after it; rebuilding it", scope)
        return None
    return _Loaded(row, state, sessions, events)


def _resumed(
    loaded: _Loaded, settings: PolicySettings, session_calls: Mapping[str, int], **named: str | None
) -> Accumulator | None:
    try:
        return Accumulator.resume(loaded.state, settings, session_calls, **named)
    except (KeyError, TypeError, ValueError) as err:
        log.warning(
            "stats checkpoint of %s: damaged (%s: %s); rebuilding it", loaded.row.scope, type(err).__name__, err
        )
        return None


def _start(
    ledger: Ledger, settings: PolicySettings, scope: str, key: str, low_id: int, owner: str | None, **named: str | None
) -> tuple[_Loaded | None, dict[str, SessionSpan], Accumulator]:
    """The fold to carry on: the stored checkpoint's when it holds, else an empty one; with the spans
    of the sessions it has yet to fold."""
    loaded = _load(ledger, scope, key, low_id)
    if loaded is not None:
        spans = ledger.session_spans(loaded.row.through_at, CALL_KINDS, owner)
        if loaded.sessions.holds_any(spans):
            log.info("stats checkpoint of %s: a session it counts went on after it; rebuilding it", scope)
        else:
            calls = {session: span.calls for session, span in spans.items()}
            fold = _resumed(loaded, settings, calls, **named)
            if fold is not None:
                return loaded, spans, fold
    spans = ledger.session_spans(None, CALL_KINDS, owner)
    calls = {session: span.calls for session, span in spans.items()}
    return None, spans, Accumulator(settings, calls, **named)


def report_with_checkpoint(
    ledger: Ledger,
    settings: PolicySettings | None = None,
    *,
    model: str | None = None,
    client: str | None = None,
    owner: str | None = None,
    write: bool = True,
    now: float | None = None,
    min_new: int = MIN_NEW_EVENTS,
) -> StatsReport:
    """The report of every call event of a scope (as reports.report_from_ledger's full fold has it), from
    the stored checkpoint and the events after it; writes a newer checkpoint when it can count
    `min_new` more events (or there was none). `now`: the clock SAFETY_S is measured from."""
    settings = settings or PolicySettings()
    scope, key = scope_of(owner), fingerprint(settings, model, client)
    low_id, through_id = ledger.events_mark()
    loaded, spans, fold = _start(ledger, settings, scope, key, low_id, owner, model=model, client=client)
    start = loaded.row.through_at if loaded else 0.0
    clock = time.time() if now is None else now
    cut = checkpoint_cut(spans.values(), start, clock - SAFETY_S)
    snapshot: dict[str, Any] | None = None
    counted = loaded.events if loaded else 0
    for event in ledger.events_in_order(start, CALL_KINDS, owner):
        if cut is not None and snapshot is None:
            if float(event.get("at") or 0) >= cut:
                snapshot = fold.state()
            else:
                counted += 1
        fold.add(event)
    if cut is not None and snapshot is None:
        snapshot = fold.state()
    if write and snapshot is not None and (loaded is None or counted - loaded.events >= min_new):
        assert cut is not None
        envelope = {"version": STATE_VERSION, "fingerprint": key, "events": counted, "fold": snapshot}
        _store(ledger, scope, envelope, (cut, through_id, low_id, clock))
    return fold.report(None)


def _store(ledger: Ledger, scope: str, envelope: Mapping[str, Any], marks: tuple[float, int, int, float]) -> None:
    """Write a checkpoint if the ledger can be written; a failure costs the next report the full fold, never this one."""
    if not ledger.writable:
        return
    through_at, through_id, low_id, written_at = marks
    row = CheckpointRow(scope, through_at, through_id, low_id, orjson.dumps(envelope).decode(), written_at)
    try:
        ledger.write_checkpoint(row)
    except (LedgerError, OSError) as err:
        log.warning("stats checkpoint of %s: not written (%s)", scope, err)
