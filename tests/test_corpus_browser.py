"""bench/corpus_mcp.py's browser sessions: @playwright/mcp driving Debian's chromium over the generated shop site.

The MCP corpus records them from the real server, so a stubbed page snapshot is measured on what Playwright
really writes (unnamed table rows, frame-prefixed refs), and `--merge` re-records them alone without
touching the other servers' records.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from offload_mcp.analysis.replay import read_records, replay
from offload_mcp.config import OffloadSettings
from support.servers import ROOT, record_mcp_corpus

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "peers"))

import corpus_mcp  # noqa: E402


def test_a_row_picked_from_a_stubbed_catalog_snapshot_is_in_view(tmp_path: Path) -> None:
    """A 260-row catalog (~100K chars) snapshotted by the real server is offloaded; the agent then clicks the
    `Add to cart` button and the product link of a row by the refs it read, naming the row's SKU. Claude Code's
    view of the stub holds all three (before rows were records, the SKU and both refs were behind the stub)."""
    records = read_records(record_mcp_corpus(tmp_path / "tools.jsonl.gz", "--only", "browser-catalog-tools"))
    assert [r.tool for r in records][:6] == [
        "playwright-mcp.browser_navigate",
        "playwright-mcp.browser_snapshot",
        "playwright-mcp.browser_click",
        "playwright-mcp.browser_snapshot",
        "playwright-mcp.browser_click",
        "playwright-mcp.browser_click",
    ]
    assert "http://127.0.0.1:8080/catalog/tools.html" in records[3].output  # the site's port, fixed
    dump = tmp_path / "seen.jsonl"
    report = replay(records, OffloadSettings(), client="claude-code", dump=dump)
    catalog = json.loads(dump.read_text().splitlines()[3])
    assert catalog["verdict"] == "offload" and "then its 261 table rows" in catalog["seen"]
    click = json.loads(records[4].call)
    sku = click["element"].rsplit(" ", 1)[1]
    row = next(line for line in catalog["seen"].splitlines() if line.startswith(f"  {sku} "))
    link = json.loads(records[5].call)["target"]
    assert click["target"] in row.split() or f"button {click['target']})" in row, row
    assert link in row.split() or f"(link {link}," in row, row
    fidelity = report.fidelity
    assert fidelity is not None and fidelity.needed >= 3 and fidelity.visible == fidelity.needed
    assert not report.unrecoverable


def test_browser_sessions_write_the_same_bytes_twice(tmp_path: Path) -> None:
    """Playwright MCP's refs and printed code are deterministic; its file stamps are fixed by the generator."""
    first, second = (
        record_mcp_corpus(tmp_path / f"h{n}.jsonl.gz", "--only", "browser-handbook-0").read_bytes() for n in (1, 2)
    )
    assert first == second
    outputs = "\n".join(r.output for r in read_records(tmp_path / "h1.jsonl.gz"))
    assert ".playwright-mcp/page-2026-01-05T09-00-00-000Z.yml" in outputs


def _line(traj: str, step: int, text: str) -> bytes:
    return corpus_mcp._line({"traj": traj, "step": step, "output": text})


def test_merge_replaces_only_the_sessions_recorded_and_keeps_every_other_line() -> None:
    previous = _line("a", 0, "x") + b'{"traj": "b", "step": 0,  "output": "spaced as written"}\n' + _line("c", 0, "z")
    fresh = [{"traj": "b", "step": 0, "output": "new"}, {"traj": "b", "step": 1, "output": "more"}]
    merged = corpus_mcp.merged(previous, fresh, ["a", "b", "c", "d"])
    assert merged == _line("a", 0, "x") + _line("b", 0, "new") + _line("b", 1, "more") + _line("c", 0, "z")
    added = corpus_mcp.merged(previous, [{"traj": "d", "step": 0, "output": "w"}], ["a", "b", "c", "d"])
    assert added == previous + _line("d", 0, "w")  # untouched lines kept byte for byte, even odd spacing
    with pytest.raises(ValueError, match="no session records: c"):
        corpus_mcp.merged(previous, [], ["a", "b"])


def test_merge_needs_an_existing_corpus(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "corpus_mcp.py"), "--only", "browser-", "--merge"]
        + ["--out", str(tmp_path / "none.jsonl.gz")],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=60,
    )
    assert done.returncode == 2 and "--merge needs an existing corpus" in done.stderr
