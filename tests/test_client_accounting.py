"""Client-aware accounting (issue 39): a session through the real proxy, counted against what its client alone shows.

Four big results go through `offload-mcp serve` over stdio from a client that introduces itself as Claude Code does
(`clientInfo.name` `claude-code`). The ledger records the client with each decision; `stats --json` then counts every
result against the raw bytes and against Claude Code alone, and the second figure must agree with
`replay --client claude-code` on the same raw results (fetched from the same server directly, no proxy).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from offload_mcp.analysis.stats import exit_summary
from offload_mcp.policy.settings import PolicySettings
from offload_mcp.store import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.proxy import proxy_session
from support.servers import fixture_cmd, fixture_entry, write_config
from support.zygote import prewarmed

CLAUDE_CODE = types.Implementation(name="claude-code", version="2.1.0")
"""What Claude Code sends at initialize (its bundled MCP client: name `claude-code`, title `Claude Code`)."""

BIG_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("make_text", {"size": 1_467_635}),  # Claude Code alone rejects it (over 400,000 chars: an error naming a file)
    ("make_text", {"size": 300_000}),  # Claude Code alone files it with a 2,000-char preview
    ("json_records", {"count": 3_000}),  # structuredContent: Claude Code reads that channel; filed too
    ("make_text", {"size": 70_000}),  # filed too
]


async def _raw_results() -> list[types.CallToolResult]:
    """The same four calls straight to the fixture server: the results Claude Code alone would get."""
    cmd = fixture_cmd()
    async with stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:])) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool(tool, args) for tool, args in BIG_CALLS]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(prewarmed(["-m", "offload_mcp.cli", *args]), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("mode", ["enforce", "observe"])
async def test_stats_against_claude_code_alone_agrees_with_replay(tmp_path: Path, mode: str) -> None:
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"mode": mode})
    ledger_path = tmp_path / "ledger.db"
    async with proxy_session(["-c", str(config), "--ledger", str(ledger_path)], client_info=CLAUDE_CODE) as s:
        listed = {tool.name for tool in (await s.list_tools()).tools}
        names = [next(n for n in listed if n.endswith(tool)) for tool, _ in BIG_CALLS]
        for name, (_, args) in zip(names, BIG_CALLS, strict=True):
            assert not (await s.call_tool(name, args)).is_error

    stats = _run("stats", "--ledger", str(ledger_path), "--json")
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["client"] == "claude-code" and data["clients"] == {"claude-code": 4}
    assert data["client_alone_fates"] == {"file": 3, "rejected": 1}
    t = data["totals"]
    would = "would_" if mode == "observe" else ""
    against_client = t[f"{would}client_tokens_saved"]
    against_raw = t[f"{would}tokens_saved"]

    # The same raw results, replayed as one trajectory with the same config, seen by Claude Code.
    corpus = tmp_path / "session.jsonl"
    with corpus.open("w") as out:
        for step, (name, (_, args), raw) in enumerate(zip(names, BIG_CALLS, await _raw_results(), strict=True)):
            record: dict[str, Any] = {"tool": name, "call": json.dumps(args), "traj": "s", "step": step}
            record["output"] = "\n".join(b.text for b in raw.content if isinstance(b, types.TextContent))
            if raw.structured_content is not None:
                record["structured"] = raw.structured_content
            out.write(json.dumps(record) + "\n")
    enforce = write_config(tmp_path, {"fx": fixture_entry()}, {"mode": "enforce"}, name="replay.json")
    replay = _run("replay", str(corpus), "-c", str(enforce), "--client", "claude-code", "--json")
    assert replay.returncode == 0, replay.stderr
    r = json.loads(replay.stdout)
    replay_against_client = (r["client_alone"]["chars_out"] - r["chars_out"]) / 4
    assert r["client_alone"]["fates"] == {"file": 3, "rejected": 1}

    assert against_client == pytest.approx(replay_against_client, rel=0.01)
    # Against Claude Code alone the stubs cost tokens (a rejection is one line); against the raw bytes they save
    # almost all of them. Both are reported, and neither is the other.
    assert against_client < 0 < against_raw
    assert against_raw > 450_000

    ledger = Ledger.open(LedgerSettings(), ledger_path)
    try:
        summary = exit_summary(ledger, None, PolicySettings())
    finally:
        ledger.close()
    verb = "would have " if mode == "observe" else ""
    assert f"against the raw results: {verb}saved ~$" in summary
    alone = next(line for line in summary.splitlines() if "against Claude Code alone:" in line)
    # a net cost, in dollars or (under half a cent) in tokens: never a saving
    assert f"against Claude Code alone: {verb}cost ~$" in alone or f"against Claude Code alone: {verb}put ~" in alone
    assert "Claude Code alone rejects 1 and files 3 of these 4 result(s)" in summary
    for line in summary.splitlines():
        assert not ("saved" in line and "cost" in line), line


def test_stats_names_a_client_for_a_ledger_recorded_before_clients_were(tmp_path: Path) -> None:
    old = Path(__file__).parent / "fixtures" / "ledgers" / "ledger_v1.db"
    copy = tmp_path / "v1.db"
    copy.write_bytes(old.read_bytes())
    plain = json.loads(_run("stats", "--ledger", str(copy), "--json").stdout)
    assert plain["client"] == "plain" and plain["client_source"] == "recorded"
    named = _run("stats", "--ledger", str(copy), "--json", "--client", "claude-code")
    assert named.returncode == 0, named.stderr
    data = json.loads(named.stdout)
    assert data["client"] == "claude-code" and data["client_source"] == "--client"
    # its two offloaded git logs are over 50,000 chars: Claude Code alone files them with a preview
    assert data["client_alone_fates"] == {"file": 2, "inline": 5}
    assert data["totals"]["tokens_saved"] == plain["totals"]["tokens_saved"]  # the raw baseline does not move
    assert data["totals"]["client_tokens_saved"] != plain["totals"]["client_tokens_saved"]
    table = _run("stats", "--ledger", str(copy), "--client", "claude-code")
    assert table.returncode == 0 and "vs Claude Code alone" in table.stdout
    bad = _run("stats", "--ledger", str(copy), "--client", "cursor")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "claude-code" in bad.stderr


async def test_a_postgresql_ledger_records_the_client_too(tmp_path: Path, pg_url: str) -> None:
    config = write_config(tmp_path, {"fx": fixture_entry()}, {})
    async with proxy_session(["-c", str(config), "--ledger", pg_url], client_info=CLAUDE_CODE) as s:
        assert not (await s.call_tool("make_text", {"size": 300_000})).is_error
        assert not (await s.call_tool("echo", {"text": "hi"})).is_error
    stats = _run("stats", "--ledger", pg_url, "--json")
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["clients"] == {"claude-code": 2} and data["client_alone_fates"] == {"file": 1, "inline": 1}
    assert data["totals"]["tokens_saved"] > 70_000 and abs(data["totals"]["client_tokens_saved"]) < 2_000
