"""Stats on ledgers written by real sessions through the proxy (enforce and observe mode)."""

from __future__ import annotations

import json
import re
import subprocess

from offload_mcp.analysis.reports import report_from_ledger
from offload_mcp.analysis.stats import exit_summary
from offload_mcp.policy.settings import PolicySettings
from offload_mcp.store import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.proxy import proxy_session, text_of
from support.servers import fixture_entry, write_config
from support.zygote import prewarmed

# No collapse/extract: a 300K-char text then reaches the policy whole and is offloaded (over the client limit).
OFFLOAD = {
    "reducers": {"pipeline": ["dedup", "smartcrush", "linecap"], "smartcrush": {"min_chars": 0}}
}  # the 25K json_array is smartcrush-sized only without its 60K floor


async def play_session(config, ledger_path):
    async with proxy_session(["-c", str(config), "--ledger", str(ledger_path)]) as s:
        big = await s.call_tool("make_text", {"size": 300_000})
        listing = await s.call_tool("json_array", {"count": 500})
        small = await s.call_tool("echo", {"text": "hi"})
        mem = re.search(r"trm_[0-9a-f]{16}", text_of(big))
        recalled = (
            await s.call_tool("recall_tool_result", {"mem_id": mem.group(0), "query": "line 4321:"}) if mem else None
        )
        return big, listing, small, recalled


def stats_json(ledger_path, *extra):
    proc = subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "stats", "--ledger", str(ledger_path), "--json", *extra]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def test_stats_of_a_real_enforcing_session(tmp_path):
    config = write_config(tmp_path, {"fx": fixture_entry()}, OFFLOAD)
    ledger_path = tmp_path / "ledger.db"
    big, listing, small, recalled = await play_session(config, ledger_path)
    assert len(text_of(big)) < 5_000 and recalled is not None and "line 4321:" in text_of(recalled)
    assert len(text_of(listing)) < 2_000 and text_of(small) == "hi"

    data = stats_json(ledger_path)
    rows = {(r["server"], r["tool"]): r for r in data["rows"]}
    make_text, json_array, echo = rows[("fx", "make_text")], rows[("fx", "json_array")], rows[("fx", "echo")]
    assert (make_text["results"], make_text["offloaded"], make_text["recalls"]) == (1, 1, 1)
    assert (json_array["results"], json_array["reduced"], json_array["offloaded"]) == (1, 1, 0)
    assert (echo["results"], echo["reduced"], echo["tokens_saved"]) == (1, 0, 0)
    assert make_text["tokens_saved"] == (300_000 - make_text["chars_out"]) / 4
    assert data["decisions"]["offload/over_client_limit"] == 1
    assert data["reducer_acts"]["smartcrush"] == 1
    assert data["recall_calls"] == 1 and data["failed_recalls"] == 0
    assert data["recall"]["observed"] == 1.0 and data["recall"]["samples"] == 1
    assert data["horizon"]["observed"] == 4  # read by one request, then json_array, echo and the recall followed
    assert data["totals"]["usd_saved"] > 0 and data["observe_mode"] is False
    assert data["sessions"] == 1

    ledger = Ledger.open(LedgerSettings(), ledger_path)
    try:
        summary = exit_summary(ledger, None, PolicySettings())
        (session,) = {e["session_id"] for e in ledger.events()}
        assert exit_summary(ledger, [session]) == summary
        assert exit_summary(ledger, ["another-session"]) == ""
    finally:
        ledger.close()
    assert "offloaded 1 result(s) to the ledger (over_client_limit x1)" in summary
    assert "reducers cut 1 of 3 results (smartcrush x1)" in summary
    assert "1 recall(s), 0 expand(s)" in summary

    table = subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "stats", "--ledger", str(ledger_path)]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0 and "make_text" in table.stdout and "offload/over_client_limit" in table.stdout


async def test_stats_of_a_real_observing_session(tmp_path):
    config = write_config(tmp_path, {"fx": fixture_entry()}, {**OFFLOAD, "mode": "observe"})
    ledger_path = tmp_path / "ledger.db"
    big, listing, small, recalled = await play_session(config, ledger_path)
    # observe mode: the client gets every result unchanged
    assert len(text_of(big)) == 300_000 and recalled is None
    assert len(json.loads(text_of(listing))) == 500

    data = stats_json(ledger_path)
    t = data["totals"]
    assert data["observe_mode"] is True and t["observed"] == 3
    assert t["tokens_saved"] == 0 and t["usd_saved"] == 0
    assert t["offloaded"] == 1 and t["reduced"] == 1
    assert t["would_tokens_saved"] > (300_000 - 1_000) / 4
    assert t["would_usd_saved"] > 0
    assert "observe mode" in data["recall"]["note"]

    ledger = Ledger.open(LedgerSettings(), ledger_path)
    try:
        summary = exit_summary(ledger)
    finally:
        ledger.close()
    assert "would have offloaded 1 result(s)" in summary and "passed through unchanged" in summary


