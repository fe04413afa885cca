"""The first session after `offload-mcp init`, with no config edits (issue 39).

Two promises of the config init writes for Claude Code, checked against real parts:
- the tools/list the proxy sends is no larger than the wrapped servers' own lists together
  (real mcp-server-git and server-filesystem, read raw over stdio, direct and through the proxy);
- a 1 MB result reaches Claude Code's model as a stub, not as "exceeds maximum allowed tokens"
  (the real Claude Code CLI headless, its own tool search left at its default, against the fake
  Messages API), where the same call without the proxy is refused.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.claude_code import CLAUDE, PERSISTED, assert_inline, results_of, run_claude
from support.proxy import TRM, RawSession, proxy_env
from support.servers import GIT_SERVER, NPM_BIN, ROOT, needs_npm, python_entry
from support.servers import HOSTILE_SERVER as HOSTILE
from support.zygote import prewarmed

ONE_MB = 1_000_000


def run_init(tmp_path: Path, servers: dict[str, Any]) -> tuple[Path, list[str]]:
    """`offload-mcp init` on a ~/.claude.json holding `servers`; (the config it wrote, the command it printed)."""
    client = tmp_path / ".claude.json"
    client.write_text(json.dumps({"mcpServers": servers}))
    config = tmp_path / "offload.json"
    done = subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "init", "--from", str(client), "-o", str(config)]),
        capture_output=True,
        text=True,
        timeout=60,
        env=proxy_env(),
    )
    assert done.returncode == 0, done.stderr
    (add,) = [line for line in done.stdout.splitlines() if "claude mcp add --scope user offload -- " in line]
    return config, shlex.split(add.split(" -- ", 1)[1])


def raw_tools_list(command: list[str]) -> tuple[int, list[str]]:
    """(bytes of the tools/list `result` as sent, tool names) from one stdio MCP server."""
    session = RawSession.__new__(RawSession)
    session.proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=proxy_env(), cwd=ROOT
    )
    session.next_id = 0
    try:
        session.initialize()
        raw, response = session.request("tools/list")
        assert "nextCursor" not in response["result"], "a paged list: compare every page"
        return len(raw), [t["name"] for t in response["result"]["tools"]]
    finally:
        session.close()


@needs_npm
def test_tools_list_after_init_is_no_larger_than_the_servers_own_lists(tmp_path: Path) -> None:
    servers = {
        "git": python_entry(GIT_SERVER, "--repository", str(ROOT)),
        "filesystem": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(tmp_path)]},
    }
    config, command = run_init(tmp_path, servers)
    direct = {name: raw_tools_list([entry["command"], *entry["args"]]) for name, entry in servers.items()}
    proxied_bytes, proxied_names = raw_tools_list([*command, "--ledger", str(tmp_path / "ledger.db")])
    direct_bytes = sum(size for size, _ in direct.values())
    print(f"\ninit-tools-list: direct={direct_bytes:,} B proxied={proxied_bytes:,} B ({len(proxied_names)} tools)")
    assert proxied_bytes <= direct_bytes, (proxied_bytes, direct_bytes)
    # every tool stays reachable: the search tool and the invoke tool are listed
    assert {"search_tools", "invoke_tool", "recall_tool_result"} <= set(proxied_names)
    assert json.loads(config.read_text())["offload"]["catalog"]["deferral"] == "search"


@pytest.mark.skipif(not CLAUDE.exists(), reason="@anthropic-ai/claude-code is not installed (npm install)")
def test_first_claude_code_session_after_init_gets_a_stub_for_a_1mb_result(tmp_path: Path) -> None:
    server = python_entry(HOSTILE)
    _, command = run_init(tmp_path, {"big": server})
    launched = {"command": command[0], "args": command[1:]}

    # the first session, Claude Code's tool search at its default: the cold tool is reached via invoke_tool
    big = {"name": "big", "arguments": {"size": ONE_MB}}
    steps = [{"tool": "mcp__proxy__invoke_tool", "input": big}, {"text": "done"}]
    (tmp_path / "proxied").mkdir()
    api, _ = run_claude(tmp_path / "proxied", {}, steps, launched=launched, tool_search=True)
    assert not api.errors, api.errors
    (seen,) = results_of(api, "invoke_tool")
    assert_inline(seen)
    assert TRM.search(seen) and "recall_tool_result" in seen, seen[:600]

    # without the proxy the same call is lost to Claude Code's own limit
    (tmp_path / "direct").mkdir()
    steps = [{"tool": "mcp__proxy__big", "input": {"size": ONE_MB}}, {"text": "done"}]
    api, _ = run_claude(tmp_path / "direct", {"proxy": server}, steps, direct=True, tool_search=True)
    (alone,) = results_of(api, "big")
    assert any(p in alone for p in PERSISTED), alone[:400]
