"""The benchmarks never rot: CI runs `bench/run_all.py --quick` and checks what it measured.

The quick form runs every section on reduced inputs (first 250 corpus records,
the git_log and pytest-log large outputs, 1 KB..1 MB sizes, 1K/10K ledgers)
in under two minutes. Peers that need their own virtualenvs are used only if
already installed; otherwise the report must say they were skipped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("OFFLOAD_BENCH_CORPUS", ROOT.parent / "shared" / "corpus" / "dev.jsonl.gz"))  # as run_all


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not CORPUS.exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    out = tmp_path_factory.mktemp("bench") / "BENCHMARKS.quick.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run_all.py"), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_text(encoding="utf-8")


def _section(report: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", report, re.S | re.M)
    assert match, f"section {title!r} missing from the report"
    return match.group(1)


def test_every_section_ran(quick_report: str) -> None:
    assert "could not run" not in quick_report
    for title in (
        "1. Tokens on the corpus",
        "2. Tokens on large real outputs",
        "3. Dollars",
        "4. Latency",
        "5. Scale",
        "6. Tool definitions",
    ):
        _section(quick_report, title)
    assert re.search(r"CPU: .+, \d+ cores", quick_report)


def test_offload_loses_no_byte_and_saves_tokens(quick_report: str) -> None:
    tokens = _section(quick_report, "1. Tokens on the corpus")
    row = next(line for line in tokens.splitlines() if line.startswith("| offload-mcp"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    tokens_in, tokens_out = (int(cells[i].replace(",", "")) for i in (2, 3))
    assert tokens_out < tokens_in
    assert cells[5] == "100.00%", row  # bytes recoverable
    assert cells[6] == "0", row  # outputs losing bytes
    restored = re.search(r"restored byte for byte: (\d+)/(\d+)", row)
    assert restored and restored.group(1) == restored.group(2)


def test_large_outputs_through_the_real_proxy_come_back(quick_report: str) -> None:
    large = _section(quick_report, "2. Tokens on large real outputs")
    summary = next(line for line in large.splitlines() if line.startswith("| offload-mcp proxy"))
    cells = [c.strip() for c in summary.strip("|").split("|")]
    assert cells[-1] == "100.0%", summary
    assert float(cells[2].rstrip("%")) > 90.0, summary  # a 585K-char git_log becomes a stub
    # The client-alone baseline loses the over-limit git_log, and the table says so.
    assert "**lost 100%**" in large


def test_skipped_peers_are_named(quick_report: str) -> None:
    peers_line = next(line for line in quick_report.splitlines() if line.startswith("- Peers:"))
    for peer in ("fastmcp", "headroom", "compressor"):
        if peer not in peers_line:
            assert f"peer `{peer}` skipped" in quick_report


def test_latency_table_has_direct_and_offload(quick_report: str) -> None:
    latency = _section(quick_report, "4. Latency")
    assert re.search(r"^\| direct \(no proxy\) \| [\d.]+ / [\d.]+", latency, re.M)
    assert re.search(r"^\| offload-mcp \| [\d.]+ / [\d.]+", latency, re.M)


def test_dollars_are_priced_by_the_economics_module_replay_uses(quick_report: str) -> None:
    """The no-proxy cost in the dollars table is replay's baseline for the same records: one formula."""
    from offload_mcp.analysis.replay import _dollars, read_records
    from offload_mcp.config import OffloadSettings

    dollars = _section(quick_report, "3. Dollars")
    header = next(line for line in dollars.splitlines() if line.startswith("| peer"))
    column = [c.strip() for c in header.strip("|").split("|")].index("claude-opus-4-6 cached")
    row = next(line for line in dollars.splitlines() if line.startswith("| no proxy"))
    shown = float([c.strip() for c in row.strip("|").split("|")][column].split()[0].lstrip("$").replace(",", ""))
    records = read_records(CORPUS, limit=250)  # the quick form's corpus records
    settings = OffloadSettings()
    assert settings.policy.prompt_caching and settings.policy.cache_ttl == "5m"
    model = "claude-opus-4-6"
    baseline = _dollars(records, [0.0] * len(records), [False] * len(records), settings, (model,))[model][
        "baseline_usd"
    ]
    assert shown == pytest.approx(baseline, abs=0.006)


def test_offload_timeline_times_every_segment_of_a_real_offload() -> None:
    """bench/offload_timeline.py instruments a real proxy: every segment it lists must have been traced."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "offload_timeline.py"), "--size", "0.2", "--calls", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = proc.stdout.splitlines()
    header = rows.index(next(r for r in rows if r.startswith("segment")))
    segments = rows[header + 1 : rows.index("")]
    assert len(segments) == 13, proc.stdout  # 12 segments and the proxy's own total
    for row in segments:
        assert re.search(r"\s\d+\.\d{3}(\s|$)", row), f"segment not traced: {row!r}"
    assert "200,000 chars, 3 calls through the proxy" in proc.stdout
    assert re.search(r"through the proxy [\d.]+ ms, direct [\d.]+ ms, ratio [\d.]+", proc.stdout)


def test_bench_dashboard_prints_both_times_their_ratio_and_each_peak_rss(tmp_path: Path) -> None:
    """bench/bench_dashboard.py on a small ledger: `stats --json`, the checkpoint's writing and the page,
    each in its own process."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "bench_dashboard.py"),
            "--events",
            "1000",
            "--keep",
            str(tmp_path / "l.db"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout)
    assert figures["events"] >= 1000 and figures["built_rows"] >= 1000
    assert figures["cold_over_stats_json"] == round(figures["dashboard_cold_s"] / figures["stats_json_s"], 4)
    assert figures["stats_json_peak_rss_mb"] >= figures["rss_at_start_mb"] > 0
    assert figures["dashboard_cold_peak_rss_mb"] > 0
    assert figures["recount_shown_after_s"] >= figures["dashboard_after_one_more_event_s"]
    assert figures["page_bytes"] > 10_000
    # The checkpoint: written by the first checkpointed report, then read by the page and by stats.
    assert figures["checkpoint_bytes"] > 1_000
    assert 0 < figures["checkpoint_write_s"] <= figures["checkpoint_report_s"]
    assert figures["stats_json_with_checkpoint_s"] > 0
