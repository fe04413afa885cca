"""The decision record: one frozen, typed, versioned model; strict to read; older ledgers upgraded on open."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from pathlib import Path

import mcp_types as types
import pytest
from pydantic import ValidationError

from offload_mcp.analysis.reports import report_from_ledger
from offload_mcp.config import OffloadSettings
from offload_mcp.record import RECORD_VERSION, DecisionEvent, DecisionRecordError
from offload_mcp.shaping import CallInfo, ResultShaper
from offload_mcp.store import Ledger, decision_v1
from offload_mcp.store.settings import LedgerSettings
from support.decision_records import decision_record, decision_row

V1_LEDGER = Path(__file__).parent / "fixtures" / "ledgers" / "ledger_v1.db"
V1_TRM_ID = "trm_490843f6e5de6bfe"
# What the version-1 build's stats computed from that file (tests/fixtures/ledgers/make_ledger_v1.py prints them).
V1_TOTALS = {
    "results": 7,
    "reduced": 4,
    "offloaded": 2,
    "observed": 3,
    "tokens_saved": 51235.0,
    "would_tokens_saved": 51235.5,
}
# Its dollars as priced since each result is also carried by the request that read it (economics.requests_carrying);
# the version-1 build priced only the calls that followed: 0.360144125 and 0.337029875.
V1_USD = {"usd_saved": 0.385761625, "would_usd_saved": 0.362647625}


def _details(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT detail FROM events WHERE kind = 'decision' ORDER BY id")]


def test_a_ledger_written_by_version_1_is_upgraded_on_open_and_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(V1_LEDGER, path)
    assert all('"version"' not in d for d in _details(path))

    ledger = Ledger.open(LedgerSettings(), path)
    try:
        records = [DecisionEvent.from_ledger_row(e) for e in ledger.events(kinds=["decision"])]
        report = report_from_ledger(ledger, OffloadSettings().policy)
        body = ledger.get_body(V1_TRM_ID)
    finally:
        ledger.close()

    assert len(records) == 7 and {r.version for r in records} == {RECORD_VERSION}
    assert [r.effective_verdict for r in records] == ["offload", "reduce", "keep", "offload", "reduce", "keep", "keep"]
    assert [r.mode for r in records] == ["enforce"] * 3 + ["observe"] * 3 + ["enforce"]
    assert all(r.verdict == "keep" and r.would_chars_out is not None for r in records if r.observe)
    assert (
        records[0].trm_id == V1_TRM_ID and records[0].decision is not None and records[0].decision.verdict == "offload"
    )
    assert records[6].decision is None and records[6].reason == "small"  # a columns-only row: nothing invented
    t = report.totals
    assert {k: getattr(t, k) for k in V1_TOTALS} == pytest.approx(V1_TOTALS)
    assert {k: getattr(t, k) for k in V1_USD} == pytest.approx(V1_USD)
    # the one change: the verdict `inline` never existed; that row was kept whole
    assert report.decisions == {"offload/over_client_limit": 2, "reduce/below_large": 2, "keep/small": 3}
    assert body["content"][0]["text"].startswith("commit ")  # bodies are untouched

    upgraded = _details(path)
    Ledger.open(LedgerSettings(), path).close()
    assert _details(path) == upgraded  # once only


def test_upgrade_reads_every_old_spelling_into_one_valid_record() -> None:
    row = {
        "id": 9,
        "session_id": "s",
        "server": "git",
        "tool": "git_log",
        "verdict": "would_offload",
        "reason": "gate_fired",
        "ref_id": "trm_1",
        "chars_in": 400_000,
        "chars_out": 400_000,
        "detail": {
            "observe": True,
            "reducer_events": [{"reducer": "dedup", "acted": False, "reason": "first_seen"}],
            "would_be_chars_out": 900,
        },
    }
    record = DecisionEvent.model_validate(decision_v1.upgrade_row(row))
    assert (record.mode, record.verdict, record.would_be, record.would_chars_out) == ("observe", "keep", "offload", 900)
    assert record.reducer_events[0].reducer == "dedup" and not record.reducer_events[0].acted
    assert decision_v1.UPGRADED_VERSION == RECORD_VERSION


def test_what_the_shaper_returns_is_what_the_ledger_holds(tmp_path: Path) -> None:
    ledger = Ledger.open(LedgerSettings(), tmp_path / "l.db")
    try:
        shaper = ResultShaper(OffloadSettings(), ledger)
        big = types.CallToolResult(content=[types.TextContent(text="line of log output\n" * 12_000)])
        _, returned = shaper.shape_with_report(CallInfo("git", "git__git_log", "git_log", {}, session_id="s"), big)
        (row,) = list(ledger.events(kinds=["decision"]))
    finally:
        ledger.close()
    assert DecisionEvent.from_ledger_row(row) == returned
    assert (row["verdict"], row["tool"], returned.listed_tool) == (
        returned.effective_verdict,
        "git_log",
        "git__git_log",
    )
    with pytest.raises(ValidationError):
        returned.reason = "changed"  # type: ignore[misc]  # frozen


def test_a_queued_decision_is_written_off_the_call_path_as_returned(tmp_path: Path) -> None:
    # A kept result's event is queued; its detail (the record's JSON dump) is made when the writer reads it.
    ledger = Ledger.open(LedgerSettings(), tmp_path / "l.db")
    try:
        shaper = ResultShaper(OffloadSettings(), ledger)
        small = types.CallToolResult(content=[types.TextContent(text="a small result")])
        _, returned = shaper.shape_with_report(CallInfo("fx", "echo", "echo", {}, session_id="s"), small)
        assert dict(returned.ledger_event().detail) == returned.model_dump(mode="json")
        (row,) = list(ledger.events(kinds=["decision"]))  # reading flushes the queue
    finally:
        ledger.close()
    assert (row["verdict"], row["reason"]) == ("keep", "small")
    assert DecisionEvent.from_ledger_row(row) == returned


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"verdict": "inline"}, "verdict"),
        ({"observed": True}, "observed"),
        ({"mode": "observe"}, "observe mode"),
        ({"version": 1}, "version"),
        ({"chars_in": "many"}, "chars_in"),
    ],
)
def test_reading_is_strict_and_names_the_row(change: dict[str, object], problem: str) -> None:
    row = decision_row(decision_record("s", "git", "git_log", "reduce", "below_large", 10_000, 2_000), id_=42, at=1.0)
    row["detail"] = {**row["detail"], **change}
    with pytest.raises(DecisionRecordError, match=f"(?s)ledger event 42: .*{problem}"):
        DecisionEvent.from_ledger_row(row)


def test_a_row_of_another_kind_is_not_a_decision() -> None:
    with pytest.raises(DecisionRecordError, match="'recall' is not 'decision'"):
        DecisionEvent.from_ledger_row({"id": 3, "kind": "recall", "detail": {}})


def test_stats_names_a_decision_row_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from offload_mcp.cli import main

    path = tmp_path / "l.db"
    ledger = Ledger.open(LedgerSettings(), path)
    good = decision_record("s", "git", "git_log", "keep", "small", 300)
    ledger.commit(events=[good.ledger_event()])
    bad = good.ledger_event()
    ledger.commit(events=[dataclasses.replace(bad, detail={**bad.detail, "verdict": "inline"})])
    ledger.close()
    assert main(["stats", "--ledger", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"offload-mcp stats: {path}: ledger event 2: not a version-2 decision record" in err and "verdict" in err
