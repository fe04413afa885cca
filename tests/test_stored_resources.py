"""Stored bodies as resources (issue 42): each stub links `offload://result/trm_...`, the proxy lists the
template and serves `resources/read` under the same owner check as recall.

Through real proxies over streamable HTTP: the link's URI, MIME type and size; the read returns the
exact bytes the tool returned (byte-compared), a long body in pages whose join is those bytes; another
principal is refused without a byte; a downstream server's own resources keep answering beside it
(server-everything); the Inspector's CLI lists the template and reads the body.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from offload_mcp.upstream import stored_resources
from support.cluster import bearer_client
from support.principals import ALICE, BOB
from support.proxy import TRM, running_proxy, text_of
from support.servers import HOSTILE, NPM_BIN, ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

TEXT = "".join(f"ligne {i}: café ✓ naïve — 東京 {i * 7}\r\n" for i in range(4000))
"""Multi-byte characters and CRLF line ends: what a byte comparison would catch being re-encoded."""


async def as_caller(url: str, token: str | None, work):  # type: ignore[no-untyped-def]
    async with bearer_client(token) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def principal_config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {"server": {"auth_tokens": {"alice": ALICE, "bob": BOB}}, "ledger": {"scope": "principal"}},
    )


async def test_a_stub_links_its_body_and_a_read_returns_its_exact_bytes_to_its_owner_only(tmp_path: Path) -> None:
    with running_proxy(["-c", str(principal_config(tmp_path)), "--ledger", str(tmp_path / "l.db")]) as proxy:

        async def offload(session: ClientSession):  # type: ignore[no-untyped-def]
            return await session.call_tool("echo", {"text": TEXT})

        stub = await as_caller(proxy.url, ALICE, offload)
        trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
        (link,) = [b for b in stub.content if b.type == "resource_link"]
        assert (str(link.uri), link.name, link.mime_type, link.size) == (
            f"offload://result/{trm_id}",
            trm_id,
            "text/plain",
            len(TEXT.encode()),
        )

        async def read_it(session: ClientSession):  # type: ignore[no-untyped-def]
            templates = await session.list_resource_templates()
            return templates, await session.read_resource(str(link.uri))

        templates, read = await as_caller(proxy.url, ALICE, read_it)
        assert "offload://result/{mem_id}" in [t.uri_template for t in templates.resource_templates]
        (contents,) = read.contents
        assert contents.mime_type == "text/plain" and contents.text.encode() == TEXT.encode()
        assert contents.meta == {"offload/total_chars": len(TEXT)}

        async def refused(session: ClientSession) -> str:
            with pytest.raises(MCPError) as err:
                await session.read_resource(str(link.uri))
            return str(err.value)

        message = await as_caller(proxy.url, BOB, refused)
        assert "Resource not found" in message and "belongs to another principal" in message, message
        assert "ligne 1" not in message

        async def bad_uri(session: ClientSession) -> str:
            with pytest.raises(MCPError) as err:
                await session.read_resource("offload://result/not-an-id")
            return str(err.value)

        assert "is not a stored result's URI" in await as_caller(proxy.url, ALICE, bad_uri)


async def test_a_long_body_is_read_in_pages_whose_join_is_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}})
    size = stored_resources.PAGE_CHARS * 2 + 12_345
    expected = hostile_server.big_text(size)
    with running_proxy(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as proxy:

        async def read_all(session: ClientSession) -> tuple[list[str], str]:
            stub = await session.call_tool("big", {"size": size})
            trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
            uris, pieces = [f"offload://result/{trm_id}"], []
            while True:
                (contents,) = (await session.read_resource(uris[-1])).contents
                pieces.append(contents.text)
                nxt = (contents.meta or {}).get("offload/next")
                if nxt is None:
                    return uris, "".join(pieces)
                uris.append(nxt)

        uris, text = await as_caller(proxy.url, None, read_all)
    assert len(uris) == 3 and uris[1].endswith(f"?offset={stored_resources.PAGE_CHARS}")
    assert text.encode() == expected.encode()


@pytest.mark.skipif(not (NPM_BIN / "mcp-inspector").exists(), reason="the MCP Inspector is not installed")
async def test_the_inspector_lists_the_template_and_reads_a_body_beside_a_servers_own_resources(
    tmp_path: Path,
) -> None:
    everything = NPM_BIN / "mcp-server-everything"
    servers = {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}}
    if everything.exists():
        servers["everything"] = {"command": str(everything), "args": []}
    config = write_config(tmp_path, servers)
    with running_proxy(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as proxy:

        def inspector(*args: str) -> dict:  # type: ignore[type-arg]
            done = subprocess.run(
                [str(NPM_BIN / "mcp-inspector"), "--cli", "--server-url", proxy.url, "--transport", "http", *args],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=str(ROOT),
            )
            assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
            return json.loads(done.stdout)  # type: ignore[no-any-return]

        names = [t["name"] for t in inspector("--method", "tools/list")["tools"]]
        (big,) = [n for n in names if n.endswith("big")]
        called = inspector("--method", "tools/call", "--tool-name", big, "--tool-arg", "size=200000")
        trm_id = TRM.search(called["content"][0]["text"]).group(0)  # type: ignore[union-attr]
        assert called["content"][1]["uri"] == f"offload://result/{trm_id}"
        templates = [t["uriTemplate"] for t in inspector("--method", "resources/templates/list")["resourceTemplates"]]
        assert "offload://result/{mem_id}" in templates
        read = inspector("--method", "resources/read", "--uri", f"offload://result/{trm_id}")
        assert read["contents"][0]["text"].encode() == hostile_server.big_text(200_000).encode()
        if everything.exists():  # a wrapped server's own resources answer unchanged beside ours
            listed = inspector("--method", "resources/list")["resources"]
            assert listed, "server-everything lists resources"
            own = inspector("--method", "resources/read", "--uri", listed[0]["uri"])
            assert own["contents"] and own["contents"][0]["uri"] == listed[0]["uri"]
