"""A wrapped server's JSON-RPC message from its bytes: the SDK's parse, in a third of the time on large answers.

`jsonrpc_message_adapter.validate_json` (what the SDK's transports call) validates a large answer's
whole `result` field by field; the same bytes through pydantic-core's `from_json` (the JSON parser
validate_json itself uses, so the same values: exact big integers, NaN/Infinity, the last of two
equal keys) and then `validate_python` over the value (the models check the envelope and keep
`result` as it is) take a third of the time (docs/design.md, "Reading large answers").
orjson is no substitute: it turns an integer over 64 bits into a float. Bytes that are not JSON
or not a message are parsed again by `validate_json`, so the error is the SDK's, word for word.

One departure from the SDK, for callers that pass `on_lone_surrogates` (stdio), and for remote answers
through `with_lone_surrogates_replaced` (bounded_http.py): a lone UTF-16 surrogate escape (`"row \\ud83d"`)
is read as U+FFFD. Node's JSON.stringify writes one when a server slices a
string inside an emoji; it is valid JSON and JS clients take it, but pydantic-core refuses it, so the
whole answer was lost where invalid UTF-8 bytes cost only the bad characters. Only after the fast parse
has failed are the escapes rewritten in the JSON text and the text parsed again by the same parser, so
every other value and every other error stays the SDK's. The caller is told how many there were, to
say so in its server's log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import mcp_types as types
import pydantic_core

# An escaped backslash is taken whole, so `\\ud800` (a backslash, then text) is never read as an escape;
# a high surrogate escape right before a low one is a pair and stays. Every alternative behind one
# leading backslash: alternatives each starting with it made the scan ~14x slower on escape-dense text.
_SURROGATE_ESCAPE = re.compile(
    rb"\\(?:u(?:[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|([dD][89a-fA-F][0-9a-fA-F]{2}))|\\)"
)
_ANY_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def parse_message(
    data: bytes | bytearray | str, on_lone_surrogates: Callable[[int], None] | None = None
) -> types.JSONRPCMessage:
    """The message `types.jsonrpc_message_adapter.validate_json(data, by_name=False)` returns, or its error.
    With `on_lone_surrogates`, each lone surrogate escape is read as U+FFFD and it is called with their count."""
    count = 0
    try:
        value = pydantic_core.from_json(data)
    except ValueError:
        repaired = None if on_lone_surrogates is None else _lone_surrogates_replaced(data)
        if repaired is None:  # not JSON: raised again in the SDK's words
            return types.jsonrpc_message_adapter.validate_json(data, by_name=False)
        value, count = repaired
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError:
        if count:  # the SDK would have refused the JSON: the envelope's own error says more
            raise
        return types.jsonrpc_message_adapter.validate_json(data, by_name=False)  # not a message, in its words
    if count and on_lone_surrogates is not None:
        on_lone_surrogates(count)
    return message


def with_lone_surrogates_replaced(data: bytes) -> tuple[bytes, int]:
    """JSON text `data` with each lone surrogate escape written `\\ufffd`, and how many there were (`data` itself
    and 0 when there were none). The search skips to each backslash at memchr speed (`in` with the escape's
    first bytes measured slower)."""
    if _ANY_SURROGATE_ESCAPE.search(data) is None:
        return data, 0
    count = 0

    def replace(found: re.Match[bytes]) -> bytes:
        nonlocal count
        if found.group(1) is None:  # an escaped backslash, or a pair
            return found.group(0)
        count += 1
        return b"\\ufffd"

    fixed = _SURROGATE_ESCAPE.sub(replace, data)
    return (fixed, count) if count else (data, 0)


def _lone_surrogates_replaced(data: bytes | bytearray | str) -> tuple[Any, int] | None:
    """The JSON value of `data` with each lone surrogate escape read as U+FFFD, and how many there were;
    None when there were none, or when the text is not JSON even so."""
    if isinstance(data, str):  # stdio's lenient decoding of bytes that were not UTF-8: UTF-8 again, the same JSON
        data = data.encode("utf-8", "surrogatepass")
    fixed, count = with_lone_surrogates_replaced(bytes(data))  # a bytearray copied only once its parse failed
    if not count:  # most often a message cut short: no second parse
        return None
    try:
        return pydantic_core.from_json(fixed), count
    except ValueError:
        return None


def log_lone_surrogates(log: logging.Logger, count: int) -> None:
    """The warning for a message whose `count` lone surrogate escapes were read as U+FFFD, in its server's log."""
    # One line per message, not per escape: a server that cuts every string of a listing would flood the log.
    log.warning(
        "replaced %d lone UTF-16 surrogate escape(s) in a message with U+FFFD (a string cut inside a character?)",
        count,
    )
