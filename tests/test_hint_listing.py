"""Hint mode's tools/list is never larger than off's for the same downstream tools (issue 13 #8).

The real proxy over stdio, read raw page by page (the SDK client drops `defer_loading`), in front of
the npm server-everything and server-filesystem (definitions as zod writes them: `$schema`, the
default `execution`, which hint mode trims to pay for its marks) and of a fixture listing 5,000
generated tools whose hand-written definitions imply nothing (so hint mode can add nothing).
Each case prints one `hint-listing:` line with both sizes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.proxy import raw_session
from support.servers import HOSTILE, NPM_BIN, needs_npm, write_config


def listing(tmp_path: Path, servers: dict[str, Any], mode: str) -> tuple[int, int, list[dict[str, Any]]]:
    """(bytes of every page's `result`, pages, tools) of tools/list through a proxy in `mode`."""
    offload = {"catalog": {"deferral": mode, "learn_hot_tools": False}, "ledger": {"path": str(tmp_path / "l.db")}}
    config = write_config(tmp_path, servers, offload, name=f"{mode}.json")
    total, pages, tools = 0, 0, []
    with raw_session(config) as session:
        cursor = None
        while True:
            raw, response = session.request("tools/list", {"cursor": cursor} if cursor else None)
            total += len(raw)
            pages += 1
            tools += response["result"]["tools"]
            cursor = response["result"].get("nextCursor")
            if cursor is None:
                return total, pages, tools


def compare(tmp_path: Path, name: str, servers: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    off_bytes, off_pages, off_tools = listing(tmp_path, servers, "off")
    hint_bytes, hint_pages, hint_tools = listing(tmp_path, servers, "hint")
    deferred = sum(bool(t.get("defer_loading")) for t in hint_tools)
    print(
        f"\nhint-listing: {name} tools={len(off_tools)} off={off_bytes:,} B ({off_pages} pages)"
        f" hint={hint_bytes:,} B ({hint_pages} pages) hint/off={hint_bytes / off_bytes:.4f} deferred={deferred}"
    )
    assert [t["name"] for t in hint_tools] == [t["name"] for t in off_tools]  # nothing hidden
    assert hint_bytes <= off_bytes, (hint_bytes, off_bytes)
    return off_tools, hint_tools


@needs_npm
def test_hint_is_never_larger_than_off_for_real_servers_and_still_marks_every_cold_tool(tmp_path: Path) -> None:
    servers = {
        "everything": {"command": str(NPM_BIN / "mcp-server-everything")},
        "filesystem": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(tmp_path)]},
    }
    off_tools, hint_tools = compare(tmp_path, "server-everything+server-filesystem", servers)
    given = {t["name"]: t for t in off_tools}
    own = {"recall_tool_result", "context_guru_expand"}
    for tool in hint_tools:
        meta = tool.get("_meta") or {}
        if tool["name"] in own:
            assert meta["anthropic/alwaysLoad"] is True and "defer_loading" not in tool
            continue
        # Room for the marks: each cold tool is deferred and declares the result bound (hints, last, where they fit).
        assert tool["defer_loading"] is True, tool["name"]
        assert meta["anthropic/maxResultSizeChars"] == 100_000
        # What paid for them: `$schema` (draft-07, keywords 2020-12 reads alike) and the default execution.
        assert "$schema" in given[tool["name"]]["inputSchema"] and "$schema" not in tool["inputSchema"]
        assert tool.get("execution") != {"taskSupport": "forbidden"}  # the default goes; "required" stays
        assert tool["description"] == given[tool["name"]]["description"]  # descriptions are never cut
    hinted = [t["name"] for t in hint_tools if "anthropic/searchHint" in (t.get("_meta") or {})]
    print(f"hint-listing: {len(hinted)} of {len(hint_tools) - 2} deferred tools carry a searchHint")
    assert len(hinted) >= 20
    read = next(t for t in hint_tools if t["name"] == "read_text_file")
    assert read["_meta"]["anthropic/searchHint"] == "Read the complete contents of a file from the file system as"


def test_hint_is_never_larger_than_off_for_5000_tools(tmp_path: Path) -> None:
    servers = {"many": {"command": HOSTILE[0], "args": [*HOSTILE[1:], "--extra-tools", "5000"]}}
    off_tools, hint_tools = compare(tmp_path, "5,000 generated tools", servers)
    assert len(off_tools) > 5000
    # Hand-written definitions that imply almost nothing (a trailing space each) leave little to spend:
    # the own tools stay loaded, the first cold tools are deferred, the rest are listed as off lists them.
    generated = [(h, o) for h, o in zip(hint_tools, off_tools, strict=True) if o["name"].startswith("tool_")]
    assert len(generated) == 5000
    assert all(
        h["description"] == o["description"].strip() and h["inputSchema"] == o["inputSchema"] for h, o in generated
    )
    deferred = [h["name"] for h, _ in generated if h.get("defer_loading")]
    assert 0 < len(deferred) < 5000 and deferred == [h["name"] for h, _ in generated][: len(deferred)]
    own = [t for t in hint_tools if t["name"] in ("recall_tool_result", "context_guru_expand")]
    assert all(t["_meta"]["anthropic/alwaysLoad"] is True for t in own)
