"""tools/list on the wire, read raw (the SDK client drops unknown fields), and search + invoke end to end.

Each test starts the real `offload-mcp serve` over stdio in front of real
servers (PyPI mcp-server-git and the GitHub-like catalog server under
bench/data/catalog) and speaks JSON-RPC to it line by line.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from offload_mcp.store.ledger import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.proxy import RawSession, initialize_request, proxy_http, raw_session
from support.servers import GIT_SERVER, ROOT, python_entry, write_config

CATALOG_SERVER = ROOT / "bench" / "data" / "catalog" / "catalog_server.py"


def servers() -> dict[str, Any]:
    return {
        "git": python_entry(GIT_SERVER, "--repository", str(ROOT)),
        "github": python_entry(str(CATALOG_SERVER)),
    }


def config_for(tmp_path: Path, mode: str, **catalog: Any) -> Path:
    offload = {
        "catalog": {"deferral": mode, "hot_tools": ["git_status", "github/get_me"], **catalog},
        "ledger": {"path": str(tmp_path / "ledger.db")},
    }
    return write_config(tmp_path, servers(), offload, name=f"{mode}.json")


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


@pytest.mark.parametrize("mode", ["hint", "search", "off"])
def test_tools_list_on_the_wire_is_marked_per_mode_and_byte_stable(tmp_path, mode):
    config = config_for(tmp_path, mode)
    with raw_session(config) as session:
        first_raw, tools = session.list_tools()
        second_raw, _ = session.list_tools()
    with raw_session(config) as other:
        third_raw, _ = other.list_tools()
        if mode != "search":  # the search-mode tools exist only in search mode
            refused = other.call("search_tools", {"query": "git log"})
            assert refused["isError"] is True and "Unknown tool" in text(refused)
    assert first_raw == second_raw == third_raw  # across calls and sessions, same config and history

    by_name = {t["name"]: t for t in tools}
    for own in ("recall_tool_result", "context_guru_expand"):
        assert own in by_name and "defer_loading" not in by_name[own]
    if mode == "hint":
        assert len(tools) == 12 + 91 + 2
        cold = by_name["git_log"]
        assert cold["defer_loading"] is True
        for hot in ("git_status", "get_me", "recall_tool_result", "context_guru_expand"):
            assert "defer_loading" not in by_name[hot]
            assert by_name[hot]["_meta"]["anthropic/alwaysLoad"] is True
            assert "anthropic/searchHint" not in by_name[hot]["_meta"]
        assert by_name["git_status"]["_meta"]["anthropic/maxResultSizeChars"] == 100_000
        assert by_name["get_me"]["_meta"]["anthropic/maxResultSizeChars"] == 100_000
        # Hint mode is never larger than off (issue 13 #8): these definitions imply little that can be trimmed
        # (mcp-server-git's derived titles), so the budget runs out after defer_loading, before the cold tools'
        # result bound and hints (catalog/deferral.py hint_listing); every mark: test_hint_listing.py.
        deferred = [t for t in tools if t.get("defer_loading")]
        assert len(tools) - 4 > len(deferred) > 90
        assert all("anthropic/alwaysLoad" not in (t.get("_meta") or {}) for t in deferred)
        assert "title" not in cold["inputSchema"]["properties"]["repo_path"]  # "Repo Path" restates the name
    elif mode == "search":
        assert [t["name"] for t in tools] == [
            "git_status",
            "get_me",
            "recall_tool_result",
            "context_guru_expand",
            "search_tools",
            "invoke_tool",
        ]
        assert by_name["search_tools"]["description"].endswith("Servers searched: git (12 tools), github (91 tools).")
        assert all(t["_meta"]["anthropic/alwaysLoad"] is True for t in tools)
        assert not any("defer_loading" in t for t in tools)
    else:
        assert len(tools) == 12 + 91 + 2
        assert not any("defer_loading" in t or "anthropic/alwaysLoad" in (t.get("_meta") or {}) for t in tools)
        assert "_meta" not in by_name["git_log"]


def test_search_then_invoke_reaches_the_real_server_through_the_proxy(tmp_path):
    with raw_session(config_for(tmp_path, "search")) as session:
        found = session.call("search_tools", {"query": "show the commit logs"})
        assert not found.get("isError"), text(found)
        matches = json.loads(text(found))["matches"]
        assert matches[0]["name"] == "git_log" and matches[0]["server"] == "git"
        assert "repo_path" in matches[0]["inputSchema"]["properties"]

        by_pattern = json.loads(text(session.call("search_tools", {"pattern": "^git_diff"})))
        assert [m["name"] for m in by_pattern["matches"]] == ["git_diff", "git_diff_staged", "git_diff_unstaged"]

        log = session.call("invoke_tool", {"name": "git_log", "arguments": {"repo_path": str(ROOT), "max_count": 1}})
        assert not log.get("isError"), text(log)
        assert "Commit history:" in text(log) and text(log).count("Commit: ") == 1

        echoed = session.call(
            "invoke_tool", {"name": "create_issue", "arguments": {"owner": "o", "repo": "r", "title": "Bug"}}
        )
        assert text(echoed) == 'create_issue called with {"owner": "o", "repo": "r", "title": "Bug"}'


def test_invoke_with_bad_arguments_names_them_and_calls_nothing(tmp_path):
    with raw_session(config_for(tmp_path, "search")) as session:
        bad = session.call("invoke_tool", {"name": "git_log", "arguments": {"repo": str(ROOT), "max_count": "3"}})
        assert bad["isError"] is True
        message = text(bad)
        assert "missing required argument(s): repo_path" in message
        assert "unknown argument(s): repo" in message
        assert "max_count: '3' is not of type 'integer'" in message
        assert "nothing was called" in message

        unknown = session.call("invoke_tool", {"name": "git_logs", "arguments": {}})
        assert unknown["isError"] is True and "no tool named `git_logs`" in text(unknown) and "git_log" in text(unknown)

        # a name or argument key of 1 MB is repeated as its start and length, not whole
        huge = session.call("invoke_tool", {"name": "git_logs" + "x" * 1_000_000, "arguments": {}})
        assert huge["isError"] is True and len(text(huge)) < 400 and "… (1,000,008 chars)" in text(huge)
        wide = session.call("invoke_tool", {"name": "git_log", "arguments": {}, "k" * 1_000_000: 1})
        assert wide["isError"] is True and len(text(wide)) < 400 and "… (1,000,000 chars)" in text(wide)

        flat = session.call("invoke_tool", {"name": "git_log", "repo_path": str(ROOT)})
        assert flat["isError"] is True and "put the tool's own arguments inside `arguments`" in text(flat)

        own = session.call("invoke_tool", {"name": "recall_tool_result", "arguments": {}})
        assert own["isError"] is True and "call it directly" in text(own)

        empty = session.call("search_tools", {"query": "   "})
        assert empty["isError"] is True and "no searchable words" in text(empty)

        risky = session.call("search_tools", {"pattern": "(a+)+$"})
        assert risky["isError"] is True and "backtrack catastrophically" in text(risky)

        # the session still works after every refusal
        assert not session.call("invoke_tool", {"name": "get_me", "arguments": {}}).get("isError")

    # every refusal is an event with its reason, for stats
    ledger = Ledger.open(LedgerSettings(path=tmp_path / "ledger.db"))
    try:
        events = list(ledger.events(kinds=["invoke", "tool_search"]))
        seen = [(e["kind"], e["verdict"], e["reason"]) for e in events]
        assert max(len(str(e["detail"])) for e in events) < 1_000
    finally:
        ledger.close()
    assert seen == [
        ("invoke", "refused", "bad_arguments"),
        ("invoke", "refused", "unknown_tool"),
        ("invoke", "refused", "unknown_tool"),  # the 1 MB name, recorded clipped
        ("invoke", "refused", "bad_arguments"),
        ("invoke", "refused", "bad_arguments"),
        ("invoke", "refused", "own_tool"),
        ("tool_search", "refused", "empty_query"),
        ("tool_search", "refused", "refused_pattern"),
    ]


def test_hot_set_is_learned_from_calls_in_earlier_sessions(tmp_path):
    config = config_for(tmp_path, "search", learn_min_calls=3)
    with raw_session(config) as first:
        _, before = first.list_tools()
        assert "git_log" not in {t["name"] for t in before}
        for count in (1, 2, 3):
            result = first.call(
                "invoke_tool", {"name": "git_log", "arguments": {"repo_path": str(ROOT), "max_count": count}}
            )
            assert not result.get("isError"), text(result)
        first.call("invoke_tool", {"name": "list_issues", "arguments": {"owner": "o", "repo": "r"}})
        _, during = first.list_tools()
        assert during == before  # decided at the session's start: it never flaps mid-session
    with raw_session(config) as second:
        raw, after = second.list_tools()
        names = [t["name"] for t in after]
        assert names == [
            "git_status",
            "git_log",
            "get_me",
            "recall_tool_result",
            "context_guru_expand",
            "search_tools",
            "invoke_tool",
        ]
        assert after[1]["_meta"]["anthropic/alwaysLoad"] is True
        assert "list_issues" not in names  # one call is under learn_min_calls
    with raw_session(config) as third:
        assert third.list_tools()[0] == raw  # same history, same bytes


def test_deferral_on_the_command_line_with_an_inline_server(tmp_path):
    session = RawSession(
        ["--deferral", "search", "--ledger", str(tmp_path / "l.db"), "--", GIT_SERVER, "--repository", str(ROOT)]
    )
    try:
        session.initialize()
        _, tools = session.list_tools()
    finally:
        session.close()
    assert [t["name"] for t in tools] == ["recall_tool_result", "context_guru_expand", "search_tools", "invoke_tool"]


def http_tools_list(url: str) -> bytes:
    """One streamable-HTTP session by raw POSTs: initialize, initialized, tools/list; the raw response bytes."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def post(body: dict[str, Any]) -> tuple[dict[str, str], bytes]:
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return {k.lower(): v for k, v in response.headers.items()}, response.read()

    got, _ = post(initialize_request("2025-11-25", client="raw"))
    if "mcp-session-id" in got:
        headers["Mcp-Session-Id"] = got["mcp-session-id"]
    headers["MCP-Protocol-Version"] = "2025-11-25"
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    _, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    # an SSE event (`data: {...}`) or a plain JSON body, depending on the server's response mode
    data = next((line[len(b"data: ") :] for line in body.splitlines() if line.startswith(b"data: ")), body)
    return data


def test_tools_list_over_streamable_http_carries_the_marks_and_is_byte_stable(tmp_path):
    config = config_for(tmp_path, "hint")
    with proxy_http(["--config", str(config)]) as url:
        first = http_tools_list(url)
        second = http_tools_list(url)  # a second session on the same proxy
    assert first == second
    tools = {t["name"]: t for t in json.loads(first)["result"]["tools"]}
    assert tools["git_log"]["defer_loading"] is True and "defer_loading" not in tools["git_status"]
    assert tools["git_status"]["_meta"]["anthropic/alwaysLoad"] is True
