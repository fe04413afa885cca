"""Issue 13 hardening, through the real proxy process over real transports.

- 2026-07-28 streamable-HTTP requests are stateless: two `mcp.Client` instances share
  nothing (no dedup history, no ids), and under `ledger.scope: session` they get no ids
  at all and recall/expand refuse clearly (issue 13 #1).
- /healthz without the token says only the overall status; with it, details with argument
  values redacted and no stderr; the Bearer scheme is case-insensitive (#2, #10).
- tools/list comes in pages under the SDK client's message limit, continued by cursors (#8).
- SSE streams (each one a session) are capped per client address like streamable-HTTP sessions (#6).
"""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from support.proxy import TRM, initialize_request, running_proxy, text_of
from support.servers import HOSTILE, HOSTILE_SERVER, PYTHON, ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

DEDUP_TEXT = "\n".join(f"{i:04d} the same long report line for dedup {i * 31 % 97}" for i in range(300))


def hostile_config(tmp_path: Path, offload: dict | None = None, name: str = "mcp.json", **server: object) -> Path:
    return write_config(
        tmp_path, {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:], **server}}, offload, name=name
    )


async def test_stateless_clients_share_nothing_under_session_scope(tmp_path: Path) -> None:
    cfg = hostile_config(tmp_path, {"ledger": {"scope": "session"}})
    with running_proxy(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")]) as proxy:
        # A handshake-era session (it has an Mcp-Session-Id) is shown an id, as before.
        async with streamable_http_client(proxy.url) as (read, write), ClientSession(read, write) as legacy:
            await legacy.initialize()
            offloaded = await legacy.call_tool("chunks", {"size": 150_000, "seed": 1})
            trm = TRM.search(text_of(offloaded))
            assert trm, text_of(offloaded)[:300]
            assert not (await legacy.call_tool("recall_tool_result", {"mem_id": trm.group(0)})).is_error

        async with Client(proxy.url) as a, Client(proxy.url) as b:
            # No identity: the body comes back whole instead of as an id nobody could prove is theirs.
            whole = await a.call_tool("chunks", {"size": 150_000, "seed": 1})
            assert not TRM.search(text_of(whole))
            assert text_of(whole) == "".join(hostile_server.chunk_blocks(150_000, 1))
            for client in (a, b):
                refused = await client.call_tool("recall_tool_result", {"mem_id": trm.group(0)})
                assert refused.is_error and "ledger scope is `session` but this request has no session" in text_of(
                    refused
                )
                assert hostile_server.chunk_blocks(150_000, 1)[0][:100] not in text_of(refused)
                cut = await client.call_tool("context_guru_expand", {"marker": "<<cg:0123456789abcdef>>"})
                assert cut.is_error and "has no session" in text_of(cut)


async def test_stateless_clients_do_not_share_dedup_history(tmp_path: Path) -> None:
    cfg = hostile_config(tmp_path)
    with running_proxy(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")]) as proxy:
        async with Client(proxy.url) as a, Client(proxy.url) as b:
            a_first = text_of(await a.call_tool("echo", {"text": DEDUP_TEXT}))
            b_first = text_of(await b.call_tool("echo", {"text": DEDUP_TEXT}))
            # B's first sight is what A's was: A's history never shapes B's results.
            assert b_first == a_first


SECRET_ARG = "sk-ARGSECRET-1234567890"
SECRET_ERR = "sk-STDERRSECRET-0987654321"
TOKEN = "tok-healthz-test-0123456789"


def test_healthz_says_only_the_status_without_the_token_and_redacts_with_it(tmp_path: Path) -> None:
    launcher = f"import runpy,sys; sys.argv=[sys.argv[0]]; runpy.run_path({HOSTILE_SERVER!r}, run_name='__main__')"
    failing = f"import sys; sys.stderr.write('boot failed: api_key={SECRET_ERR}\\n'); sys.exit(3)"
    cfg = write_config(
        tmp_path,
        {
            "good": {"command": PYTHON, "args": ["-c", launcher, f"--api-key={SECRET_ARG}", "--region", "eu"]},
            "bad": {"command": PYTHON, "args": ["-c", failing, SECRET_ARG]},
        },
    )
    with running_proxy(
        ["-c", str(cfg), "--ledger", str(tmp_path / "l.db")], env={"OFFLOAD_MCP_AUTH_TOKEN": TOKEN}
    ) as proxy:
        base = proxy.url.rsplit("/", 1)[0]
        with httpx2.Client(base_url=base, timeout=10) as http:
            # A remote caller pretending to be local (Host: 127.0.0.1:PORT) and without the token: status only.
            anonymous = http.get("/healthz", headers={"host": base.split("//", 1)[1]})
            assert anonymous.status_code == 200 and anonymous.json() == {"status": "degraded"}
            wrong = http.get("/healthz", headers={"authorization": "Bearer nope"})
            assert wrong.json() == {"status": "degraded"}
            # Servers start in the background: wait (bounded) until the good one has left "starting".
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                states = http.get("/healthz", headers={"authorization": f"Bearer {TOKEN}"}).json()["servers"]
                if all(s["state"] != "starting" for s in states):
                    break
                time.sleep(0.1)
            # The scheme is case-insensitive (RFC 7235): lowercase `bearer` is accepted everywhere.
            for scheme in ("Bearer", "bearer", "BEARER"):
                detailed = http.get("/healthz", headers={"authorization": f"{scheme} {TOKEN}"})
                body = detailed.json()
                assert {s["name"]: s["state"] for s in body["servers"]} == {"good": "ready", "bad": "failed"}, body
                assert http.get("/metrics", headers={"authorization": f"{scheme} {TOKEN}"}).status_code == 200
            raw = detailed.text
            assert (
                SECRET_ARG not in raw and SECRET_ERR not in raw and "ARGSECRET" not in raw and "STDERRSECRET" not in raw
            )
            good = next(s for s in body["servers"] if s["name"] == "good")
            assert "--api-key=<redacted>" in good["command"] and "--region" in good["command"]
            bad = next(s for s in body["servers"] if s["name"] == "bad")
            assert "failed to start" in bad["failure"] and "stderr" not in bad["failure"]


async def test_tools_list_is_paginated_under_the_clients_message_limit(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {"hostile": {"command": HOSTILE[0], "args": [*HOSTILE[1:], "--extra-tools", "3000"]}})
    with running_proxy(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")]) as proxy:
        # The SDK client (1 MiB limit per SSE event) gets every tool, page by page.
        async with Client(proxy.url) as client:
            names: list[str] = []
            cursor: str | None = None
            pages = 0
            while True:
                listed = await client.list_tools(cursor=cursor)
                names += [t.name for t in listed.tools]
                pages += 1
                cursor = listed.next_cursor
                if cursor is None:
                    break
            assert pages > 3 and len(names) == len(set(names))
            assert {f"tool_{i:05d}" for i in range(3000)} <= set(names) and "recall_tool_result" in names
            result = await client.call_tool("tool_02999", {"text": "last one"})
            assert text_of(result) == "last one"
            with pytest.raises(MCPError, match="invalid tools/list cursor"):
                await client.list_tools(cursor="not-a-cursor")
        # Raw pages: each under the budget (512 KiB of tools), the same bytes every time.
        with httpx2.Client(timeout=30) as http:
            headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
            init = initialize_request("2025-06-18")
            opened = http.post(proxy.url, json=init, headers=headers)
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            http.post(proxy.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            first = [
                http.post(proxy.url, json={"jsonrpc": "2.0", "id": n, "method": "tools/list"}, headers=headers).text
                for n in (2, 3)
            ]
            assert first[0].replace('"id":2', '"id":3') == first[1]
            assert 300 * 1024 < len(first[0]) < 600 * 1024


async def test_sse_sessions_are_capped_per_peer(tmp_path: Path) -> None:
    cfg = hostile_config(tmp_path, {"server": {"max_sessions_per_peer": 3}})
    with running_proxy(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")], transport="sse") as proxy:
        async with httpx2.AsyncClient(timeout=10) as http, AsyncExitStack() as streams:
            for _ in range(3):
                held = await streams.enter_async_context(http.stream("GET", proxy.url))
                assert held.status_code == 200
            refused = await http.get(proxy.url)
            assert refused.status_code == 429 and "max_sessions_per_peer" in refused.text
        # Closed streams free their slots: a real client gets in again.
        async with Client(sse_client(proxy.url)) as client:
            assert text_of(await client.call_tool("echo", {"text": "back"})) == "back"


async def test_a_large_result_its_own_schema_rejects_is_bounded_and_says_why(tmp_path: Path) -> None:
    """Issue 40 D3: a structuredContent that violates its outputSchema passed whole at any size; at 4 MB the
    SDK client failed on its 1 MiB SSE event limit and the result was lost to it. Now it is marked as an error,
    states the violation, and is shaped within client_max_result_chars; the full body is recallable."""
    import json

    with running_proxy(["-c", str(hostile_config(tmp_path)), "--ledger", str(tmp_path / "l.db")]) as proxy:
        async with Client(proxy.url, mode="legacy") as client:
            result = await client.call_tool("off_schema", {"size": 4_000_000})
            assert result.is_error
            note = result.content[0].text  # type: ignore[union-attr]
            assert "returned a result its own schema rejects: structuredContent does not match" in note, note
            assert len(note) < 1_000  # the note is short, whatever the offending value
            sent = json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True))
            assert len(sent) < 100_000, len(sent)  # policy.client_max_result_chars
            trm = TRM.search(text_of(result))
            assert trm, text_of(result)[:500]
            page = await client.call_tool("recall_tool_result", {"mem_id": trm.group(0), "query": "row 0041999"})
            assert not page.is_error and "row 0041999" in text_of(page), text_of(page)[:500]
