"""bench/corpus_servers.py's wrapping server: a real MCP server in front of a real one, re-encoding its results.

The real-server corpus (bench/corpus_mcp.py) records the same SQL results as other servers send
them: inside the Supabase envelope as one JSON string literal, as a JSON string, double-encoded,
in a `{"type": "text"}` field, after a line of prose. Each style must carry the downstream's rows
whole (the needed facts are read out of them), and the wrapper must not promise structuredContent.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "peers"))

from mcp_drive import open_session, result_text  # noqa: E402

import corpus_servers  # noqa: E402

FIXTURE = [sys.executable, str(ROOT / "tests" / "fixtures" / "fixture_server.py")]


def _decoded(style: str, text: str) -> object:
    """The rows back out of a wrapped text, the way an agent would read them."""
    if style == "supabase":
        inner = json.loads(text)
        match = re.search(r"<(untrusted-data-[0-9a-f-]+)>\n(.*)\n</\1>", inner, flags=re.S)
        assert match is not None, inner[:300]
        return json.loads(match.group(2))
    if style == "string":
        return json.loads(json.loads(text))
    if style == "double":
        return json.loads(json.loads(json.loads(text)))
    if style == "text_field":
        outer = json.loads(text)
        assert outer["type"] == "text"
        return json.loads(outer["text"])
    head, _, body = text.partition("\n")
    assert head.startswith("Query returned "), head
    return json.loads(body)


@pytest.fixture(scope="module")
def raw() -> str:
    """The downstream's own answer, read once for every style (the fixture server's records are seeded)."""

    async def read() -> str:
        async with open_session(FIXTURE) as direct:
            return result_text(await direct.call_tool("json_records", {"count": 40}))

    return anyio.run(read)


@pytest.mark.parametrize("style", corpus_servers.WRAP_STYLES)
def test_each_style_carries_the_downstream_rows_whole(raw: str, style: str) -> None:
    command = [sys.executable, str(ROOT / "bench" / "corpus_servers.py"), "wrap", style, *FIXTURE]

    async def run() -> tuple[str, list[object]]:
        async with open_session(command) as wrapped:
            tools = (await wrapped.list_tools()).tools
            result = await wrapped.call_tool("json_records", {"count": 40})
            return result_text(result), [t.output_schema for t in tools]

    text, schemas = anyio.run(run)
    assert text != raw
    assert _decoded(style, text) == json.loads(raw)
    assert schemas and all(schema is None for schema in schemas)


def test_a_python_repr_result_is_wrapped_as_it_came() -> None:
    rows = "[{'part_num': '3001pr05', 'name': 'Brick 2 x 4'}]"
    assert json.loads(corpus_servers.wrap_text("text_field", rows))["text"] == rows
    assert json.loads(corpus_servers.wrap_text("string", rows)) == rows
    with pytest.raises(ValueError, match="unknown wrap style"):
        corpus_servers.wrap_text("rot13", rows)
