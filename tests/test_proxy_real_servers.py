"""The proxy in front of real published servers, and driven by a real client (the MCP Inspector CLI).

npm: @modelcontextprotocol/server-everything, server-filesystem, inspector.
PyPI: mcp-server-git.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from support.proxy import OFFLOAD_MCP, proxy_client, proxy_env, proxy_session, text_of
from support.servers import NPM_BIN, ROOT, needs_npm, python_entry, write_config

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    for i in range(3):
        (repo / f"f{i}.txt").write_text(f"file {i}\n")
        run("add", ".")
        run("-c", "user.name=Test", "-c", "user.email=t@example.com", "commit", "-qm", f"commit {i}")
    (repo / "dirty.txt").write_text("untracked\n")
    return repo


@needs_npm
async def test_server_everything_list_call_image_resource_progress_structured() -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with proxy_session(["--", str(NPM_BIN / "mcp-server-everything")]) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert {"echo", "get-tiny-image", "trigger-long-running-operation", "get-structured-content"} <= set(names)
        assert text_of(await s.call_tool("echo", {"message": "hi"})) == "Echo: hi"
        image = await s.call_tool("get-tiny-image", {})
        images = [b for b in image.content if isinstance(b, types.ImageContent)]
        assert images and images[0].mime_type == "image/png" and len(images[0].data) > 100
        resources = (await s.list_resources()).resources
        assert resources
        read = await s.read_resource(str(resources[0].uri))
        assert read.contents and str(read.contents[0].uri) == str(resources[0].uri)
        done = await s.call_tool(
            "trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress
        )
        assert not done.is_error and len(seen) == 3
        structured = await s.call_tool("get-structured-content", {"location": "New York"})
        assert not structured.is_error and isinstance(structured.structured_content, dict)
        links = await s.call_tool("get-resource-links", {"count": 2})
        assert any(isinstance(b, types.ResourceLink) for b in links.content)


@needs_npm
async def test_server_filesystem_large_file_and_structured_results(tmp_path: Path) -> None:
    big = "".join(f"{i:06d} the quick brown fox jumps over the lazy dog\n" for i in range(5000))
    data = tmp_path / "data"
    data.mkdir()
    (data / "big.txt").write_text(big)
    # observe mode: shaping records but passes every byte through, so the forwarding itself is checked.
    config = write_config(
        tmp_path, {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(data)]}}, {"mode": "observe"}
    )
    async with proxy_client(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["read_text_file"].output_schema is not None
        result = await c.call_tool("read_text_file", {"path": str(data / "big.txt")})
        assert not result.is_error
        assert text_of(result) == big
        assert result.structured_content == {"content": big}
        listing = await c.call_tool("list_directory", {"path": str(data)})
        assert "big.txt" in text_of(listing)


async def test_mcp_server_git(git_repo: Path) -> None:
    async with proxy_session(["--", GIT_SERVER, "--repository", str(git_repo)]) as s:
        names = [t.name for t in (await s.list_tools()).tools]
        assert {"git_status", "git_log", "git_diff"} <= set(names)
        status = await s.call_tool("git_status", {"repo_path": str(git_repo)})
        assert "dirty.txt" in text_of(status)
        log = await s.call_tool("git_log", {"repo_path": str(git_repo), "max_count": 2})
        assert "commit 2" in text_of(log) and "commit 0" not in text_of(log)


def _inspector(*args: str, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [str(NPM_BIN / "mcp-inspector"), "--cli", *args],
        capture_output=True,
        text=True,
        env=proxy_env(env),
        cwd=str(ROOT),
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@needs_npm
def test_inspector_cli_inline_command_without_double_dash(git_repo: Path, tmp_path: Path) -> None:
    # The Inspector drops `--`; `serve` takes the downstream command from its first positional word.
    body = _inspector(
        OFFLOAD_MCP,
        "serve",
        "--ledger",
        str(tmp_path / "l.db"),
        "--",
        GIT_SERVER,
        "--repository",
        str(git_repo),
        "--method",
        "tools/call",
        "--tool-name",
        "git_status",
        "--tool-arg",
        f"repo_path={git_repo}",
    )
    assert body["isError"] is False and "dirty.txt" in body["content"][0]["text"]


@needs_npm
def test_inspector_cli_with_short_config_flag(git_repo: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"git": python_entry(GIT_SERVER, "--repository", str(git_repo))})
    body = _inspector(OFFLOAD_MCP, "serve", "-c", str(config), "--method", "tools/list")
    names = [t["name"] for t in body["tools"]]
    assert "git_log" in names and names[-2:] == ["recall_tool_result", "context_guru_expand"]


@needs_npm
def test_inspector_cli_with_config_from_environment(git_repo: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"git": python_entry(GIT_SERVER, "--repository", str(git_repo))})
    body = _inspector(
        "-e",
        f"OFFLOAD_MCP_CONFIG={config}",
        OFFLOAD_MCP,
        "serve",
        "--method",
        "tools/call",
        "--tool-name",
        "git_log",
        "--tool-arg",
        f"repo_path={git_repo}",
        "--tool-arg",
        "max_count=1",
    )
    assert body["isError"] is False and "commit 2" in body["content"][0]["text"]
