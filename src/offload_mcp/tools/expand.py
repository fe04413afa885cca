"""context_guru_expand: restore the exact original a `<<cg:HASH>>` marker stands for.

How it works: the argument is the marker as the model saw it (`<<cg:HASH>>`),
`cg:HASH`, or the bare 16-hex hash; the original comes from the ledger's stash
(`Ledger.get_stash`) byte for byte. The hash is remembered in the session so
the same content arriving again is kept verbatim (`kept_verbatim_after_expand`)
instead of being cut and expanded a second time. Its result is never reduced
or offloaded again.

Large originals come back in pages that Claude Code shows inline: at most
`INLINE_PAGE_CHARS` (40,000; also never above `policy.client_max_result_chars`),
under the 50,000 chars the tool declares as `anthropic/maxResultSizeChars`
(above it Claude Code writes a result to a file the model rarely reads).
The first content block is always an exact slice of the original; when there
is more, a second block says the total size, the cheaper ways to get a detail
and the `offset` of the next page. An original that fits comes back whole, alone.

One retrieval vocabulary: with `query`, `lines`, `json_path` or `max_chars`
the answer is recall_tool_result's for the marker (tools/recall.py), with the
same header and `next` call, so a detail costs one small call, not the page.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types

from .recall import recall_answer
from .registry import EXPAND, ToolEnv, error_result, no_ledger, owner_detail
from .retrieval import BadInput, parse_hash, quoted, quoted_names

log = logging.getLogger(__name__)

DEFAULT_PAGE_CHARS = 100_000
INLINE_PAGE_CHARS = 40_000
"""Largest expand page: below Claude Code's 50,000-char inline limit with room for the note."""
_STYLES = ("query", "lines", "json_path", "max_chars")
_ARGS = frozenset({"marker", "hash", "offset", *_STYLES})
"""`hash` is an older spelling of `marker`, still accepted but not advertised."""

TOOL = types.Tool(
    name=EXPAND,
    _meta={"anthropic/maxResultSizeChars": 50_000},
    description=(
        "Restore the exact original output behind a <<cg:HASH>> marker that offload-mcp left in a tool result "
        "(cut noise, repeated lines, a head/tail window, a repeat pointer). Pass the marker, e.g. "
        '{"marker": "<<cg:0123456789abcdef>>"}. To get one detail of a large original, add one style, as in '
        'recall_tool_result: query (substring), lines ("120-180"), json_path ("$.items[3]") or offset + max_chars. '
        "Without a style, large originals come back in pages: pass the `offset` the answer names."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "marker": {"type": "string", "description": "The marker as shown (<<cg:HASH>>) or its 16-hex-digit hash."},
            "offset": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "Character offset of the page to return (for originals larger than one answer).",
            },
            "query": {
                "type": "string",
                "description": "Substring to find in the original; shows a window around each match.",
            },
            "lines": {
                "type": "string",
                "description": 'Line range of the original, 1-based inclusive: "10-20", "10", or "10-".',
            },
            "json_path": {
                "type": "string",
                "description": "JSONPath into the original when it is JSON, e.g. $.items[0:5]",
            },
            "max_chars": {
                "type": "integer",
                "minimum": 1,
                "description": "Most characters to return from offset (capped like recall).",
            },
        },
        "required": ["marker"],
        "additionalProperties": False,
    },
)


def page_chars(settings: Any) -> int:
    limit = getattr(getattr(settings, "policy", None), "client_max_result_chars", 0) or 0
    return min(int(limit), INLINE_PAGE_CHARS) if limit > 0 else INLINE_PAGE_CHARS


def page(original: str, offset: int, size: int, hash_: str) -> list[types.TextContent]:
    if offset == 0 and len(original) <= size:
        return [types.TextContent(text=original)]
    chunk = original[offset : offset + size]
    end = offset + len(chunk)
    note = f"[context_guru_expand <<cg:{hash_}>>: characters {offset}-{end} of {len(original)}"
    if end < len(original):
        note += (
            f"; {len(original) - end} more characters; one detail is cheaper: "
            f'context_guru_expand(marker="<<cg:{hash_}>>", query="text" | lines="1-200"); '
            f"next page: offset={end}]"
        )
    else:
        note += "; last page]"
    return [types.TextContent(text=chunk), types.TextContent(text=note)]


