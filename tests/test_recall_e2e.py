"""Offload and recall end to end: real servers behind the real proxy, real clients in front.

- a ~600K-char `mcp-server-git` git_log and a large server-filesystem
  read_text_file come back byte for byte through recall paging;
- the filesystem tool declares an outputSchema: the Python SDK client (which
  validates structuredContent) and the MCP Inspector CLI both accept the stub;
- kill -9 of the proxy right after a stub arrives, then recall of that id from
  a new proxy process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support.git_repos import repo_of_commits
from support.processes import child_pids
from support.proxy import OFFLOAD_MCP, proxy_client, proxy_env, proxy_session, text_of
from support.servers import NPM_BIN, ROOT, fixture_entry, needs_npm, python_entry, write_config

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")
TRM = re.compile(r"trm_[0-9a-f]{16}")
NEXT_OFFSET = re.compile(r"next: recall_tool_result\(mem_id=\"trm_[0-9a-f]{16}\", offset=(\d+)\)\]$")
NO_REDUCERS = {
    "reducers": {"pipeline": []}
}  # so the big result reaches the policy whole (collapse would shrink it first)


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,200 commits in well under a second with git fast-import."""
    messages = [
        f"Change {i}: adjust module_{i % 97} handling of edge case #{i * 7 % 1013}\n\nBody line for commit {i}.\n"
        for i in range(3200)
    ]
    return repo_of_commits(tmp_path_factory.mktemp("bigrepo"), messages, seconds_apart=60)


async def reassemble(session, trm_id: str) -> str:
    """Page through recall_tool_result from offset 0 until the end; return the concatenation."""
    parts: list[str] = []
    offset = 0
    for _ in range(1000):
        res = await session.call_tool("recall_tool_result", {"mem_id": trm_id, "offset": offset, "max_chars": 8000})
        assert not res.is_error, text_of(res)
        header, _, data = text_of(res).partition("\n")
        parts.append(data)
        m = NEXT_OFFSET.search(header)
        if m is None:
            assert "end of body" in header, header
            return "".join(parts)
        offset = int(m.group(1))
    raise AssertionError("recall paging did not end")


