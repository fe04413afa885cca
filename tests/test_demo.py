"""`offload-mcp demo` end to end: a real proxy, a real downstream server, a real client; seconds; nothing left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from offload_mcp.commands import demo_workspace as demo_server
from support.processes import run_unprivileged
from support.zygote import prewarmed

OFFLOAD_MCP = str(Path(sys.executable).parent / "offload-mcp")


def processes_with_env(marker: str) -> list[str]:
    """Live processes whose environment carries `marker` (every child of the demo inherits it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


def run_demo(
    tmp_path: Path, *args: str, unprivileged: bool = False
) -> tuple[subprocess.CompletedProcess[str], float, Path]:
    tmpdir = tmp_path / "tmp"
    home = tmp_path / "home"
    tmpdir.mkdir()
    home.mkdir()
    if unprivileged:
        tmpdir.chmod(0o777)
        home.chmod(0o777)
    env = {
        **os.environ,
        "TMPDIR": str(tmpdir),
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "OFFLOAD_MCP_DEMO_TEST": str(tmp_path),
    }
    env.pop("OFFLOAD_MCP_CONFIG", None)
    started = time.monotonic()
    if unprivileged:
        proc = run_unprivileged([OFFLOAD_MCP, "demo", *args], env=env, cwd=tmp_path)
    else:
        proc = subprocess.run(
            prewarmed([OFFLOAD_MCP, "demo", *args]), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
        )
    return proc, time.monotonic() - started, tmpdir


def test_demo_runs_in_seconds_and_leaves_nothing_behind(tmp_path):
    proc, elapsed, tmpdir = run_demo(tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr + out
    assert elapsed < 60, f"the demo took {elapsed:.1f}s"

    # per call: what the server sent vs what the client received, with sizes
    for number, tool in enumerate(["git_status", "git_log", "read_file", "run_tests", "list_issues", "run_tests"], 1):
        assert f"{number}. {tool}(" in out
    sent_sizes = [int(m.replace(",", "")) for m in re.findall(r"^   server sent +([\d,]+) chars", out, re.M)]
    got_sizes = [int(m.replace(",", "")) for m in re.findall(r"^   client received +([\d,]+) chars", out, re.M)]
    assert sent_sizes == [
        len(demo_server.git_status_text()),
        len(demo_server.git_log_text()),
        len(demo_server.read_file_text()),
        len(demo_server.run_tests_text()),
        len(demo_server.list_issues_text()),
        len(demo_server.run_tests_text()),
    ]
    assert len(got_sizes) == 6 and got_sizes[0] == sent_sizes[0]  # a small result passes untouched
    assert all(got < sent for got, sent in zip(got_sizes[1:], sent_sizes[1:], strict=True))
    # the test run's stub names the failed test, and no colour escape reaches the client
    run_tests = out.split("4. run_tests(", 1)[1].split("\n5. ", 1)[0]
    received = run_tests.split("client received", 1)[1]
    assert "looks like a test log" in received
    assert "tests/billing/test_billing_exports.py::test_invoice_total_rounding FAILED" in received
    assert "\\e[" in run_tests.split("client received", 1)[0] and "\\e[" not in received

    # the end: tokens and dollars saved, and a detail brought back exactly
    assert "saved: the model kept ~" in out and "$" in out
    # both baselines, labelled: the raw results, and what Claude Code alone shows of them (the demo introduces
    # itself as Claude Code); Claude Code alone files the five results over 50,000 chars with a preview
    raw = re.search(r"^   against the raw results: (saved|cost) .*$", out, re.M)
    alone = re.search(r"^   against Claude Code alone: (saved|cost) .*$", out, re.M)
    assert raw and alone, out
    assert alone.group(0).endswith("Claude Code alone files 5 of these 6 result(s)")
    for line in (raw.group(0), alone.group(0)):
        assert not ("saved" in line and "cost" in line), line
    assert demo_server.NEEDLE_SUBJECT in out
    assert "byte-identical to what the server sent: yes" in out or "recall_tool_result(" in out
    assert "finished in" in out

    # nothing left behind: temp dir empty, no default ledger or config created, no process still running
    assert list(tmpdir.iterdir()) == []
    assert not (tmp_path / "home" / "state").exists() and not (tmp_path / "home" / "config").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "tmp"]
    assert processes_with_env(f"OFFLOAD_MCP_DEMO_TEST={tmp_path}") == []


def test_demo_observe_mode_keeps_the_ledger_when_asked_and_stats_reads_it(tmp_path):
    ledger = tmp_path / "demo.db"
    proc, _, tmpdir = run_demo(tmp_path, "--observe", "--ledger", str(ledger))
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    # observe mode: every result reaches the client unchanged; the demo says what would have been saved
    assert "observe mode" in out and "would have kept" in out
    assert out.count("(unchanged)") == 6
    assert f"offload-mcp stats --ledger {ledger}" in out
    assert list(tmpdir.iterdir()) == []

    stats = subprocess.run(
        prewarmed([OFFLOAD_MCP, "stats", "--ledger", str(ledger), "--json"]), capture_output=True, text=True, timeout=60
    )
    data = json.loads(stats.stdout)
    assert data["observe_mode"] is True and data["totals"]["results"] == 6
    assert data["totals"]["tokens_saved"] == 0 and data["totals"]["would_tokens_saved"] > 100_000
    # the ledger recorded the client the demo introduced itself as; stats counts against it alone too
    assert data["client"] == "claude-code" and data["client_alone_fates"] == {"file": 5, "inline": 1}
    assert "against Claude Code alone: would have" in out

    again = tmp_path / "again"
    again.mkdir()
    refused, _, _ = run_demo(again, "--ledger", str(ledger))
    assert refused.returncode == 2 and "exists" in refused.stderr and "--ledger" in refused.stderr


def test_demo_refuses_a_ledger_it_cannot_create_before_the_session(tmp_path, read_only_dir):
    """Before: the whole session ran unshaped, then `demo failed: LedgerUnavailable` and a bug-report hint."""
    ledger = read_only_dir / "l.db"
    proc, _, tmpdir = run_demo(tmp_path, "--ledger", str(ledger), unprivileged=True)
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert f"--ledger: cannot create the ledger {ledger}: {read_only_dir}" in proc.stderr
    assert proc.stdout == "" and "demo failed" not in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmpdir.iterdir()) == []
    directory, _, _ = run_demo(tmp_path / "tmp", "--ledger", str(tmp_path))
    assert (
        directory.returncode == 2 and f"{tmp_path} is a directory; a ledger file path is expected" in directory.stderr
    )
    (tmp_path / "url").mkdir()
    url, _, url_tmp = run_demo(tmp_path / "url", "--ledger", "postgresql://offload:s3cret@db/offload")
    assert url.returncode == 2 and "Traceback" not in url.stderr and "s3cret" not in url.stderr
    assert "--ledger postgresql://offload:***@db/offload: the demo keeps its ledger in a local file" in url.stderr
    assert list(url_tmp.iterdir()) == [] and not (tmp_path / "url" / "postgresql:").exists()
    # A model without a price: the gate would never fire and the demo would show nothing offloaded (replay refuses it too).
    (tmp_path / "unpriced").mkdir()
    unpriced, _, _ = run_demo(tmp_path / "unpriced", "--model", "gpt-9")
    assert unpriced.returncode == 2 and "--model gpt-9: no pricing row for this model" in unpriced.stderr
    assert "Traceback" not in unpriced.stderr and "git_log" not in unpriced.stdout