async def handle(arguments: dict[str, Any], env: ToolEnv) -> types.CallToolResult:
    # A misspelt style ("qurey") must not fall through to the whole original.
    unknown = sorted(set(arguments) - _ARGS)
    if unknown:
        return error_result(
            f"context_guru_expand: unknown argument(s) {quoted_names(unknown)}; valid: marker, offset, {', '.join(_STYLES)}"
        )
    raw = arguments.get("marker", arguments.get("hash"))
    hash_ = parse_hash(raw)
    if hash_ is None:
        shown = repr(raw)[:80] if raw is not None else "nothing"
        return error_result(
            f"context_guru_expand needs `marker`: a marker like <<cg:0123456789abcdef>> (as it appears in a tool result) "
            f"or its 16 lowercase hex digits; got {shown}."
        )
    if any(arguments.get(style) is not None for style in _STYLES):
        return await _with_style(arguments, env, hash_)
    offset = arguments.get("offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        return error_result(f"context_guru_expand: `offset` must be a non-negative integer; got {quoted(offset)}.")
    if env.ledger is None:
        return error_result(f"context_guru_expand: {no_ledger(env)}, so no original can be read.")
    return await anyio.to_thread.run_sync(_expand, env, hash_, offset)


async def _with_style(arguments: dict[str, Any], env: ToolEnv, hash_: str) -> types.CallToolResult:
    """recall_tool_result's answer for this marker: the same styles, header and next call."""
    forwarded = {k: v for k, v in arguments.items() if k in ("offset", *_STYLES) and v is not None}
    forwarded["mem_id"] = f"<<cg:{hash_}>>"
    try:
        result, _style, chars = await recall_answer(forwarded, env)
    except BadInput as err:
        if env.ledger is not None:
            _record(env, hash_, ok=False, chars=0)
        return error_result(f"context_guru_expand: {err}")
    _record(env, hash_, ok=True, chars=chars)
    return result


def _expand(env: ToolEnv, hash_: str, offset: int) -> types.CallToolResult:
    from ..store import LedgerCorrupt, LedgerError, UnknownId

    if env.ledger is None:
        return error_result(f"context_guru_expand: {no_ledger(env)}, so no original can be read.")
    try:
        original = env.ledger.get_stash(hash_, session_id=env.ledger_owner)
    except LedgerCorrupt as err:  # a retry reads the same bytes: the call that made the result can make it anew
        return error_result(
            f"context_guru_expand: the stored original of <<cg:{hash_}>> cannot be read, the ledger is corrupt "
            f"({env.ledger.for_client(err)}); call the original tool again for a fresh result."
        )
    except LedgerError as err:  # e.g. a PostgreSQL ledger that is down: the marker may be fine
        return error_result(
            f"context_guru_expand: the ledger cannot be read right now ({env.ledger.for_client(err)}); try again shortly."
        )
    except UnknownId as err:
        _record(env, hash_, ok=False, chars=0)
        return error_result(
            f"context_guru_expand: no stashed original for <<cg:{hash_}>> ({err}). "
            "Markers are valid only as they appear in results from this offload-mcp ledger."
        )
    if offset and offset >= len(original):
        return error_result(
            f"context_guru_expand: offset {quoted(offset)} is past the end of <<cg:{hash_}>> ({len(original)} characters)."
        )
    env.session.expanded.add(hash_)
    content = page(original, offset, page_chars(env.settings), hash_)
    _record(env, hash_, ok=True, chars=len(content[0].text))
    return types.CallToolResult(content=list(content))  # as the SDK's (invariant) list of content blocks


def _record(env: ToolEnv, hash_: str, *, ok: bool, chars: int) -> None:
    if env.ledger is None:
        return
    try:
        env.ledger.record_expand(env.session_id, hash_, ok=ok, chars_out=chars, detail=owner_detail(env))
    except Exception as err:  # statistics must never cost the answer
        log.warning("could not record expand of %s: %s", hash_, err)
