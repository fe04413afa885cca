"""Stats read a ledger a page at a time in (at, id) order, with each session's calls counted in SQL
(issue 43): the report equals the fold of every event at once, on SQLite and on PostgreSQL, for
every caller and for one, and the fold keeps no event once it has counted it."""

from __future__ import annotations

import gc
import json
import logging
import sqlite3
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from offload_mcp.analysis.reports import report_from_ledger
from offload_mcp.analysis.stats import CALL_KINDS, Accumulator, SessionSet, aggregate, owned_by
from offload_mcp.analysis.stats_checkpoint import (
    SAFETY_S,
    STATE_VERSION,
    checkpoint_cut,
    fingerprint,
    report_with_checkpoint,
    scope_of,
)
from offload_mcp.policy.settings import PolicySettings
from offload_mcp.store import Ledger, LedgerEvent
from offload_mcp.store import ledger as ledger_module
from offload_mcp.store.records import SessionSpan
from offload_mcp.store.settings import LedgerSettings
from support.decision_records import decision_record

LINECAP = {"reducer": "linecap", "acted": True, "reason": "acted", "chars_before": 4000, "chars_after": 2000}
OWNERS = ("principal:alice", "principal:bob")


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    if request.param == "sqlite":
        return tmp_path / "ledger.db"
    return str(request.getfixturevalue("pg_url"))


def _seed(ledger: Ledger) -> None:
    """Three sessions of two callers: offloads, reductions, keeps, their recalls and a failed one, an
    expand, and a tool search with no owner."""
    events: list[LedgerEvent] = []
    for n in range(24):
        session, owner = f"s{n % 3}", OWNERS[n % 3 == 2]
        verdict, reason = [("offload", "gate_fired"), ("reduce", "small"), ("keep", "small")][n % 3]
        record = decision_record(
            session,
            f"srv{n % 2}",
            f"tool{n % 4}",
            verdict,
            reason,
            60_000 + 1_000 * n,
            2_000 if verdict == "offload" else 30_000,
            ref=f"trm_{n:016x}" if verdict == "offload" else "",
            reducers=[LINECAP] if verdict == "reduce" else (),
        )
        events.append(record.model_copy(update={"owner": owner}).ledger_event())
    ledger.commit(events=events)
    for n in range(0, 24, 6):
        ledger.record_recall(f"s{n % 3}", f"trm_{n:016x}", ok=True, chars_out=5_000, detail={"owner": OWNERS[0]})
    ledger.record_recall("s1", "trm_ffffffffffffffff", ok=False, detail={"owner": OWNERS[0]})
    ledger.commit(events=[LedgerEvent("tool_search", "s2", verdict="ok", reason="matched")])


def _shuffle_times(where: Path | str) -> None:
    """Times that do not follow the ids (clocks of replicas apart), several shared by more than one event."""
    sql = "UPDATE events SET at = 1000000 + ((id * 7) % 11) * 60"
    if isinstance(where, Path):
        with sqlite3.connect(where) as conn:
            conn.execute(sql)
    else:
        import psycopg

        with psycopg.connect(where, autocommit=True) as conn:
            conn.execute(sql)


@pytest.fixture
def ledger(where: Path | str) -> Iterator[Ledger]:
    led = Ledger.open(LedgerSettings(), where, connect_now=True)
    _seed(led)
    led.flush_quietly()
    _shuffle_times(where)
    yield led
    led.close()


def test_events_come_page_by_page_in_time_order_each_once(ledger: Ledger) -> None:
    every = list(ledger.events())
    expected = [e["id"] for e in sorted(every, key=lambda e: (e["at"], e["id"]))]
    assert expected != [e["id"] for e in every]  # the times were moved out of id order
    paged = [e["id"] for e in ledger.events_in_order(None, CALL_KINDS, page_rows=4)]
    assert paged == expected
    alices = [e["id"] for e in ledger.events_in_order(None, CALL_KINDS, "principal:alice", page_rows=4)]
    assert alices == [e["id"] for e in sorted(owned_by(every, "principal:alice"), key=lambda e: (e["at"], e["id"]))]
    assert 0 < len(alices) < len(paged)
    assert ledger.session_calls(None, CALL_KINDS) == {"s0": 12, "s1": 9, "s2": 9}


@pytest.mark.parametrize("owner", [None, *OWNERS])
def test_the_report_read_in_pages_equals_the_fold_of_every_event(
    ledger: Ledger, owner: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_module, "EVENT_PAGE_ROWS", 4)
    events: Any = ledger.events()
    whole = aggregate(owned_by(events, owner) if owner else events)
    paged = report_from_ledger(ledger, owner=owner)
    assert paged.as_dict() == whole.as_dict()
    assert paged.totals.results == (24 if owner is None else 16 if owner == OWNERS[0] else 8)
    assert paged.totals.recalls == (4 if owner != OWNERS[1] else 0)
    assert paged.horizon.samples > 0
    since = 1000000 + 5 * 60
    assert (
        report_from_ledger(ledger, since=since, owner=owner).as_dict()
        == aggregate(owned_by(ledger.events(), owner) if owner else ledger.events(), since=since).as_dict()
    )


