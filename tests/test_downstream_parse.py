"""A wrapped server's message is parsed to exactly what the SDK's parse makes of it (downstream/parse.py),
on every transport: stdio lines, and large HTTP answers parsed off the loop."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from offload_mcp.downstream.bounded_http import ParsedMessages
from offload_mcp.downstream.parse import parse_message, with_lone_surrogates_replaced


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


# ---- lone surrogate escapes (stdio's lenient parse) ---------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def _with_fffd(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_with_fffd(v) for v in value]
    if isinstance(value, dict):
        return {_with_fffd(k): _with_fffd(v) for k, v in value.items()}
    return value


def _lone_surrogates(value: Any) -> int:
    if isinstance(value, str):
        return len(_SURROGATE.findall(value))
    if isinstance(value, list):
        return sum(_lone_surrogates(v) for v in value)
    if isinstance(value, dict):
        return sum(_lone_surrogates(k) + _lone_surrogates(v) for k, v in value.items())
    return 0


def lenient_outcome(data: bytes | str) -> tuple[str, Any, list[int]]:
    counts: list[int] = []
    kind, value = outcome(lambda d: parse_message(d, counts.append), data)
    return kind, value, counts


def js_reading(data: bytes | str) -> tuple[str, Any, list[int]]:
    """What a JS client reads (stdlib json: pairs joined, lone surrogates kept), each lone one as U+FFFD."""
    value = json.loads(data)
    return (
        "ok",
        types.jsonrpc_message_adapter.validate_python(_with_fffd(value), by_name=False),
        [_lone_surrogates(value)],
    )


LONE = [
    b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"row \\ud83d"}]}}',  # Node, cut mid-emoji
    b'{"jsonrpc":"2.0","id":1,"result":{"c":"\\ude00 \\ud83d\\u0041 \\uDE00\\uD83D"}}',  # low, high then not low
    b'{"jsonrpc":"2.0","id":1,"result":{"c":"\\ud83d\\ud83d\\ude00 \\ud83d\\ude00"}}',  # a lone one, then pairs
    b'{"jsonrpc":"2.0","id":1,"result":{"\\ud800key":{"k\\udfff":"\\\\ud800 is text, \\\\\\ud800 is not"}}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":"\\ud800","big":123456789012345678901234567890,"n":NaN}}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\\udbff"}}',
    '{"jsonrpc":"2.0","id":"r","result":{"t":"caf\u00e9 \\ud83d"}}',
]


@pytest.mark.parametrize("data", LONE)
def test_a_lone_surrogate_escape_is_read_as_u_fffd_as_a_js_client_reads_it(data: bytes | str) -> None:
    # pydantic-core (so the SDK) refused these whole; Node writes them when it slices a string mid-emoji.
    assert outcome(sdk_parse, data)[0] == "error"
    assert repr(lenient_outcome(data)) == repr(js_reading(data))


@pytest.mark.parametrize(
    "data",
    EDGES
    + BROKEN[1:]
    + [
        b'{"jsonrpc":"2.0","id":1,"result":{"t":"\\ud800 cut short',
        b'{"jsonrpc":"2.0","id":1,"result":{"t":"\\ud800",}}',
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"result":{"t":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"t":"\\ud800 \xff"}}',  # not UTF-8: stdio asks again, decoded
        b'{"jsonrpc":"2.0","id":1,"result":{"t":"\\\\ud800"',
    ],
)
def test_with_lone_surrogates_allowed_all_else_is_the_sdks_message_or_error(data: bytes | str) -> None:
    assert repr(lenient_outcome(data)) == repr((*outcome(sdk_parse, data), []))


def test_a_lone_surrogate_in_what_is_not_a_message_is_the_envelopes_error() -> None:
    kind, error, counts = lenient_outcome(b'{"jsonrpc":"1.0","id":1,"result":{"t":"\\ud800"}}')
    assert kind == "error" and "jsonrpc" in error and "Invalid JSON" not in error and counts == []


RESULTS_WITH_SURROGATES = st.dictionaries(
    st.text(st.characters(categories=["Cs", "Ll", "So"]), max_size=6),
    st.lists(st.text(st.characters(categories=["Cs", "Ll", "So", "Po"]), max_size=12), max_size=4),
    max_size=4,
)
"""Results whose keys and strings hold surrogates, lone or paired (json.dumps writes them as escapes)."""


@settings(max_examples=200, deadline=None)
@given(result=RESULTS_WITH_SURROGATES)
def test_any_text_with_surrogates_is_read_as_a_js_client_reads_it(result: dict[str, Any]) -> None:
    data = json.dumps({"jsonrpc": "2.0", "id": 3, "result": result}).encode()  # ASCII: surrogates as escapes
    expected = js_reading(data)
    if not expected[2][0]:  # none lone: the fast path, the SDK's message
        expected = ("ok", sdk_parse(data), [])
    assert repr(lenient_outcome(data)) == repr(expected)


# ---- the same, as bytes handed to the SDK (remote servers: http_limits.ParsedMessages) -----------------------


class _Noting(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__()
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage().split(" in a message")[0])


@pytest.mark.parametrize("data", [d for d in LONE if isinstance(d, bytes)])
def test_remote_bytes_with_lone_surrogates_rewritten_parse_in_the_sdk_as_a_js_client_reads_them(data: bytes) -> None:
    fixed, count = with_lone_surrogates_replaced(data)
    expected = js_reading(data)
    assert count == expected[2][0] > 0
    assert repr(sdk_parse(fixed)) == repr(expected[1])  # the SDK's own parse of the rewritten bytes


@settings(max_examples=200, deadline=None)
@given(
    result=RESULTS_WITH_SURROGATES,
    sse=st.booleans(),
)
def test_every_remote_message_reaches_the_sdk_as_a_js_client_reads_it(result: dict[str, Any], sse: bool) -> None:
    data = json.dumps({"jsonrpc": "2.0", "id": 3, "result": result}).encode()  # ASCII: surrogates as escapes
    noted: list[str] = []
    log = logging.getLogger("test.remote.lone")
    handler = _Noting(noted)
    log.addHandler(handler)
    parsed = ParsedMessages(log=log)
    sent = b"event: message\ndata: " + data + b"\n\n" if sse else data
    whole = anyio.run(parsed.events if sse else parsed.body, sent)
    passed = whole[len(b"event: message\ndata: ") : -2] if sse else whole
    assert whole == sent.replace(data, passed)  # the event's other lines as they were
    log.removeHandler(handler)
    expected = js_reading(data)
    assert repr(sdk_parse(passed)) == repr(expected[1])
    lone = expected[2][0]
    assert (whole is sent) == (lone == 0)  # no escape to rewrite: the very bytes, no copy
    assert noted == ([f"replaced {lone} lone UTF-16 surrogate escape(s)"] if lone else [])
