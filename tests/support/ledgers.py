"""Bodies and results for ledger tests: records to store, results the gate offloads, and the real shaper around a ledger."""

from __future__ import annotations

import re

import mcp_types as types

from offload_mcp.config import OffloadSettings
from offload_mcp.shaping import CallInfo, ResultShaper, dump_result
from offload_mcp.store import BodyRecord, Ledger
from support.proxy import TRM, text_of

BODY = {"content": [{"type": "text", "text": "x" * 5000}], "structuredContent": {"n": 1}, "isError": False}


def record(body=BODY, **kw):
    kw.setdefault("server", "srv")
    kw.setdefault("tool", "tool")
    kw.setdefault("arguments", {"a": 1})
    kw.setdefault("session_id", "s1")
    kw.setdefault("chars", 5000)
    return BodyRecord.of(body, **kw)


MARKER = re.compile(r"<<cg:[0-9a-f]{16}>>")


def make_text(size: int) -> str:
    """What tests/fixtures/fixture_server.py's make_text returns."""
    out, total, i = [], 0, 0
    while total < size:
        line = f"line {i}: " + "x" * 60 + "\n"
        out.append(line)
        total += len(line)
        i += 1
    return "".join(out)[:size]


def varied_text(size: int, seed: int = 0) -> str:
    """Text no reducer can shrink much, so the policy offloads it."""
    out, total, i = [], 0, 0
    while total < size:
        line = f"{seed:04d}-{i:06d} {(i * 7919 + seed * 104729) % 1000003:07d} {hex(i * 2654435761 % 2**32)}\n"
        out.append(line)
        total += len(line)
        i += 1
    return "".join(out)[:size]


def big_result(seed: int = 0, size: int = 90_000) -> types.CallToolResult:
    """Offloaded by the gate, yet within what the client accepts (client_max_result_chars), so a ledger
    that cannot take it passes it through whole; a larger one is cut (test_ledger_stalls.py)."""
    return types.CallToolResult(content=[types.TextContent(text=varied_text(size, seed))])


def call(seed: int = 0, session: str = "s1") -> CallInfo:
    return CallInfo(server="fx", tool="read", downstream_tool="read", arguments={"seed": seed}, session_id=session)


def make_shaper(settings: OffloadSettings, ledger: Ledger) -> ResultShaper:
    """The real shaper without reducers, so a big result takes the offload path (reducers tested elsewhere)."""
    return ResultShaper(settings, ledger, pipeline=None)


def assert_untouched(out: types.CallToolResult, original: types.CallToolResult) -> None:
    assert dump_result(out) == dump_result(original)
    assert not TRM.search(text_of(out)) and not MARKER.search(text_of(out))
