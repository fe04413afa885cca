"""Stats read a ledger a page at a time in (at, id) order, with each session's calls counted in SQL
(issue 43): the report equals the fold of every event at once, on SQLite and on PostgreSQL, for
every caller and for one, and the fold keeps no event once it has counted it."""

from __future__ import annotations

import gc
import sqlite3
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offload_mcp.analysis.stats import CALL_KINDS, Accumulator, aggregate, owned_by, report_from_ledger
from offload_mcp.store import Ledger, LedgerEvent
from offload_mcp.store import ledger as ledger_module
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
