"""`search_tools`: find a tool of the wrapped servers that tools/list does not show (search mode).

In `catalog.deferral: search` mode, tools/list carries only the hot tools; the
rest are found here and called through `invoke_tool`. A natural-language
`query` is ranked with BM25 over each tool's name, description and parameter
names; a `pattern` is a case-insensitive regular expression, bounded in
time and refused in the shapes that backtrack catastrophically
(catalog/search.py). The answer is deterministic JSON: the best matches, each
with its full definition (name, description, inputSchema, annotations,
outputSchema), and how to call them.

Inert with a reason, recorded as a `tool_search` event in the ledger for
stats: no catalog yet (`no_catalog`), a query without usable words
(`empty_query`), a refused pattern (`refused_pattern`), other bad arguments
(`bad_arguments`), nothing found (`no_match`, with the servers searched named
so the model can rephrase). The listed description names the servers
searched and their tool counts (`describe`), so the model knows when a search
can help.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import anyio
import mcp_types as types
import orjson

from ..catalog.search import SearchRefused, ToolIndex
from .names import INVOKE, SEARCH
from .registry import ToolEnv, error_result, text_result

logger = logging.getLogger(__name__)

NAME = SEARCH
INVOKE_NAME = INVOKE

TOOL = types.Tool(
    name=NAME,
    description=(
        "Find tools of the connected MCP servers that are not listed directly. Give `query` (what you want "
        "to do, in a few words) or `pattern` (a regular expression over tool names and descriptions). "
        f"Returns the best matches with their full input schemas; call one with {INVOKE_NAME}(name, arguments)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "The task in a few words, e.g. 'list git branches' or 'read a file'.",
            },
            "pattern": {
                "type": "string",
                "description": "Instead of query: a case-insensitive regular expression, e.g. '^git_' or 'issue|pull_request'.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "description": "Most matches to return (default from config, 5).",
            },
        },
        "additionalProperties": False,
    },
)

_indexes: weakref.WeakKeyDictionary[Any, ToolIndex] = weakref.WeakKeyDictionary()


def index_for(catalog: Any) -> ToolIndex:
    """The search index of one catalog object, built once (a rebuilt catalog is a new object)."""
    index = _indexes.get(catalog)
    if index is None:
        index = ToolIndex([entry.tool for entry in catalog.entries])
        _indexes[catalog] = index
    return index


def definition(tool: types.Tool) -> dict[str, Any]:
    """A tool's definition as a client would list it, minus `_meta` (client hints, not for the model)."""
    data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    data.pop("_meta", None)
    return data


def answer(
    catalog: Any, arguments: dict[str, Any], *, default_limit: int, regex_timeout_s: float
) -> types.CallToolResult:
    """The search answer for one call (sync: the regex form may run up to its time budget)."""
    query = arguments.get("query")
    pattern = arguments.get("pattern")
    limit = arguments.get("limit", default_limit)
    unknown = sorted(set(arguments) - {"query", "pattern", "limit"})
    if unknown:
        return error_result(f"{NAME}: unknown argument(s) {', '.join(unknown)}; it takes query or pattern, and limit")
    if query is not None and not isinstance(query, str):
        return error_result(f"{NAME}: `query` must be a string")
    if pattern is not None and not isinstance(pattern, str):
        return error_result(f"{NAME}: `pattern` must be a string")
    if query is not None and pattern is not None:
        return error_result(f"{NAME}: give either `query` or `pattern`, not both")
    if query is None and pattern is None:
        return error_result(f"{NAME}: give `query` (the task in a few words) or `pattern` (a regular expression)")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
        return error_result(f"{NAME}: `limit` must be an integer from 1 to 50")
    index = index_for(catalog)
    try:
        if query is not None:
            matches, total = index.bm25(query, limit), None
        else:
            assert pattern is not None  # one of the two is given, checked above
            matches, total = index.regex(pattern, limit, regex_timeout_s)
    except SearchRefused as refused:
        return error_result(f"{NAME}: {refused}")
    servers = sorted({entry.server for entry in catalog.entries})
    by_name = {entry.name: entry for entry in catalog.entries}
    body: dict[str, Any] = {
        "matches": [{"server": by_name[m.name].server, **definition(index.tools[m.name])} for m in matches],
        "searched": {"tools": len(index), "servers": servers},
    }
    if total is not None and total > len(matches):
        body["more"] = f"{total - len(matches)} more tools match; narrow the pattern or raise limit"
    if matches:
        body["next"] = f'Call a match with {INVOKE_NAME}: {{"name": <name>, "arguments": {{...}}}}.'
    else:
        body["next"] = "No tool matched: rephrase with other words, or try a pattern."
    return text_result(orjson.dumps(body).decode())


def record(env: ToolEnv, kind: str, verdict: str, reason: str, detail: dict[str, Any] | None = None) -> None:
    """Best effort: an event for stats (`tool_search` / `invoke`); a ledger problem never fails the call."""
    ledger = env.ledger
    if ledger is None:
        return
    try:
        from ..store.ledger import LedgerEvent

        ledger.record_event(
            LedgerEvent(kind=kind, session_id=env.session_id, verdict=verdict, reason=reason, detail=detail or {})
        )
    except Exception as err:  # noqa: BLE001 - stats are never worth a failed call
        logger.debug("could not record %s event: %s", kind, err)


async def note(env: ToolEnv, kind: str, verdict: str, reason: str, detail: dict[str, Any] | None = None) -> None:
    """`record` off the event loop (a busy ledger may wait up to its busy timeout)."""
    if env.ledger is not None:
        await anyio.to_thread.run_sync(lambda: record(env, kind, verdict, reason, detail))


def outcome(result: types.CallToolResult) -> tuple[str, str]:
    """(verdict, reason) of a search answer, for its event."""
    text = result.content[0].text if result.content and isinstance(result.content[0], types.TextContent) else ""
    if result.is_error:
        if "no searchable words" in text or "give `query`" in text:
            return "refused", "empty_query"
        if "pattern" in text:
            return "refused", "refused_pattern"
        return "refused", "bad_arguments"
    return ("found", "matched") if '"matches":[]' not in text else ("none", "no_match")


async def handle(arguments: dict[str, Any], env: ToolEnv) -> types.CallToolResult:
    catalog = env.catalog
    if catalog is None or not catalog.entries:
        await note(env, "tool_search", "refused", "no_catalog")
        return error_result(f"{NAME}: no downstream tools are available right now (no server is serving)")
    settings = env.settings.catalog
    default_limit = settings.search_limit
    timeout_s = settings.search_regex_timeout_ms / 1000.0
    result = await anyio.to_thread.run_sync(
        lambda: answer(catalog, dict(arguments or {}), default_limit=default_limit, regex_timeout_s=timeout_s)
    )
    verdict, reason = outcome(result)
    await note(env, "tool_search", verdict, reason, {"form": "pattern" if "pattern" in (arguments or {}) else "query"})
    return result
