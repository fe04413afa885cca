"""Several streamable-HTTP sessions on one proxy: what one session can see of another's.

- Dedup history is per session: a session's results never depend on what another was shown.
- Ids are content hashes. Under the default `ledger.scope: global`, anyone who can reach the
  proxy and holds an id (64 bits of a content hash) can read that body: ids are capabilities.
- `ledger.scope: session` makes recall and expand refuse an id the asking session was not shown,
  and GET /expand (no session at all) refuse everything.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from support.proxy import TRM, running_proxy, text_of
from support.servers import HOSTILE, ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

MARKER = re.compile(r"<<cg:([0-9a-f]{16})>>")
LONG_LINES = "\n".join(f"row {i} - " + " ".join(f"word{(i * 13 + k) % 101}" for k in range(85)) for i in range(40))
"""Lines past linecap's 500 chars, 24K in all (under the offload pre-filter), with no `key: value` field (linecap keeps those whole): the answer is cut, with a marker to the exact original."""


@asynccontextmanager
async def two_sessions(url: str) -> AsyncIterator[tuple[ClientSession, ClientSession]]:
    async with AsyncExitStack() as stack:
        sessions = []
        for _ in range(2):
            read, write = await stack.enter_async_context(streamable_http_client(url))
            s = await stack.enter_async_context(ClientSession(read, write))
            await s.initialize()
            sessions.append(s)
        yield sessions[0], sessions[1]


def config(tmp_path: Path, scope: str) -> Path:
    return write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {"ledger": {"scope": scope}},
        name=f"{scope}.json",
    )


async def test_session_scope_refuses_another_sessions_ids_and_markers(tmp_path: Path) -> None:
    with running_proxy(["-c", str(config(tmp_path, "session")), "--ledger", str(tmp_path / "l.db")]) as proxy:
        async with two_sessions(proxy.url) as (a, b):
            offloaded = await a.call_tool("chunks", {"size": 150_000, "seed": 1})
            trm_id = TRM.search(text_of(offloaded)).group(0)  # type: ignore[union-attr]
            cut = await a.call_tool("echo", {"text": LONG_LINES})
            hashes = MARKER.findall(text_of(cut))
            assert hashes, text_of(cut)[:300]

            # The owner reads both.
            own = await a.call_tool("recall_tool_result", {"mem_id": trm_id})
            assert not own.is_error and hostile_server.chunk_blocks(150_000, 1)[0][:100] in text_of(own)
            own_cut = await a.call_tool("context_guru_expand", {"marker": f"<<cg:{hashes[0]}>>"})
            assert not own_cut.is_error and text_of(own_cut) in LONG_LINES

            # Another session holding the same ids is refused, clearly.
            theirs = await b.call_tool("recall_tool_result", {"mem_id": trm_id})
            assert theirs.is_error and "belongs to another session (ledger scope is `session`)" in text_of(theirs)
            theirs_cut = await b.call_tool("context_guru_expand", {"marker": f"<<cg:{hashes[0]}>>"})
            assert theirs_cut.is_error and "belongs to another session" in text_of(theirs_cut)
            assert LONG_LINES[1000:1100] not in text_of(theirs_cut)

            # Once B is itself shown the same content, it may read it too.
            again = await b.call_tool("chunks", {"size": 150_000, "seed": 1})
            assert TRM.search(text_of(again)).group(0) == trm_id  # type: ignore[union-attr]
            assert not (await b.call_tool("recall_tool_result", {"mem_id": trm_id})).is_error

        parts = urlsplit(proxy.url)
        with httpx2.Client(base_url=f"{parts.scheme}://{parts.netloc}", timeout=10) as http:
            refused = http.get(f"/expand/{hashes[0]}")
            assert refused.status_code == 403 and "ledger scope is `session`" in refused.text


async def test_dedup_history_is_per_session_and_global_ids_are_capabilities(tmp_path: Path) -> None:
    with running_proxy(["-c", str(config(tmp_path, "global")), "--ledger", str(tmp_path / "l.db")]) as proxy:
        async with two_sessions(proxy.url) as (a, b):
            text = "\n".join(f"{i:04d} the same long report line for dedup {i * 31 % 97}" for i in range(300))
            a_first = text_of(await a.call_tool("echo", {"text": text}))
            a_second = text_of(await a.call_tool("echo", {"text": text}))
            b_first = text_of(await b.call_tool("echo", {"text": text}))
            # B's first sight is what A's first sight was: A's history does not leak into B's results.
            assert b_first == a_first
            assert a_second != a_first, "dedup should have pointed A's repeat at its first copy"

            offloaded = await a.call_tool("chunks", {"size": 150_000, "seed": 2})
            trm_id = TRM.search(text_of(offloaded)).group(0)  # type: ignore[union-attr]
            # Global scope: the id is a capability; any session holding it reads the body.
            other = await b.call_tool("recall_tool_result", {"mem_id": trm_id})
            assert not other.is_error
