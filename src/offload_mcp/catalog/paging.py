"""tools/list in pages: each page's JSON stays under a byte budget, continued by an opaque cursor.

How it works: `page(tools, cursor, budget)` starts at the index the cursor
names (the first tool without one) and takes tools while their JSON, plus any
wire extras the middleware splices in, fits `catalog.list_page_bytes`; a page
always holds at least one tool. The cursor is the next index, base64url
encoded: deterministic, so the same catalog gives the same pages byte for byte.
A cursor this proxy did not hand out is a clear INVALID_PARAMS error.

Why: thousands of downstream tools make one answer of megabytes, and the SDK
client rejects an SSE event over 1 MiB, so the client would lose every tool.
When it is inert: a catalog that fits one page is answered whole, without a cursor.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
import orjson

_PREFIX = "tools:"


class BadCursor(ValueError):
    pass


def encode_cursor(index: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{index}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raw = ""
    if not raw.startswith(_PREFIX) or not raw[len(_PREFIX) :].isdigit() or len(raw) > 32:
        shown = cursor if len(cursor) <= 40 else cursor[:40] + "…"
        raise BadCursor(
            f"invalid tools/list cursor {shown!r}: pass back the nextCursor of the previous page, or none for the first"
        )
    return int(raw[len(_PREFIX) :])


def tool_bytes(tool: types.Tool, extra: Mapping[str, Any] | None) -> int:
    size = len(tool.model_dump_json(by_alias=True, exclude_none=True))
    return size + (len(orjson.dumps(dict(extra))) if extra else 0) + 1


def page(
    tools: Sequence[types.Tool], cursor: str | None, budget: int, extras: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[list[types.Tool], str | None]:
    """One page of `tools` from `cursor`, at most `budget` bytes of tool JSON (never empty); the next cursor or None."""
    start = decode_cursor(cursor) if cursor else 0
    if start > len(tools):
        raise BadCursor(
            f"tools/list cursor points past the end ({start} of {len(tools)} tools): list again from the start"
        )
    extras = extras or {}
    used, end = 0, start
    while end < len(tools):
        size = tool_bytes(tools[end], extras.get(tools[end].name))
        if end > start and used + size > budget:
            break
        used += size
        end += 1
    return list(tools[start:end]), (encode_cursor(end) if end < len(tools) else None)
