"""Decision rows written before the decision record had a version, rewritten as version 2 when a ledger opens.

Version 1 is what ledgers held until the record became one typed model
(record.py): `detail` was the shaper's `ShapeReport.as_dict()` plus
`listed_tool`, and the readers tolerated variants of it (observe mode as
`mode: observe`, `observe: true` or a `would_` verdict; reducer events under
`reducers`, `reducer_events` or `events`; `would_be_chars_out`; a verdict
`inline`; an empty detail from code that wrote only the columns). This module
is the one place that still knows those spellings: `upgrade_row` turns one row
into a version-2 record (JSON, validated by record.DecisionEvent in the tests),
and `upgrade_sqlite`, called when a writable SQLite ledger opens, runs it over
every version-1 row once, in one transaction, then stamps
`meta.decision_record_version`. Pure JSON in, JSON out: the store does not
import the model it stores. (Only SQLite files can hold version-1 rows: they
predate every other backend.)

Where an old row did not keep something the record now requires, the upgrade
says so rather than invents it: no policy decision (`decision: null`), and in
observe mode without a would-be size, the original size (no saving claimed).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from typing import Any

import orjson

log = logging.getLogger(__name__)

UPGRADED_VERSION = 2
META_KEY = "decision_record_version"
_VERDICTS = ("keep", "reduce", "offload")
_POLICY_DECISION_KEYS = {"verdict", "reason", "explanation", "chars", "tokens", "gate"}
_REDUCER_EVENT_KEYS = ("reducer", "acted", "reason", "chars_before", "chars_after")


def _verdict(value: Any) -> str:
    text = str(value or "keep").removeprefix("would_")
    return text if text in _VERDICTS else "keep"  # `inline` and anything unknown meant "the client got it whole"


def _reducer_events(detail: Mapping[str, Any]) -> list[dict[str, Any]]:
    for key in ("reducers", "reducer_events", "events"):
        value = detail.get(key)
        if isinstance(value, list):
            return [
                {
                    "reducer": str(e.get("reducer", "?")),
                    "acted": bool(e.get("acted")),
                    "reason": str(e.get("reason", "")),
                    "chars_before": int(e.get("chars_before") or 0),
                    "chars_after": int(e.get("chars_after") or 0),
                }
                for e in value
                if isinstance(e, Mapping)
            ]
    return []


def _policy_decision(detail: Mapping[str, Any]) -> dict[str, Any] | None:
    decision = detail.get("decision")
    if isinstance(decision, Mapping) and set(decision) == _POLICY_DECISION_KEYS:
        return dict(decision)
    return None


def upgrade_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A version-2 decision record from one version-1 `events` row (its columns and decoded `detail`)."""
    detail: Mapping[str, Any] = row.get("detail") if isinstance(row.get("detail"), Mapping) else {}  # type: ignore[assignment]
    column_verdict = str(row.get("verdict") or "")
    observe = detail.get("mode") == "observe" or detail.get("observe") is True or column_verdict.startswith("would_")
    chars_in = int(detail.get("chars_in", row.get("chars_in")) or 0)
    effective = _verdict(detail.get("would_be") or column_verdict or detail.get("verdict"))
    decision = _policy_decision(detail)
    cpt = (chars_in / float(detail["tokens_in"])) if chars_in and detail.get("tokens_in") else 4.0
    if observe:
        would_chars_out = detail.get("would_chars_out", detail.get("would_be_chars_out"))
        if not isinstance(would_chars_out, int):
            would_chars_out = int(decision["chars"]) if decision and effective == "reduce" else chars_in
        verdict, chars_out, would_be = "keep", chars_in, effective
    else:
        would_chars_out, would_be = None, None
        verdict, chars_out = (
            _verdict(detail.get("verdict") or column_verdict),
            int(detail.get("chars_out", row.get("chars_out")) or 0),
        )
    trm_id = detail.get("trm_id") or row.get("ref_id") or None
    structured = detail.get("structured")
    return {
        "version": UPGRADED_VERSION,
        "session_id": str(row.get("session_id") or ""),
        "server": str(row.get("server") or ""),
        "tool": str(row.get("tool") or ""),
        "listed_tool": str(detail.get("listed_tool") or row.get("tool") or ""),
        "mode": "observe" if observe else "enforce",
        "verdict": verdict,
        "reason": str(detail.get("reason") or row.get("reason") or ""),
        "decision": decision,
        "chars_in": chars_in,
        "chars_out": chars_out,
        "tokens_in": round(chars_in / cpt, 1),
        "tokens_out": round(chars_out / cpt, 1),
        "reducer_events": _reducer_events(detail),
        "trm_id": str(trm_id) if trm_id and effective == "offload" else None,
        "stash_hashes": [str(h) for h in detail.get("stash_hashes") or []],
        "structured": structured if isinstance(structured, str) else None,
        "warning": detail.get("warning") if isinstance(detail.get("warning"), str) else None,
        "would_be": would_be,
        "would_chars_out": would_chars_out,
    }


_COLUMNS = ("id", "session_id", "server", "tool", "verdict", "reason", "ref_id", "chars_in", "chars_out", "detail")


def upgrade_sqlite(conn: sqlite3.Connection, location: object = "") -> int:
    """Rewrite every version-1 decision row of a SQLite ledger, once, in one transaction; returns how many.

    A ledger already stamped costs one read and no write transaction. The caller holds the
    connection's lock; a sqlite3.Error leaves the ledger as it was (rolled back) and propagates.
    """
    stamped = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
    if stamped is not None and int(stamped[0]) >= UPGRADED_VERSION:
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        upgraded = 0
        rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM events WHERE kind = 'decision'").fetchall()
        for values in rows:
            item = dict(zip(_COLUMNS, values, strict=True))
            item["detail"] = orjson.loads(item["detail"]) if item["detail"] else {}
            if isinstance(item["detail"], dict) and item["detail"].get("version") == UPGRADED_VERSION:
                continue  # upgraded by another process that opened the file while we waited for the lock
            record = upgrade_row(item)
            conn.execute(
                "UPDATE events SET verdict = ?, reason = ?, ref_id = ?, chars_in = ?, chars_out = ?, detail = ? WHERE id = ?",
                (
                    record["would_be"] or record["verdict"],
                    record["reason"],
                    record["trm_id"] or "",
                    record["chars_in"],
                    record["chars_out"],
                    orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode(),
                    item["id"],
                ),
            )
            upgraded += 1
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (META_KEY, str(UPGRADED_VERSION)))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if upgraded:
        log.info("ledger %s: %d decision record(s) upgraded to version %d", location, upgraded, UPGRADED_VERSION)
    return upgraded
