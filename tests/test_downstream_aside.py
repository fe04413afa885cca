"""A large tools/call answer's structuredContent is set aside past the SDK's result check and put back
whole (downstream/aside.py): through the real proxy over stdio, and the set-aside rules one by one."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from offload_mcp.downstream.aside import LOST, PLACEHOLDER_KEY, SET_ASIDE_BYTES, StructuredAside
from offload_mcp.downstream.shelf import TokenShelf
from offload_mcp.store.ledger import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.proxy import proxy_session, text_of
from support.servers import fixture_cmd, fixture_entry, write_config

COUNT = 4_000  # ~1 MB of JSON text plus the same records as structuredContent: well over SET_ASIDE_BYTES


def records(count: int) -> dict:
    return {
        "records": [
            {"id": i, "name": f"item-{i}", "status": "ok", "price": i * 1.25, "tags": ["a", "b"]} for i in range(count)
        ]
    }


async def test_kept_whole_the_client_gets_the_server_s_structured_content(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {"fx": fixture_entry()}, {"policy": {"enabled": False}, "reducers": {"pipeline": []}})
    async with proxy_session(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")]) as session:
        result = await session.call_tool("json_records", {"count": COUNT})
    assert not result.is_error, text_of(result)[:300]
    assert result.structured_content == records(COUNT) == json.loads(result.content[0].text)


async def test_offloaded_the_ledger_keeps_the_server_s_structured_content(tmp_path: Path) -> None:
    ledger_path = tmp_path / "l.db"
    async with proxy_session(["--ledger", str(ledger_path), "--", *fixture_cmd()]) as session:
        result = await session.call_tool("json_records", {"count": COUNT})
        again = await session.call_tool("json_records", {"count": COUNT + 1})  # a second one: nothing held over
    trm_ids = [r.structured_content["offloaded_result"]["mem_id"] for r in (result, again)]
    ledger = Ledger.open(LedgerSettings(path=ledger_path))
    try:
        for trm_id, count in zip(trm_ids, (COUNT, COUNT + 1), strict=True):
            assert ledger.get_body(trm_id)["structuredContent"] == records(count)
    finally:
        ledger.close()


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_a_remote_server_s_structured_content_comes_back_whole(tmp_path: Path, mode: str) -> None:
    from support.servers import fixture_over_http

    opts = ("--json-response",) if mode == "json" else ()
    with fixture_over_http("streamable-http", *opts) as url:
        cfg = write_config(
            tmp_path,
            {"remote": {"url": url, "type": "http"}},
            {"policy": {"enabled": False}, "reducers": {"pipeline": []}},
        )
        async with proxy_session(["-c", str(cfg), "--ledger", str(tmp_path / "l.db")]) as session:
            result = await session.call_tool("json_records", {"count": COUNT})
    assert not result.is_error, text_of(result)[:300]
    assert result.structured_content == records(COUNT)


# ---- the rules, in process ----------------------------------------------------------------------


def call(id_: int) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=id_, method="tools/call", params={"name": "t", "arguments": {}})


def answer(id_: int, structured: object = None) -> SessionMessage:
    result: dict = {"content": [{"type": "text", "text": "x"}]}
    if structured is not None:
        result["structuredContent"] = structured
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=id_, result=result))


def sdk_result(item: SessionMessage) -> types.CallToolResult:
    return types.CallToolResult.model_validate(item.message.result, by_name=False)


def aside(version: str = "2025-11-25", **kw: int) -> StructuredAside:
    held = StructuredAside(**kw)
    held.enable_for(version)
    return held


def test_a_large_call_answer_goes_aside_and_comes_back_once() -> None:
    held = aside()
    held.sent(call(1))
    handed = held.received(answer(1, {"rows": [1, 2]}), SET_ASIDE_BYTES)
    assert list(handed.message.result["structuredContent"]) == [PLACEHOLDER_KEY]
    assert held.restore(sdk_result(handed)).structured_content == {"rows": [1, 2]}
    assert held.restore(sdk_result(handed)) is None  # taken once: a second claim is an error, never a placeholder


@pytest.mark.parametrize(
    ("case", "sent", "item", "size", "version"),
    [
        ("small", call(1), answer(1, {"rows": [1]}), SET_ASIDE_BYTES - 1, "2025-11-25"),
        ("not a tools/call", None, answer(1, {"rows": [1]}), SET_ASIDE_BYTES, "2025-11-25"),
        ("a list, for the SDK to refuse", call(1), answer(1, [1, 2]), SET_ASIDE_BYTES, "2025-11-25"),
        ("empty", call(1), answer(1, {}), SET_ASIDE_BYTES, "2025-11-25"),
        ("no structuredContent", call(1), answer(1), SET_ASIDE_BYTES, "2025-11-25"),
        ("a revision without structuredContent", call(1), answer(1, {"rows": [1]}), SET_ASIDE_BYTES, "2025-03-26"),
        ("not a message", call(1), ValueError("broken line"), SET_ASIDE_BYTES, "2025-11-25"),
    ],
)
def test_what_passes_untouched(case: str, sent, item, size: int, version: str) -> None:
    held = aside(version)
    if sent is not None:
        held.sent(sent)
    assert held.received(item, size) is item, case


def test_a_cancelled_call_s_object_is_dropped_and_its_answer_passes() -> None:
    held = aside()
    held.sent(call(1))
    handed = held.received(answer(1, {"rows": [1]}), SET_ASIDE_BYTES)
    held.sent(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 1}))
    assert held.restore(sdk_result(handed)) is None and not held._held
    held.sent(call(2))
    held.sent(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 2}))
    late = answer(2, {"rows": [2]})
    assert held.received(late, SET_ASIDE_BYTES) is late  # answered after the cancel: the SDK drops it as ever


def test_at_most_max_held_wait_and_one_pushed_out_is_an_error() -> None:
    held = aside(max_held=2)
    handed = []
    for i in range(3):
        held.sent(call(i))
        handed.append(held.received(answer(i, {"n": i}), SET_ASIDE_BYTES))
    assert held.restore(sdk_result(handed[0])) is None
    assert [held.restore(sdk_result(h)).structured_content for h in handed[1:]] == [{"n": 1}, {"n": 2}]
    assert "lost before it was read" in LOST


def test_a_server_s_own_look_alike_value_is_its_own() -> None:
    held = aside()
    forged = types.CallToolResult(content=[], structured_content={PLACEHOLDER_KEY: "0123456789abcdef-1"})
    assert held.restore(forged) is forged


def test_a_shelf_hands_each_value_out_once_and_knows_only_its_own_tokens() -> None:
    shelf: TokenShelf[str] = TokenShelf(max_held=2)
    other: TokenShelf[str] = TokenShelf(max_held=2)
    first, pushed = shelf.put("a")
    assert pushed == [] and shelf.owns(first) and not other.owns(first) and not shelf.owns(7)
    second, _ = shelf.put("b")
    third, pushed = shelf.put("c")
    assert pushed == [(first, "a")] and len(shelf) == 2  # the oldest makes room
    assert shelf.take(first) is None and shelf.take(third) == "c" and shelf.take(third) is None
    assert shelf.take(second) == "b" and len(shelf) == 0
