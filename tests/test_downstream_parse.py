"""A wrapped server's message is parsed to exactly what the SDK's parse makes of it (downstream/parse.py),
on every transport: stdio lines, and large HTTP answers parsed off the loop."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from offload_mcp.downstream.http_limits import ParsedMessages
from offload_mcp.downstream.parse import parse_message


def sdk_parse(data: bytes | str) -> types.JSONRPCMessage:
    return types.jsonrpc_message_adapter.validate_json(data, by_name=False)


def outcome(parse: Any, data: bytes | str) -> tuple[str, Any]:
    try:
        return "ok", parse(data)
    except ValueError as exc:
        return "error", str(exc)


EDGES = [
    b'{"jsonrpc":"2.0","id":1,"result":{"big":123456789012345678901234567890,"neg":-9223372036854775809}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"a": NaN, "b": Infinity, "c": 1e400, "d": 1.5e-320, "e": -0.0}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}',
    b'{"jsonrpc":"2.0","id":"req-1","result":{"c":"\\ud83d\\ude00 \\u00e9 \\" \\\\ \\t"}}',
    b'{"jsonrpc":"2.0","id":1.0,"result":{}}',
    b'{"jsonrpc":"2.0","id":true,"result":{}}',
    b'{"jsonrpc":"2.0","id":1,"result":{},"extra":5}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"x"}}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":[1,{"x":null}]}}',
    b'{"jsonrpc":"2.0","id":9,"method":"roots/list"}',
    b'  {"jsonrpc":"2.0","id":1,"result":{}} \r',
    '{"jsonrpc":"2.0","id":1,"result":{"t":"caf\u00e9 \ufffd"}}',
]
BROKEN = [
    b'{"jsonrpc":"2.0","id":1,"result":{"c":"\\ud800"}}',  # a lone surrogate
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"result":{}}',  # a byte-order mark
    b'{"jsonrpc":"2.0","id":1,"result":{"t":"cut short',
    b'{"jsonrpc":"1.0","id":1,"result":{}}',
    b'{"id":1}',
    b"[]",
    b"",
]


@pytest.mark.parametrize("data", EDGES + BROKEN)
def test_the_same_message_or_the_same_error_as_the_sdk(data: bytes | str) -> None:
    assert repr(outcome(parse_message, data)) == repr(outcome(sdk_parse, data))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(result=st.dictionaries(st.text(max_size=8), json_values, max_size=5), ascii_only=st.booleans())
def test_any_result_parses_as_the_sdk_parses_it(result: dict[str, Any], ascii_only: bool) -> None:
    data = json.dumps({"jsonrpc": "2.0", "id": 3, "result": result}, ensure_ascii=ascii_only).encode()
    assert parse_message(data) == sdk_parse(data)


async def test_an_integer_over_64_bits_in_a_large_http_answer_stays_exact() -> None:
    # The off-loop parse of large HTTP answers used orjson, which reads 2**70 as 1.1805916207174113e21.
    big = 2**70 + 1
    body = orjson.dumps({"jsonrpc": "2.0", "id": 5, "result": {"pad": "x" * 300_000, "n": 0}}).replace(
        b'"n":0', f'"n":{big}'.encode()
    )
    parsed = ParsedMessages()
    placeholder = await parsed.body(body)
    assert len(placeholder) < len(body)  # it took the off-loop path
    message = parsed.swap(SessionMessage(sdk_parse(placeholder)))
    assert message.message.result["n"] == big and isinstance(message.message.result["n"], int)
