"""`offload-mcp catalog` and `offload-mcp toolset-config` against real downstream servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from offload_mcp.store.ledger import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.decision_records import decision_record
from support.proxy import OFFLOAD_MCP, RawSession, proxy_env
from support.servers import ROOT, python_entry, write_config
from support.zygote import prewarmed

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")
CATALOG_SERVER = ROOT / "bench" / "data" / "catalog" / "catalog_server.py"


def config(tmp_path: Path, **catalog: Any) -> Path:
    servers = {
        "git": python_entry(GIT_SERVER, "--repository", str(ROOT)),
        "github": python_entry(str(CATALOG_SERVER)),
        "broken": {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.stderr.write('no such thing\\n'); sys.exit(3)"],
        },
    }
    offload = {"catalog": {"hot_tools": ["git_status"], **catalog}, "ledger": {"path": str(tmp_path / "ledger.db")}}
    return write_config(tmp_path, servers, offload)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        prewarmed([OFFLOAD_MCP, *args]), capture_output=True, text=True, env=proxy_env(), cwd=str(ROOT), timeout=120
    )


def seed_history(path: Path) -> None:
    ledger = Ledger.open(LedgerSettings(path=path))
    try:
        for tool, times in (("list_issues", 5), ("get_issue", 3), ("get_me", 1)):
            for _ in range(times):
                ledger.record_event(decision_record("earlier", "github", tool, "keep", "small").ledger_event())
    finally:
        ledger.close()


def test_catalog_reports_tokens_per_mode_and_server_and_why_tools_are_hot(tmp_path):
    cfg = config(tmp_path)
    seed_history(tmp_path / "ledger.db")
    done = run("catalog", "--config", str(cfg), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["configured_mode"] == "hint"
    assert set(report["servers"]) == {"git", "github", "(offload-mcp)"}
    assert report["servers"]["github"]["tools"] == 91 and report["servers"]["git"]["tools"] == 12
    assert "broken" in report["failed_servers"] and "no such thing" in report["failed_servers"]["broken"]

    total = report["total"]
    assert total["off"]["listed_tools"] == 12 + 91 + 2 == total["off"]["eager_tools"]
    assert total["hint"]["listed_tools"] == total["off"]["listed_tools"]
    # The marks are paid for by trimming what the protocol implies, so never more than off (issue 13 #8)...
    assert total["hint"]["listed_tokens"] <= total["off"]["listed_tokens"]
    # ...and the hot set loads up front, with the last 7 cold tools: git's derived titles pay for deferring
    # the others (the hand-written github definitions have nothing to trim; catalog/deferral.py hint_listing).
    assert total["hint"]["eager_tools"] == 2 + 1 + 2 + 7, total["hint"]
    assert total["search"]["listed_tools"] == 2 + 1 + 2 + 2
    assert report["eager_cut_vs_off"]["search"] >= 0.85
    assert report["servers"]["github"]["search"]["listed_tools"] == 2  # the learned list_issues, get_issue

    hot = {item["name"]: item for item in report["hot"]}
    assert hot["recall_tool_result"]["reason"] == hot["context_guru_expand"]["reason"] == "own"
    assert hot["git_status"]["reason"] == "glob" and "'git_status'" in hot["git_status"]["detail"]
    assert hot["list_issues"]["reason"] == "learned" and "5 times" in hot["list_issues"]["detail"]
    assert hot["get_issue"]["server"] == "github"
    assert "get_me" not in hot
    assert report["learning"] == "learned"

    again = run("catalog", "--config", str(cfg), "--json")
    assert again.stdout == done.stdout  # same config and history, same report

    text = run("catalog", "--config", str(cfg))
    assert text.returncode == 0
    assert (
        "cut vs off" in text.stdout
        and "learned: called 5 times" in text.stdout
        and "Not serving: broken" in text.stdout
    )


def test_catalog_estimate_matches_the_wire(tmp_path):
    cfg = config(tmp_path, deferral="off", learn_hot_tools=False)
    report = json.loads(run("catalog", "--config", str(cfg), "--json").stdout)
    session = RawSession(["--config", str(cfg)])
    try:
        session.initialize()
        raw, tools = session.list_tools()
    finally:
        session.close()
    wire_chars = sum(len(json.dumps(t, separators=(",", ":"), ensure_ascii=False)) for t in tools)
    estimated = report["total"]["off"]["listed_tokens"] * 4
    assert abs(estimated - wire_chars) / wire_chars < 0.01, (estimated, wire_chars)


def test_toolset_config_defers_everything_but_the_hot_set(tmp_path):
    cfg = config(tmp_path)
    seed_history(tmp_path / "ledger.db")
    done = run(
        "toolset-config", "--config", str(cfg), "--url", "https://proxy.example/mcp", "--token-env", "PROXY_TOKEN"
    )
    assert done.returncode == 0, done.stderr
    block = json.loads(done.stdout)
    assert block["mcp_servers"] == [
        {
            "type": "url",
            "url": "https://proxy.example/mcp",
            "name": "offload-mcp",
            "authorization_token": "${PROXY_TOKEN}",
        }
    ]
    search, toolset = block["tools"]
    assert search == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert toolset["type"] == "mcp_toolset" and toolset["mcp_server_name"] == "offload-mcp"
    assert toolset["default_config"] == {"defer_loading": True}
    assert toolset["configs"] == {
        name: {"defer_loading": False}
        for name in ("git_status", "get_issue", "list_issues", "recall_tool_result", "context_guru_expand")
    }
    assert "anthropic-beta: mcp-client-2025-11-20" in done.stderr

    regex = json.loads(run("toolset-config", "--config", str(cfg), "--search", "regex").stdout)
    assert regex["tools"][0]["type"] == "tool_search_tool_regex_20251119"


def test_bad_config_is_a_clear_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {}, "offload": {"catalog": {"deferral": "lazy"}}}')
    done = run("catalog", "--config", str(bad))
    assert done.returncode == 2 and "offload.catalog.deferral" in done.stderr