def test_a_model_newer_than_the_price_table_is_priced_by_its_family_and_the_demo_says_so(tmp_path):
    """Issue 39: Claude Code's current model had no row; the demo then said nothing and offloaded less."""
    proc, _, _ = run_demo(tmp_path, "--model", "claude-opus-5-5")
    assert proc.returncode == 0, proc.stderr
    assert "pricing: model 'claude-opus-5-5' has no pricing row: priced as claude-opus-4-8" in proc.stdout
    assert "trm_" in proc.stdout  # it ran, and offloaded


def test_demo_with_offload_settings_recalls_the_detail_from_the_ledger(tmp_path):
    """-c FILE applies its offload settings; the long git log is offloaded to a stub and recall_tool_result brings the commit back."""
    config = tmp_path / "offload.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {}, "offload": {"reducers": {"pipeline": ["dedup", "extract", "smartcrush", "linecap"]}}}
        )
    )
    proc, _, tmpdir = run_demo(tmp_path, "-c", str(config))
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "[offloaded tool result trm_" in out
    assert "recall_tool_result(mem_id='trm_" in out and "query='#4821'" in out
    assert demo_server.NEEDLE_SUBJECT in out.split("bring a detail back")[1]
    assert list(tmpdir.iterdir()) == []

    bad = tmp_path / "bad.json"
    bad.write_text('{"offload": {"mode": "sometimes"}}')
    refused, _, _ = run_demo(tmp_path / "tmp", "-c", str(bad))
    assert refused.returncode == 2 and "offload.mode" in refused.stderr and "Traceback" not in refused.stderr