async def direct_git_log(repo: Path, count: int) -> str:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=GIT_SERVER, args=["--repository", str(repo)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        return text_of(await s.call_tool("git_log", {"repo_path": str(repo), "max_count": count}))


async def test_git_log_600k_round_trips_exactly_through_recall(big_repo: Path, tmp_path: Path) -> None:
    direct = await direct_git_log(big_repo, 3200)
    assert len(direct) >= 600_000
    config = write_config(tmp_path, {"git": python_entry(GIT_SERVER, "--repository", str(big_repo))}, NO_REDUCERS)
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as s:
        stub = await s.call_tool("git_log", {"repo_path": str(big_repo), "max_count": 3200})
        text = text_of(stub)
        # stub_tokens (1,000 chars) plus the identifier index, grown with the result up to half the client's limit
        assert not stub.is_error and len(text) <= 50_000
        assert "git log (3,200 commits)" in text and f"{len(direct):,} chars" in text
        assert "index of 3,200 commits, one line each: sha date subject (first 48 chars); first" in text
        assert "more not shown, from line" in text
        (trm_id,) = set(TRM.findall(text))
        assert await reassemble(s, trm_id) == direct
        found = text_of(await s.call_tool("recall_tool_result", {"mem_id": trm_id, "query": "Change 1234:"}))
        assert "1 match for 'Change 1234:'" in found and "Change 1234:" in found


@needs_npm
async def test_filesystem_read_round_trips_and_output_schema_clients_accept_the_stub(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    big = "".join(f"{i:06d} the quick brown fox jumps over the lazy dog ✓\n" for i in range(12_000))
    (data / "big.txt").write_text(big)
    config = write_config(
        tmp_path, {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(data)]}}, NO_REDUCERS
    )
    args = ["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]
    # Handshake-era ClientSession: validates structuredContent against the tool's outputSchema.
    async with proxy_session(args) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert tools["read_text_file"].output_schema is not None
        stub = await s.call_tool("read_text_file", {"path": str(data / "big.txt")})
        assert not stub.is_error
        (trm_id,) = set(TRM.findall(text_of(stub)))
        # Both channels carry the stub (issue 11); the listed outputSchema admits the stub object.
        assert stub.structured_content == {"offloaded_result": {"mem_id": trm_id, "summary": text_of(stub)}}
        assert "anyOf" in tools["read_text_file"].output_schema
        stub_text, stub_structured = text_of(stub), stub.structured_content
        assert await reassemble(s, trm_id) == big
        via_path = await s.call_tool(
            "recall_tool_result", {"mem_id": trm_id, "json_path": "$.content", "max_chars": 100}
        )
        assert (
            text_of(via_path).partition("\n")[2] == json.dumps(big, ensure_ascii=False)[:100]
        )  # the JSON string, paged
    # 2026-era mcp.Client: the same stub validates there too.
    async with proxy_client(args) as c:
        again = await c.call_tool("read_text_file", {"path": str(data / "big.txt")})
        assert not again.is_error and set(TRM.findall(text_of(again))) == {trm_id}
        # Same input, same config, another proxy process and client era: byte-identical stub.
        assert text_of(again) == stub_text and again.structured_content == stub_structured


@needs_npm
def test_inspector_cli_accepts_a_stubbed_result_with_output_schema(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    big = "".join(f"{i:06d} lorem ipsum dolor sit amet\n" for i in range(10_000))
    (data / "big.txt").write_text(big)
    config = write_config(
        tmp_path, {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(data)]}}, NO_REDUCERS
    )
    ledger = tmp_path / "ledger.db"

    def inspector(*args: str) -> dict:
        done = subprocess.run(
            [
                str(NPM_BIN / "mcp-inspector"),
                "--cli",
                OFFLOAD_MCP,
                "serve",
                "-c",
                str(config),
                "--ledger",
                str(ledger),
                *args,
            ],
            capture_output=True,
            text=True,
            env=proxy_env(),
            cwd=str(ROOT),
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    body = inspector(
        "--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", f"path={data / 'big.txt'}"
    )
    assert body["isError"] is False
    (trm_id,) = set(TRM.findall(body["content"][0]["text"]))
    assert body["structuredContent"]["offloaded_result"]["mem_id"] == trm_id
    page = inspector(
        "--method",
        "tools/call",
        "--tool-name",
        "recall_tool_result",
        "--tool-arg",
        f"mem_id={trm_id}",
        "--tool-arg",
        "lines=2-3",
    )
    assert (
        page["content"][0]["text"].partition("\n")[2]
        == "000001 lorem ipsum dolor sit amet\n000002 lorem ipsum dolor sit amet\n"
    )


async def test_kill_9_right_after_a_stub_then_recall_from_a_new_process(big_repo: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    config = write_config(tmp_path, {"git": python_entry(GIT_SERVER, "--repository", str(big_repo))}, NO_REDUCERS)
    args = ["-c", str(config), "--ledger", str(ledger)]
    killed = False
    try:
        async with proxy_session(args) as s:
            stub = await s.call_tool("git_log", {"repo_path": str(big_repo), "max_count": 1500})
            (trm_id,) = set(TRM.findall(text_of(stub)))
            (pid,) = child_pids(os.getpid(), str(ledger))
            os.kill(pid, signal.SIGKILL)
            killed = True
    except BaseException as err:  # the dead proxy's pipes may raise on exit; only the kill matters here
        if not killed:
            raise
        del err
    assert killed
    direct = await direct_git_log(big_repo, 1500)
    async with proxy_session(args) as s:
        assert await reassemble(s, trm_id) == direct


async def test_a_query_with_a_small_max_chars_shows_the_match_through_the_proxy(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": fixture_entry()}, NO_REDUCERS)
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as s:
        stub = await s.call_tool("make_text", {"size": 300_000})
        (trm_id,) = set(TRM.findall(text_of(stub)))
        # As a model may copy it: with the stub's line break.
        args = {"mem_id": f"{trm_id}\n", "query": "line 17:", "max_chars": 200}
        found = await s.call_tool("recall_tool_result", args)
        header, _, shown = text_of(found).partition("\n")
        assert not found.is_error and "line 17:" in shown and len(shown) <= 200, text_of(found)
        whole = re.search(
            r"cut to \d+ before and \d+ after to fit 200 chars \(whole window: .*offset=(\d+), max_chars=(\d+)\)\)",
            header,
        )
        assert whole and "no more matches" in header, header
        window = await s.call_tool(
            "recall_tool_result", {"mem_id": trm_id, "offset": int(whole[1]), "max_chars": int(whole[2])}
        )
        assert shown.partition("\n")[2][:-1] in text_of(window).partition("\n")[2]
