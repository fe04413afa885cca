"""A large remote (HTTP) result does not stall an unrelated session while it is read (issue 13 #5).

The real proxy over streamable HTTP, in front of the fixture server over HTTP (its `make_text`
answers 60 MB, under the 64 MiB `max_result_bytes`) and a local stdio server whose echo is the
victim's. Prints one `hardening:` line: the p99 and worst victim echo while the big answer
streams, and how long the big call took; bench/bench_loop_pace.py compares them. Measured side by side on 2 shared cores, before parsing
moved off the loop -> after: SSE responses p99 1.06 s -> 0.20-0.22 s (big call 2.76 s -> 1.3 s,
peak RSS 660 -> 316 MB), JSON responses 0.22 s -> 0.12-0.19 s. Then the answer stopped being copied
on its way to the parser (the transport's buffer is parsed where it lies) and the shaper's newline count
went in 1M-char pieces: event-loop stalls over 20 ms in three SSE calls 8-14 -> 5-6, victim worst echo
0.19-0.37 -> 0.17-0.23 s (beside two CPU spinners 0.18-0.46 -> 0.21-0.34 s).

Then the swap itself in-process: the placeholder and the message put back are checked against
the SDK's own parse of the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from offload_mcp.downstream.bounded_http import (
    PARSE_OFF_LOOP_BYTES,
    PLACEHOLDER_KEY,
    ParsedMessages,
    _BoundedBody,
    _event_data,
    _first_event_end,
    _last_event_end,
)
from support.load import big_remote_call_beside_a_victim

BIG = 60_000_000


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_a_60_mb_remote_result_arrives_whole_while_another_session_is_answered(tmp_path: Path, mode: str) -> None:
    """The big answer is offloaded intact and the victim's echoes are answered while it streams; how long
    they stall beside the big call (a speed comparison) is bench/bench_loop_pace.py's `remote` figure."""
    probe, _ = await big_remote_call_beside_a_victim(tmp_path, mode, BIG)  # it checks the big answer arrived whole
    assert len(probe.latencies) >= 5, "the other session was not answered while the big answer streamed"


# ---- the swap itself, in-process, against the SDK's own parse -------------------------------------------


def big_response(id_: int | str = 7) -> bytes:
    text = "".join(f'line {i}: "quoted" \\ tab\t é\n' for i in range(20_000))  # ~0.6 MB, escapes and UTF-8
    return orjson.dumps({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})


def sdk_parse(data: bytes) -> SessionMessage:
    """What the SDK's transport makes of a message body."""
    return SessionMessage(types.jsonrpc_message_adapter.validate_json(data, by_name=False))


async def test_a_large_body_becomes_a_placeholder_and_is_swapped_back_exactly() -> None:
    parsed = ParsedMessages()
    body = big_response()
    handed = await parsed.body(body)
    assert len(handed) < 200 and len(body) > PARSE_OFF_LOOP_BYTES
    placeholder = sdk_parse(handed)
    assert placeholder.message.id == 7
    swapped = parsed.swap(placeholder)
    assert swapped.message == sdk_parse(body).message
    # Taken once: the same placeholder again is an error for that id, not someone else's answer.
    again = parsed.swap(placeholder)
    assert isinstance(again.message, types.JSONRPCError) and again.message.id == 7
    assert "lost before it was read" in again.message.error.message
    small = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert await parsed.body(small) == small


async def test_large_sse_events_keep_their_fields_and_small_ones_pass_untouched() -> None:
    parsed = ParsedMessages()
    note = b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\r\n\r\n'
    big = b"event: message\r\nid: stream-1_5\r\ndata: " + big_response("req-9") + b"\r\n\r\n"
    out = await parsed.events(note + big)
    assert out.startswith(note)
    fields = out[len(note) :].split(b"\n")
    assert fields[:2] == [b"event: message", b"id: stream-1_5"]  # resumption ids survive
    assert fields[2].startswith(b"data: ") and len(out) < len(note) + 300
    swapped = parsed.swap(sdk_parse(fields[2][len(b"data: ") :]))
    assert swapped.message == sdk_parse(big_response("req-9")).message


async def test_what_is_not_a_large_response_passes_as_it_came() -> None:
    parsed = ParsedMessages()
    pad = "x" * (PARSE_OFF_LOOP_BYTES + 10)
    notification = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": pad}})
    assert await parsed.body(notification) == notification  # the SDK parses it, as before
    broken = b'{"jsonrpc": "2.0", "id": 3, "result": {"text": "' + pad.encode()  # cut short
    assert await parsed.body(broken) == broken  # the SDK reports the parse error, as before
    # A server cannot name a placeholder it did not get: a look-alike result is an ordinary result.
    forged = sdk_parse(orjson.dumps({"jsonrpc": "2.0", "id": 4, "result": {"_meta": {PLACEHOLDER_KEY: "guess-1"}}}))
    assert parsed.swap(forged) is forged


# ---- event ends, found from line end to line end ---------------------------------------------------------

_MARKS = (b"\n\n", b"\n\r\n")


def _first_by_marks(data: bytes) -> int:
    found = [(i, len(mark)) for mark in _MARKS if (i := data.find(mark)) >= 0]
    return -1 if not found else min(found)[0] + min(found)[1]


