"""Stored bodies as resources: `offload://result/trm_...`, read by a host without spending model tokens.

Each stub carries a `resource_link` to its body (`link_for`); the proxy lists one resource template
for them beside the wrapped servers' own, and answers `resources/read` for such a URI itself, with
the same owner check recall makes (ledger scope `session` or `principal`: only an owner that was
shown the id may read it; others get "Resource not found" and not a byte).

What is read is the text recall pages through (store/text_view.py): the result's text (its blocks
joined by a newline), or its structuredContent as compact JSON when it had no text, as
`text/plain` or `application/json`. A body longer than PAGE_CHARS is read in pages: each page's
contents carry `_meta["offload/next"]`, the URI of the next (`?offset=N`), and the pages joined are
the text exactly.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.shared.exceptions import MCPError

from ..store import Evicted, Ledger, LedgerError, UnknownId
from ..store.text_view import text_blocks, text_view

URI_PREFIX = "offload://result/"
PAGE_CHARS = 1_000_000
"""Characters one `resources/read` answers; past it, the next page's URI is in `_meta`."""
_URI = re.compile(r"offload://result/(trm_[0-9a-f]{16})(?:\?offset=(\d{1,15}))?")
_NOT_FOUND = -32002
"""The MCP error code for a resource that does not exist (what a host shows as such)."""

TEMPLATE = types.ResourceTemplate(
    name="offloaded-result",
    title="An offloaded tool result",
    uri_template=URI_PREFIX + "{mem_id}",
    description=(
        "The full text of a tool result offload-mcp stored behind a stub (mem_id: the stub's trm_ id), exactly "
        "as the tool returned it; long ones in pages (_meta offload/next)."
    ),
)


def is_stored_uri(uri: str) -> bool:
    return uri.startswith(URI_PREFIX)


def mime_type(body: dict[str, Any]) -> str:
    return "text/plain" if text_blocks(body) or body.get("structuredContent") is None else "application/json"


def link_for(trm_id: str, body: dict[str, Any]) -> types.ResourceLink:
    """The stub's link to its stored body: URI, name, MIME type and size in bytes (UTF-8) of what a read returns."""
    text = text_view(body)
    return types.ResourceLink(
        uri=URI_PREFIX + trm_id,
        name=trm_id,
        title="Full result behind this stub",
        mime_type=mime_type(body),
        size=len(text.encode("utf-8", "surrogatepass")),
    )


async def read(ledger: Ledger | None, uri: str, owner: str) -> types.ReadResourceResult:
    m = _URI.fullmatch(uri)
    if m is None:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"{uri[:120]} is not a stored result's URI; they look like {URI_PREFIX}trm_0123456789abcdef",
        )
    trm_id, offset = m.group(1), int(m.group(2) or 0)
    if ledger is None:
        raise MCPError(code=_NOT_FOUND, message=f"Resource not found: {uri} (no ledger is open in this proxy)")
    try:
        raw = await anyio.to_thread.run_sync(lambda: ledger.get_body_json(trm_id, session_id=owner))
    except (UnknownId, Evicted) as err:
        raise MCPError(code=_NOT_FOUND, message=f"Resource not found: {uri} ({err})") from None
    except LedgerError as err:
        raise MCPError(
            code=types.INTERNAL_ERROR, message=f"{uri}: the ledger cannot be read right now ({err})"
        ) from None
    body = orjson.loads(raw)
    text = text_view(body)
    if offset > len(text) or (offset == len(text) and offset > 0):
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"{uri}: offset {offset:,} is past the end ({len(text):,} chars)"
        )
    end = min(offset + PAGE_CHARS, len(text))
    meta: dict[str, Any] = {"offload/total_chars": len(text)}
    if end < len(text):
        meta["offload/next"] = f"{URI_PREFIX}{trm_id}?offset={end}"
    contents = types.TextResourceContents(uri=uri, mime_type=mime_type(body), text=text[offset:end], _meta=meta)
    return types.ReadResourceResult(contents=[contents])