def test_policy_model_from_config_prices_the_report(tmp_path):
    ledger_path = tmp_path / "l.db"
    Ledger.open(LedgerSettings(), ledger_path).close()
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"policy": {"model": "claude-haiku-4-5"}})
    data = stats_json(ledger_path, "-c", str(config))
    assert data["model"] == "claude-haiku-4-5"
    ledger = Ledger.open(LedgerSettings(), ledger_path)
    try:
        assert report_from_ledger(ledger).model == PolicySettings().model
    finally:
        ledger.close()


async def run_with_stderr(args, tmp_path, calls, client_info=None):
    """`offload-mcp serve ARGS` over stdio with its stderr in a file; returns (results, stderr after exit)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from support.proxy import OFFLOAD_MCP, proxy_env
    from support.servers import ROOT

    params = StdioServerParameters(command=OFFLOAD_MCP, args=["serve", *args], env=proxy_env(), cwd=str(ROOT))
    log = tmp_path / "stderr.txt"
    results = []
    with open(log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, client_info=client_info) as session:
                await session.initialize()
                for name, arguments in calls:
                    results.append(await session.call_tool(name, arguments))
    return results, log.read_text()


async def test_serve_prints_an_exit_summary_of_the_levers_that_fired(tmp_path):
    config = write_config(tmp_path, {"fx": fixture_entry()}, OFFLOAD)
    args = ["-c", str(config), "--ledger", str(tmp_path / "l.db")]
    _, stderr = await run_with_stderr(
        args, tmp_path, [("make_text", {"size": 300_000}), ("json_array", {"count": 500})]
    )
    assert "offload-mcp summary:" in stderr
    assert "offloaded 1 result(s) to the ledger (over_client_limit x1)" in stderr
    assert "reducers cut 1 of 2 results (smartcrush x1)" in stderr

    # a session where nothing fired stays quiet (the earlier session's events are not this process's)
    _, quiet = await run_with_stderr(args, tmp_path, [("echo", {"text": "hi"})])
    assert "summary" not in quiet


async def test_serve_observe_flag_passes_results_through_and_says_what_it_would_have_done(tmp_path):
    config = write_config(tmp_path, {"fx": fixture_entry()}, OFFLOAD)
    args = ["--observe", "-c", str(config), "--ledger", str(tmp_path / "l.db")]
    (big,), stderr = await run_with_stderr(args, tmp_path, [("make_text", {"size": 300_000})])
    assert len(text_of(big)) == 300_000
    assert "would have offloaded 1 result(s)" in stderr and "passed through unchanged" in stderr
    assert stats_json(tmp_path / "l.db")["observe_mode"] is True


async def test_serve_exit_summary_counts_against_the_raw_results_and_claude_code_alone(tmp_path):
    import mcp_types as types

    config = write_config(tmp_path, {"fx": fixture_entry()}, OFFLOAD)
    claude_code = types.Implementation(name="claude-code", version="2.1.0")
    for observe in ([], ["--observe"]):
        args = [*observe, "-c", str(config), "--ledger", str(tmp_path / f"l{len(observe)}.db")]
        calls = [("make_text", {"size": 450_000}), ("make_text", {"size": 120_000}), ("json_array", {"count": 500})]
        _, stderr = await run_with_stderr(args, tmp_path, calls, client_info=claude_code)
        summary = stderr.split("offload-mcp summary:", 1)[1].splitlines()
        would = "would have " if observe else ""
        assert any(line.startswith(f"  against the raw results: {would}saved ~$") for line in summary), summary
        alone = next(line for line in summary if line.startswith("  against Claude Code alone: "))
        assert alone.endswith("Claude Code alone rejects 1 and files 1 of these 3 result(s)")
        for line in summary:  # one sign a line: never a saving and a cost at once
            assert not (("saved" in line or "kept" in line) and ("cost" in line or "more tokens" in line)), line
