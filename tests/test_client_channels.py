"""Both channels through the SDK clients over streamable HTTP (issue 11): valid, bounded, id visible, recall exact.

One HTTP proxy in front of server-memory (3,000 entities, outputSchema) and an MCPServer tool
returning 3.6 MB of structuredContent. The Python SDK's ClientSession and mcp.Client validate
structuredContent against the listed outputSchema (and used to fail on such results with
`Server-sent event exceeded the 1048576 byte limit`); the TypeScript SDK client does too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator

import orjson
import pytest
from mcp import Client

from support.proxy import proxy_http, text_of
from support.servers import NPM_BIN, ROOT, python_entry, write_config

TRM = re.compile(r"trm_[0-9a-f]{16}")
LIMIT = 100_000  # policy.client_max_result_chars default


def sent(result: dict) -> int:
    texts = sum(len(b.get("text", "")) for b in result.get("content", []))
    return texts + sum(
        len(orjson.dumps(result[k])) for k in ("structuredContent", "_meta") if result.get(k) is not None
    )


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (NPM_BIN / "mcp-server-memory").exists():
        pytest.skip("@modelcontextprotocol/server-memory not installed")
    tmp = tmp_path_factory.mktemp("channels")
    memory = tmp / "memory.jsonl"
    memory.write_text(
        "\n".join(
            json.dumps(
                {
                    "type": "entity",
                    "name": f"person-{i:04d}",
                    "entityType": "person",
                    "observations": [f"lives in city-{i % 211}"] * 3,
                }
            )
            for i in range(3000)
        )
    )
    config = write_config(
        tmp,
        {
            "memory": {"command": str(NPM_BIN / "mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(memory)}},
            "rows": python_entry(str(ROOT / "tests" / "fixtures" / "structured_server.py")),
        },
    )
    with proxy_http(["-c", str(config), "--ledger", str(tmp / "ledger.db")]) as url:
        yield url


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_python_clients_validate_and_recall_exact(proxy: str, mode: str) -> None:
    async with Client(proxy, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "anyOf" in tools["read_graph"].output_schema and "anyOf" in tools["big_rows"].output_schema
        for tool, args, needle in (
            ("read_graph", {}, '"name": "person-2345"'),
            ("big_rows", {"count": 30_000}, '"row-12345"'),
        ):
            result = await client.call_tool(tool, args)  # validates structuredContent against the listed schema
            assert not result.is_error
            body = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            assert sent(body) <= LIMIT
            (trm_id,) = set(TRM.findall(text_of(result)))
            assert result.structured_content == {"offloaded_result": {"mem_id": trm_id, "summary": text_of(result)}}
            found = await client.call_tool("recall_tool_result", {"mem_id": trm_id, "query": needle.strip('"')})
            assert needle in text_of(found)


@pytest.mark.skipif(
    shutil.which("node") is None or not (NPM_BIN.parent / "@modelcontextprotocol" / "sdk").exists(),
    reason="node or the TS SDK missing",
)
def test_typescript_sdk_client_accepts_the_stub(proxy: str) -> None:
    done = subprocess.run(
        ["node", str(ROOT / "tests" / "clients" / "ts_sdk_call.mjs"), proxy, "read_graph", "{}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    result = got["result"]
    assert "read_graph" in got["tools"] and not result.get("isError")
    (trm_id,) = set(TRM.findall(result["content"][0]["text"]))
    assert result["structuredContent"]["offloaded_result"]["mem_id"] == trm_id and sent(result) <= LIMIT


@pytest.mark.skipif(not (NPM_BIN / "mcp-inspector").exists(), reason="the MCP Inspector is not installed")
def test_inspector_strict_accepts_the_listed_schemas_and_the_stub(proxy: str) -> None:
    def inspector(*args: str) -> dict:
        done = subprocess.run(
            [
                str(NPM_BIN / "mcp-inspector"),
                "--cli",
                "--server-url",
                proxy,
                "--transport",
                "http",
                "--format",
                "json",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(ROOT),
        )
        assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
        return json.loads(done.stdout)

    listed = inspector("--method", "tools/list", "--strict")  # --strict: schema portability lint (tools/list only)
    assert "schemaFindings" not in listed  # no portability finding on the widened outputSchemas
    result = inspector("--method", "tools/call", "--tool-name", "big_rows", "--tool-arg", "count=30000")[
        "result"
    ]  # SDK-validated
    (trm_id,) = set(TRM.findall(result["content"][0]["text"]))
    assert result["structuredContent"]["offloaded_result"]["mem_id"] == trm_id and sent(result) <= LIMIT


async def test_fastmcp_client_accepts_the_stub(proxy: str) -> None:
    fastmcp = pytest.importorskip("fastmcp", reason="fastmcp (the standalone client) is not installed")
    async with fastmcp.Client(proxy) as client:
        result = await client.call_tool(
            "big_rows", {"count": 30_000}
        )  # fastmcp parses structuredContent against the schema
        assert not result.is_error
        (trm_id,) = set(TRM.findall(result.content[0].text))
        assert result.structured_content == {"offloaded_result": {"mem_id": trm_id, "summary": result.content[0].text}}
        row = await client.call_tool("recall_tool_result", {"mem_id": trm_id, "json_path": "$.rows[7]"})
        assert json.loads(row.content[0].text.partition("\n")[2])["name"] == "row-00007"
