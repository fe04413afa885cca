"""One headless Claude Code session (the npm CLI) through the proxy, against a fake Messages API that plays scripted turns."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from support.fake_messages_api import FakeMessagesAPI, Step
from support.proxy import OFFLOAD_MCP
from support.servers import NPM_BIN, python_entry, write_config

CLAUDE = NPM_BIN / "claude"


INLINE = 50_000
"""Claude Code persists a tool result above this many chars to a file unless the tool declares more."""


PERSISTED = ("Output too large", "Full output saved to", "exceeds maximum allowed tokens")


def seen(result: dict[str, Any]) -> str:
    """The text of one tool_result block as the model receives it."""
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def run_claude(
    tmp_path: Path,
    servers: dict[str, Any],
    steps: Sequence[Step | Callable[[list[dict[str, Any]]], Step]],
    offload: dict[str, Any] | None = None,
    *,
    direct: bool = False,
    launched: dict[str, Any] | None = None,
    tool_search: bool = False,
) -> tuple[FakeMessagesAPI, dict[str, Any]]:
    """One headless Claude Code session through the proxy; returns the fake API's record and claude's JSON.

    `direct`: Claude Code runs the one server itself, under the same MCP name ("proxy", so the tool
    names match), in the same working directory: the no-proxy baseline. `launched`: the MCP entry
    Claude Code starts, as given (e.g. the one `offload-mcp init` printed). `tool_search`: leave
    Claude Code's own MCP tool search at its default instead of turning it off.
    """
    if launched is None and direct:
        (launched,) = servers.values()
    elif launched is None:
        config = write_config(tmp_path, servers, offload, name="offload.json")
        launched = python_entry(OFFLOAD_MCP, "serve", "-c", str(config), "--ledger", str(tmp_path / "ledger.db"))
    mcp = tmp_path / ("claude-mcp-direct.json" if direct else "claude-mcp.json")
    mcp.write_text(json.dumps({"mcpServers": {"proxy": launched}}))
    home = tmp_path / ("home-direct" if direct else "home")
    home.mkdir(exist_ok=True)
    prompt = f"issue-11 e2e {tmp_path.name}"
    with FakeMessagesAPI(prompt, steps) as api:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "ENABLE_TOOL_SEARCH": "false",  # every MCP tool offered directly, as a scripted turn expects
            "OFFLOAD_MCP_TEST": "1",
        }
        if tool_search:
            del env["ENABLE_TOOL_SEARCH"]
        done = subprocess.run(
            [
                str(CLAUDE),
                "-p",
                prompt,
                "--output-format",
                "json",
                "--mcp-config",
                str(mcp),
                "--strict-mcp-config",
                "--allowedTools",
                "mcp__proxy",
            ],
            env=env,
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return api, json.loads(done.stdout)


def results_of(api: FakeMessagesAPI, tool: str) -> list[str]:
    return [seen(r) for r in api.tool_results if r["tool"] == f"mcp__proxy__{tool}"]


def assert_inline(text: str) -> None:
    assert len(text) <= INLINE and not any(p in text for p in PERSISTED), text[:400]