def _last_by_marks(data: bytes, start: int) -> int:
    found = [(i, len(mark)) for mark in _MARKS if (i := data.rfind(mark, start)) >= 0]
    return -1 if not found else max(found)[0] + max(found)[1]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"data: {}", b"x", b"event: message", b""]), max_size=12))
def test_event_ends_are_where_the_two_marks_put_them(parts: list[bytes]) -> None:
    data = b"".join(parts)
    assert _first_event_end(data) == _first_by_marks(data)
    for start in range(len(data) + 1):
        found = _first_by_marks(data[start:])
        assert _first_event_end(data, start) == (found if found < 0 else start + found)
    for start in range(len(data) + 1):
        assert _last_event_end(bytearray(data), start) == _last_by_marks(data, start)


# ---- an event's fields and data, found in place -------------------------------------------------------------


def _data_by_splitting(event: bytes) -> tuple[list[bytes], bytes] | None:
    """The definition: split at every SSE line end (CRLF, CR, LF); `data:` lines, one leading space dropped."""
    fields: list[bytes] = []
    data: list[bytes] = []
    for line in re.split(rb"\r\n|\r|\n", event):
        if line.startswith(b"data:"):
            data.append(line[6:] if line.startswith(b"data: ") else line[5:])
        elif line:
            fields.append(line)
    return (fields, b"\n".join(data)) if data else None


_EVENT_PARTS = [
    b"\n",
    b"\r",
    b"\r\n",
    b"data: ",
    b"data:",
    b"data",
    b" ",
    b"{}",
    b"x",
    b"event: message",
    b"id: 7",
    b"",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_EVENT_PARTS), max_size=14), st.binary(max_size=3))
def test_event_data_is_the_split_definition_whether_copied_or_trimmed_in_place(parts: list[bytes], head: bytes) -> None:
    event = b"".join(parts)
    expected = _data_by_splitting(event)
    assert _event_data(event) == expected
    assert _event_data(head + event + b"tail", len(head), len(head) + len(event)) == expected
    # The transport's buffer, the event at its end: the same answer, and the buffer is its data or untouched.
    buffer = bytearray(head + event)
    found = _event_data(buffer, len(head))
    assert found == expected
    if found is not None and found[1] is buffer:
        assert expected is not None and buffer == expected[1]
    else:
        assert buffer == head + event


def _events_of(stream: bytes) -> list[bytes]:
    out, start = [], 0
    while start < len(stream):
        end = _first_event_end(stream, start)
        end = len(stream) if end < 0 else end
        out.append(stream[start:end])
        start = end
    return out


async def test_the_transport_buffer_is_parsed_where_it_lies_and_every_event_around_it_passes() -> None:
    note = b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\r\n\r\n'
    big = b"event: message\nid: s-1\ndata:" + big_response("req-9") + b"\n\n"
    log = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 300_000}})
    big_note = b"data: " + log + b"\r\n\r\n"  # large, but no response: the SDK gets the same event back
    for stream in (note + big, note + big + note, big_note + big, note + big_note, big + big_note):
        parsed = ParsedMessages()
        out = await parsed.events(bytearray(stream))
        sent, got = _events_of(stream), _events_of(out)
        assert len(got) == len(sent)
        for event, came in zip(sent, got, strict=True):
            if event == big:
                fields, data = _data_by_splitting(came) or ([], b"")
                assert fields == [b"event: message", b"id: s-1"] and len(data) < 300  # a placeholder
                assert parsed.swap(sdk_parse(data)).message == sdk_parse(big_response("req-9")).message
            elif event == note:
                assert came == event  # a small one passes byte for byte
            else:
                assert _data_by_splitting(came) == _data_by_splitting(event)  # the same fields and data


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, data: bytes, size: int) -> None:
        self.pieces = [data[at : at + size] for at in range(0, len(data), size)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece

    async def aclose(self) -> None:
        pass


_SSE: dict[str, Any] = {"limit": 8_000_000, "sse": True, "request_id": 11, "url": "http://remote.test/mcp"}


@pytest.mark.parametrize("chunk", [997, 65_536])
async def test_a_streamed_buffer_handed_on_keeps_every_event_and_the_tail_after_it(chunk: int) -> None:
    note = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
    big = b"event: message\nid: s-2\ndata: " + big_response(11) + b"\r\n\r\n"
    stream = note + big + note + big + note  # each event's end and the next one's start share chunks
    out = b"".join([piece async for piece in _BoundedBody(_Chunks(stream, chunk), **_SSE)])
    assert out == stream  # without parsing off the loop, byte for byte
    parsed = ParsedMessages()
    body = _BoundedBody(_Chunks(stream, chunk), **_SSE, parsed=parsed)
    events = _events_of(b"".join([piece async for piece in body]))
    assert [e for e in events if e == note] == [note, note, note]
    placeholders = [_data_by_splitting(e) or ([], b"") for e in events if e != note]
    assert len(placeholders) == 2
    for fields, data in placeholders:
        assert fields == [b"event: message", b"id: s-2"] and len(data) < 300
        assert parsed.swap(sdk_parse(data)).message == sdk_parse(big_response(11)).message
