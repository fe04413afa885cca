"""Mid-size results keep every row's identifier in what Claude Code shows its model (issue 38).

A result under the pre-filter (40,000 chars; Claude Code alone shows up to 50,000 whole) must not reach the model as a stub
that lists only some of its rows: the agent passes any row's identifier to its next call. A result
past that size, which Claude Code alone files with a 2,000-char preview, gets a stub whose index
grows with the result (`policy.stub_index_share`), and lists most rows' identifiers.

Each case is replayed in-process as `offload-mcp replay --client claude-code` runs it (real shaper,
real ledger, Claude Code's view of what the proxy sent), with the default configuration.
"""

from __future__ import annotations

import csv
import io
import json
import random
import uuid
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import orjson
import pytest

from offload_mcp.analysis.clients import CLAUDE_CODE_INLINE_CHARS, client_model
from offload_mcp.analysis.replay import Record, replay
from offload_mcp.config import OffloadSettings

Rows = list[dict[str, object]]


def _rows(n: int, seed: int) -> Rows:
    """Orders keyed by a uuid, with a date, a total and a status: short rows, so many of them."""
    rng = random.Random(seed)
    start = date(2026, 1, 1)
    return [
        {
            "order_uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "placed": (start + timedelta(days=i % 365)).isoformat(),
            "total": round(rng.uniform(5, 900), 2),
            "status": rng.choice(["paid", "shipped", "delivered"]),
        }
        for i in range(n)
    ]


def _json(rows: Rows) -> str:
    return json.dumps(rows)


def _python_repr(rows: Rows) -> str:
    return repr(rows)


def _csv(rows: Rows) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _git_log(rows: Rows) -> str:
    """mcp-server-git's git_log text; a row's identifier is its sha."""
    parts = ["Commit history:"]
    for row in rows:
        sha = _sha(row)
        parts.append(
            f"Commit: {sha}\nAuthor: Ada Lovelace\nDate: {row['placed']} 10:00:00+00:00\n"
            f"Message: {row['status']} {row['order_uuid']}\n"
        )
    return "\n".join(parts)


def _sha(row: dict[str, object]) -> str:
    return orjson.dumps(row).hex()[:40]


LAYOUTS: dict[str, tuple[Callable[[Rows], str], Callable[[dict[str, object]], str]]] = {
    "json": (_json, lambda row: str(row["order_uuid"])),
    "python_repr": (_python_repr, lambda row: str(row["order_uuid"])),
    "csv": (_csv, lambda row: str(row["order_uuid"])),
    "git_log": (_git_log, _sha),
}


def _sized(layout: str, target_chars: int) -> tuple[str, list[str]]:
    """The layout's text of as many rows as make about `target_chars`, and each row's identifier."""
    render, ident = LAYOUTS[layout]
    per_row = len(render(_rows(50, 38))) / 50
    rows = _rows(int(target_chars / per_row), 38)
    text = render(rows)
    return text, [ident(row) for row in rows]


def _seen(text: str, tmp_path: Path) -> str:
    """What Claude Code shows its model of `text` sent through offload-mcp with the default configuration."""
    records = [Record(1, "db.query", '{"sql": "select * from orders"}', text, "t1", 1, False, None)]
    dump = tmp_path / "dump.jsonl"
    replay(records, OffloadSettings(), client="claude-code", dump=dump)
    (line,) = dump.read_bytes().splitlines()
    return str(orjson.loads(line)["seen"])


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_result_claude_code_alone_shows_inline_keeps_every_rows_identifier(layout: str, tmp_path: Path) -> None:
    text, ids = _sized(layout, 36_000)
    assert 30_000 < len(text) < 40_000
    seen = _seen(text, tmp_path)
    missing = [i for i in ids if i not in seen]
    assert not missing, f"{len(missing)} of {len(ids)} row identifiers not shown, first {missing[:3]}"


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_result_claude_code_alone_would_file_gets_a_stub_listing_most_rows_identifiers(
    layout: str, tmp_path: Path
) -> None:
    """Claude Code alone files a 75K result with a 2,000-char preview; offload-mcp shows far more rows' identifiers
    than that, and still saves a clear share."""
    text, ids = _sized(layout, 75_000)
    assert CLAUDE_CODE_INLINE_CHARS < len(text) < 100_000
    alone = client_model("claude-code").view({"content": [{"type": "text", "text": text}]}, tool="db.query").text
    seen = _seen(text, tmp_path)
    # a stub, or (a JSON array) a table the reducers made small enough to keep whole: either saves a clear share
    assert len(seen) < 0.7 * len(text)
    shown, shown_alone = sum(i in seen for i in ids), sum(i in alone for i in ids)
    assert shown >= len(ids) / 2 and shown > 5 * shown_alone, (shown, shown_alone, len(ids))