class _Row(dict[str, Any]):
    """An event dict that can be watched with a weak reference."""


def test_the_fold_keeps_no_event_once_it_has_counted_it(tmp_path: Path) -> None:
    led = Ledger.open(LedgerSettings(), tmp_path / "ledger.db")
    _seed(led)
    rows = [_Row(e) for e in led.events()]
    sessions = led.session_calls(None, CALL_KINDS)
    led.close()
    watched: list[weakref.ref[_Row]] = []
    held_after_fold: list[int] = []

    def feed() -> Iterator[_Row]:
        while rows:
            row = rows.pop(0)
            watched.append(weakref.ref(row))
            yield row
            del row
            gc.collect()
            held_after_fold.append(sum(ref() is not None for ref in watched))

    fold = Accumulator(None, sessions)
    for event in feed():
        fold.add(event)
        del event
    report = fold.report(None)
    assert report.totals.results == 24 and report.recall_calls == 5
    assert max(held_after_fold) == 0


# ---------------------------------------------------------------- the stored checkpoint of the fold

LATER = 2_000_000.0
"""The second part's events: long after the seeded ones (a checkpoint can end between them)."""


def _sql(where: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(where, Path):
        with sqlite3.connect(where) as conn:
            return conn.execute(sql, params).fetchall()
    import psycopg

    with psycopg.connect(where, autocommit=True) as conn:
        cur = conn.execute(sql.replace("%", "%%").replace("?", "%s"), params)
        return cur.fetchall() if cur.description else []


def _add_later(ledger: Ledger, where: Path | str, sessions: tuple[str, ...], at: float) -> None:
    """More events in `sessions`, their times out of id order: offloads, a recall of one the seeded part
    offloaded (its owner's row is in the checkpoint), a failed expand."""
    (highest,) = _sql(where, "SELECT max(id) FROM events")[0]
    events = [
        decision_record(s, "srv9", f"tool{n % 2}", "offload", "gate_fired", 90_000 + n, 2_000, ref=f"trm_{n + 99:016x}")
        .model_copy(update={"owner": OWNERS[n % 2]})
        .ledger_event()
        for n, s in enumerate(sessions * 3)
    ]
    ledger.commit(events=events)
    ledger.record_recall(sessions[0], f"trm_{0:016x}", ok=True, chars_out=7_000, detail={"owner": OWNERS[0]})
    ledger.record_expand(sessions[-1], "abc123", ok=False, detail={"owner": OWNERS[1]})
    ledger.flush_quietly()
    _sql(where, "UPDATE events SET at = ? + ((id * 5) % 7) * 30 WHERE id > ?", (at, highest))


def _same(ledger: Ledger, owner: str | None) -> bytes:
    """The full fold's report and the checkpointed one, byte for byte the same; the bytes."""
    whole = orjson.dumps(report_from_ledger(ledger, owner=owner, checkpoint=False).as_dict())
    assert orjson.dumps(report_with_checkpoint(ledger, owner=owner).as_dict()) == whole
    return whole


def _folded_from(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The time each report's read of the events starts from (0: every event)."""
    starts: list[float] = []
    read = ledger.events_in_order

    def watched(since: float | None, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        starts.append(since or 0.0)
        return read(since, *args, **kwargs)

    monkeypatch.setattr(ledger, "events_in_order", watched)
    return starts


@pytest.mark.parametrize("owner", [None, *OWNERS])
def test_a_report_from_the_checkpoint_equals_the_full_fold(
    ledger: Ledger, where: Path | str, owner: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _add_later(ledger, where, ("s3", "s4"), LATER)
    starts = _folded_from(ledger, monkeypatch)
    whole = orjson.dumps(report_from_ledger(ledger, owner=owner, checkpoint=False).as_dict())
    # A checkpoint that ends between the seeded sessions and the later ones, as a clock then would cut it.
    first = report_with_checkpoint(ledger, owner=owner, now=(1_000_000 + LATER) / 2 + SAFETY_S)
    assert orjson.dumps(first.as_dict()) == whole
    stored = ledger.read_checkpoint(scope_of(owner))
    assert stored is not None and stored.through_at == (1_000_000 + LATER) / 2
    # A fresh report carries on from it: it reads only the later events, and counts them all.
    again = report_with_checkpoint(ledger, owner=owner)
    assert starts[-1] == stored.through_at
    assert orjson.dumps(again.as_dict()) == whole
    # More events after it, in new sessions: still the full fold's report, byte for byte.
    _add_later(ledger, where, ("s5",), LATER + 3600)
    _same(ledger, owner)
    assert starts[-1] == stored.through_at
    assert json.loads(_same(ledger, owner))["totals"]["results"] == (
        33 if owner is None else 21 if owner == OWNERS[0] else 12
    )


def test_a_checkpoint_never_hides_an_event(ledger: Ledger, where: Path | str, caplog: pytest.LogCaptureFixture) -> None:
    """An event written after the checkpoint with a time before its end (a replica's clock behind), or one
    that goes on a session the checkpoint counts: the report folds every event and a new checkpoint is written."""
    _add_later(ledger, where, ("s3",), LATER)
    report_with_checkpoint(ledger, now=LATER - 100 + SAFETY_S)
    stored = ledger.read_checkpoint("all")
    assert stored is not None and stored.through_at == LATER - 100
    behind = decision_record("s9", "srv1", "tool1", "offload", "gate_fired", 70_000, 2_000, ref="trm_" + "9" * 16)
    ledger.commit(events=[behind.ledger_event()])
    _sql(where, "UPDATE events SET at = ? WHERE id = (SELECT max(id) FROM events)", (1_000_000 + 30,))
    with caplog.at_level(logging.INFO, logger="offload_mcp.analysis.stats_checkpoint"):
        assert json.loads(_same(ledger, None))["totals"]["results"] == 28
    assert "an event before it was written after it" in caplog.text
    rebuilt = ledger.read_checkpoint("all")
    assert rebuilt is not None and rebuilt.through_id > stored.through_id
    # A session the checkpoint counts goes on after it (which ends SAFETY_S before the clock).
    ledger.record_recall("s0", f"trm_{0:016x}", ok=True, chars_out=3_000)
    ledger.flush_quietly()
    _sql(where, "UPDATE events SET at = ? WHERE id = (SELECT max(id) FROM events)", (time.time(),))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="offload_mcp.analysis.stats_checkpoint"):
        _same(ledger, None)
    assert "a session it counts went on after it" in caplog.text


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("not json", "damaged"),
        ('{"version": 0, "fingerprint": "x", "events": 1, "fold": {}}', "another version or settings"),
        (
            '{"version": 2, "fingerprint": "%s", "events": 1, "fold": {"sessions": {"count": 1, "hashes": "!"}}}',
            "damaged",
        ),
    ],
)
def test_a_damaged_or_old_checkpoint_is_rebuilt_with_a_line_on_stderr(
    ledger: Ledger, where: Path | str, damage: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    whole = _same(ledger, None)
    if "%s" in damage:
        damage = damage % fingerprint(PolicySettings(), None, None)
    _sql(where, "UPDATE stats_checkpoints SET state = ?", (damage,))
    with caplog.at_level(logging.WARNING, logger="offload_mcp.analysis.stats_checkpoint"):
        assert orjson.dumps(report_with_checkpoint(ledger).as_dict()) == whole
    assert f"stats checkpoint of all: {said}" in caplog.text
    rebuilt = ledger.read_checkpoint("all")
    assert rebuilt is not None and orjson.loads(rebuilt.state)["version"] == STATE_VERSION


def test_a_checkpoint_ends_where_no_session_goes_on_across_it() -> None:
    spans = [SessionSpan(3, 10.0, 20.0), SessionSpan(2, 15.0, 30.0), SessionSpan(1, 40.0, 40.0), SessionSpan(2, 50, 60)]
    assert checkpoint_cut(spans, 0.0, 100.0) == 100.0
    assert checkpoint_cut(spans, 0.0, 55.0) == 50.0
    assert checkpoint_cut(spans, 0.0, 45.0) == 45.0
    assert checkpoint_cut(spans, 0.0, 25.0) == 10.0  # inside two overlapping sessions: before both
    assert checkpoint_cut(spans, 10.0, 25.0) is None  # nothing new to count
    assert checkpoint_cut(spans, 0.0, 30.0) == 10.0  # at a session's last event: it is not wholly before
    assert checkpoint_cut(spans, 0.0, 30.5) == 30.5


def test_a_checkpoint_keeps_its_sessions_as_hashes_and_their_count() -> None:
    sessions = SessionSet().with_more({"a": 3, "b": 1}).with_more({"c": 2})
    again = SessionSet.from_state(orjson.loads(orjson.dumps(sessions.state())))
    assert again.count == 3 and list(again.hashes) == sorted(SessionSet.hash_of(s) for s in "abc")
    assert again.holds_any(["x", "b"]) and not again.holds_any(["x", "y"]) and not SessionSet().holds_any(["a"])
    assert again.state() == sessions.state()
