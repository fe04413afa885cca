"""Cold-tool deferral on tools/list, in the forms MCP clients can use.

Tool definitions are often most of an agent's starting context. The hot set
(catalog/hotset.py) stays loaded; every other downstream tool is cold, and
the mode (`catalog.deferral`) says how cold tools are offered:

- `hint` (default): every tool is listed. A cold tool carries the wire-level
  `"defer_loading": true` (a Messages-API field, spliced into the JSON by
  the server's middleware because the SDK's models would drop it) and
  `_meta["anthropic/searchHint"]`, a short phrase from its description; a hot
  tool carries `_meta["anthropic/alwaysLoad"]: true`. Claude Code reads the
  `_meta` keys and defers MCP tools itself; other clients ignore them and
  load everything, so hint mode never hides a tool from anyone. The listing
  is never larger than `off`'s for the same tools: the marks
  are paid for by trimming what the protocol already implies
  (catalog/compact.py) and taken, within those bytes, in the order of what a
  client loses without them (`hint_listing` below). Definitions with nothing
  to trim therefore carry fewer marks, down to none.
- `search`: tools/list holds the hot tools plus `search_tools` and
  `invoke_tool` (tools/tool_search.py, tools/invoke.py). Cold tools are
  reached only through them, so it cuts definition tokens on any client,
  including ones that ignore `notifications/tools/list_changed`. Every
  listed tool is marked `alwaysLoad` so that a client which defers MCP tools
  by itself does not hide the search tool behind its own search.
- `off`: every tool exactly as its server gave it; no marks at all, not even
  `anthropic/maxResultSizeChars`: `off` is the
  pass-through of the listing, the way to see what the servers list and the
  bound hint mode is held to; a key added there would make it one more
  shaping mode. The consequence, documented where `off` is offered: under
  Claude Code a result of 50,000-`policy.client_max_result_chars` chars that
  the proxy keeps inline is filed by Claude Code to a file with a preview,
  as it would be without the proxy. Use `hint` (the default), or set
  `policy.client_max_result_chars` to 50,000 so nothing that large is kept
  inline.

No double marking: a key a downstream server already set in a tool's
`_meta` is never overwritten, and a tool its server marked `alwaysLoad` is
hot (hotset reason `server_always_load`), so it never also gets a search
hint and `defer_loading`.

`_meta["anthropic/maxResultSizeChars"]` and Claude Code's persist-to-file:
Claude Code writes an MCP result over 50,000 chars to a file and shows the
model a ~2 KB preview, unless the tool declares a larger
`anthropic/maxResultSizeChars` (honoured up to 500,000). Behind this proxy
that second layer would stack on the proxy's own decision: a 70,000-char
result the net-saving gate chose to keep inline would still be cut to a
preview, and an offload stub is never that large anyway. The largest result
the proxy ever lets through inline is `policy.client_max_result_chars`
(everything above it is offloaded whatever the gate says; 100,000 by default), so every
downstream tool — and `invoke_tool`, whose results are downstream results —
declares exactly that value (in hint mode, where the listing's budget allows:
see above; in search mode always): the proxy is the one place a large result is
decided, and Claude Code keeps what the proxy kept. The key is left out
(Claude Code's default applies) when the proxy does not decide sizes: in
`observe` mode, with the policy disabled, or with `client_max_result_chars`
set to 0 (no bound to promise). Unlike the deferral keys this one is always
the proxy's value, since the proxy, not the downstream server, now shapes
the result's size.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import orjson

from . import compact
from .hotset import Candidate, HotSet

logger = logging.getLogger(__name__)

ALWAYS_LOAD = "anthropic/alwaysLoad"
SEARCH_HINT = "anthropic/searchHint"
MAX_RESULT_SIZE = "anthropic/maxResultSizeChars"
DEFER_LOADING = "defer_loading"

CLAUDE_CODE_PERSIST_CHARS = 50_000
"""Claude Code persists an MCP result above this many chars to a file (its default)."""
CLAUDE_CODE_MAX_DECLARED_CHARS = 500_000
"""The most `anthropic/maxResultSizeChars` Claude Code honours."""

HINT_MAX_WORDS = 12
HINT_MAX_CHARS = 80

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_MARKUP = re.compile(r"\[([^\]]*)\]\([^)]*\)|[`*_#>|]+")
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def search_hint(tool: types.Tool) -> str:
    """A short, deterministic phrase for `anthropic/searchHint`: the description's first sentence, clipped."""
    description = (tool.description or "").strip()
    first = next((part for part in _SENTENCE_END.split(description) if part.strip()), "")
    words = _MARKUP.sub(lambda m: m.group(1) or " ", first).split()
    phrase: list[str] = []
    for word in words:
        if len(phrase) == HINT_MAX_WORDS or len(" ".join([*phrase, word])) > HINT_MAX_CHARS:
            break
        phrase.append(word)
    text = " ".join(phrase).rstrip(".,;:!?-–— ")
    return text or " ".join(w.lower() for w in _NAME_WORDS.findall(tool.name)) or tool.name


def max_result_size_chars(offload: Any) -> int | None:
    """The `anthropic/maxResultSizeChars` every downstream tool declares, or None to leave Claude Code's default.

    `offload` is the OffloadSettings (mode, policy). See the module docstring for why this value.

    On the corpora, with the defaults, the largest result the proxy sends inline stays under Claude
    Code's own 50,000; the declaration matters when the proxy keeps a larger result inline (the gate declining, reducers
    off): declaring client_max_result_chars keeps it in the model's view instead of a file
    (docs/design.md, "Tool lists"). Above it the proxy offloads whatever the gate says, so a larger
    value buys nothing.
    """
    policy = getattr(offload, "policy", None)
    if policy is None or getattr(offload, "mode", "enforce") == "observe" or not policy.enabled:
        return None
    if policy.client_max_result_chars <= 0:
        return None
    return min(policy.client_max_result_chars, CLAUDE_CODE_MAX_DECLARED_CHARS)


def candidates(entries: Iterable[Any]) -> list[Candidate]:
    """Hot-set candidates from catalog entries (name, server, downstream_name, tool)."""
    return [
        Candidate(
            name=e.name,
            server=e.server,
            downstream_name=e.downstream_name,
            server_always_load=bool((e.tool.meta or {}).get(ALWAYS_LOAD) is True),
        )
        for e in entries
    ]


def with_meta(tool: types.Tool, additions: Mapping[str, Any], *, override: Iterable[str] = ()) -> types.Tool:
    """The tool with `_meta` keys added; existing keys win unless named in `override`."""
    meta = dict(tool.meta or {})
    forced = set(override)
    changed = False
    for key, value in additions.items():
        if key in meta and key not in forced:
            continue
        if meta.get(key, object()) != value:
            meta[key] = value
            changed = True
    return tool.model_copy(update={"meta": meta}) if changed else tool


def hint_marks(
    tool: types.Tool, *, hot: bool, max_result_chars: int | None, downstream: bool
) -> tuple[types.Tool, dict[str, Any]]:
    """One tool marked for hint mode, and its wire-only extras."""
    meta = tool.meta or {}
    additions: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    if hot:
        additions[ALWAYS_LOAD] = True
    elif meta.get(ALWAYS_LOAD) is not True:
        additions[SEARCH_HINT] = search_hint(tool)
        extras[DEFER_LOADING] = True
    if downstream and max_result_chars is not None:
        additions[MAX_RESULT_SIZE] = max_result_chars
    return with_meta(tool, additions, override=(MAX_RESULT_SIZE,)), extras


def apply(
    mode: str,
    entries: Sequence[Any],
    own_tools: Sequence[types.Tool],
    hot: HotSet,
    *,
    max_result_chars: int | None,
    search_tools: Sequence[types.Tool] = (),
    invoke_name: str | None = None,
) -> tuple[list[types.Tool], dict[str, dict[str, Any]]]:
    """The listed tools in `mode`, in catalog order then own tools, and the wire extras by tool name.

    `search_tools` are the search-mode tools (search, invoke), listed after the own tools in
    search mode only; `invoke_name` names the one whose results are downstream results.
    """
    if mode == "off":
        return [e.tool for e in entries] + list(own_tools), {}
    if mode == "hint":
        return hint_listing(entries, own_tools, hot, max_result_chars=max_result_chars)
    listed: list[types.Tool] = []
    if mode == "search":
        for e in entries:
            if e.name in hot:
                listed.append(hint_marks(e.tool, hot=True, max_result_chars=max_result_chars, downstream=True)[0])
        listed += [hint_marks(t, hot=True, max_result_chars=None, downstream=False)[0] for t in own_tools]
        for t in search_tools:
            listed.append(
                hint_marks(t, hot=True, max_result_chars=max_result_chars, downstream=t.name == invoke_name)[0]
            )
        return listed, {}
    raise ValueError(f"unknown deferral mode {mode!r}: expected hint, search or off")


# ---- hint mode within the bytes of `off` ------------------------------------------------


@dataclass
class _Marking:
    """One listed tool while hint marks are chosen: its trimmed definition and the marks taken so far."""

    tool: types.Tool
    meta: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)
    additions: dict[str, Any] = field(default_factory=dict)

    def cost(self, key: str, value: Any, *, wire: bool = False) -> int:
        """Bytes one more mark adds to this tool's JSON (exact: JSON members are `"key":value` joined by commas)."""
        member = len(orjson.dumps(key)) + 1 + len(orjson.dumps(value))
        if wire:
            return 1 + member  # the tool object always has members (its name)
        if key in self.meta:  # an override (maxResultSizeChars): only the value changes
            return len(orjson.dumps(value)) - len(orjson.dumps(self.meta[key]))
        if key in self.additions:
            return 0
        if self.tool.meta is None and not self.additions:
            return len(',"_meta":{}') + member
        return member + (1 if self.meta or self.additions else 0)

    def marked(self) -> types.Tool:
        if not self.additions:
            return self.tool
        meta = dict(self.meta)
        for key in (ALWAYS_LOAD, SEARCH_HINT, MAX_RESULT_SIZE):  # one key order, whatever order they were taken in
            if key in self.additions:
                meta[key] = self.additions[key]
        return self.tool.model_copy(update={"meta": meta})


def wire_bytes(tool: types.Tool, extras: Mapping[str, Any] | None = None) -> int:
    """Bytes of one tool in the tools/list JSON, wire-only extras spliced in (as the server's middleware does)."""
    size = len(tool.__pydantic_serializer__.to_json(tool, by_alias=True, exclude_none=True))  # UTF-8 bytes
    for key, value in (extras or {}).items():
        size += 2 + len(orjson.dumps(key)) + len(orjson.dumps(value))
    return size


def listing_bytes(tools: Sequence[types.Tool], extras: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Bytes of a tools/list `tools` array: the tools, their extras, the commas and brackets."""
    extras = extras or {}
    return sum(wire_bytes(t, extras.get(t.name)) for t in tools) + max(len(tools) - 1, 0) + 2


def hint_listing(
    entries: Sequence[Any], own_tools: Sequence[types.Tool], hot: HotSet, *, max_result_chars: int | None
) -> tuple[list[types.Tool], dict[str, dict[str, Any]]]:
    """Hint mode: every tool listed, marked, and never more bytes than `off` lists for the same tools.

    How it works: each downstream tool is first trimmed of what the protocol already implies
    (catalog/compact.py, lossless for every client); the bytes that frees are the budget. Marks are
    then taken in the order of what a client that reads them loses without them, each only if it
    still fits the budget:

    1. `anthropic/alwaysLoad` on the own tools, then the hot tools (without it Claude Code may
       defer a tool the session uses, costing the model a search before each use; a stub names
       `recall_tool_result`, so the own tools go first);
    2. `anthropic/maxResultSizeChars` on the hot tools (without it Claude Code files a result of
       50,000 chars or more that the proxy kept inline, and the model sees a 2 KB preview; the
       hot tools are the ones called);
    3. `defer_loading: true` on cold tools (the mark this mode is for, DESIGN.md; 21 bytes. Claude
       Code defers MCP tools by itself, so an unmarked cold tool is still deferred there);
    4. `anthropic/maxResultSizeChars` on the cold tools (as 2, for tools seldom called);
    5. a generated `anthropic/searchHint` on the deferred cold tools (Claude Code already searches
       the name and the whole description; the hint only ranks its first words higher).

    Within a step, tools go in listing order. A catalog with nothing to trim therefore gets few or
    no marks: it is listed as `off` lists it, which is the bound. Byte-stable: a function of the
    definitions, the hot set and the bound only. Deferral is a mark for
    whoever loads the tools, not a byte cut on the wire; it must not grow the wire either, and where
    it cannot be paid for the listing falls back to identity (`off`'s bytes), never to a guess.
    """
    key = (id(entries), tuple(t.name for t in own_tools), tuple(hot.names()), max_result_chars)
    with _HINT_CACHE_LOCK:
        cached = _HINT_CACHE.get(key)
        if cached is not None and cached[0] is entries and cached[1] == list(own_tools):
            _HINT_CACHE.move_to_end(key)
            return list(cached[2]), {k: dict(v) for k, v in cached[3].items()}
    tools, extras = _hint_listing(entries, own_tools, hot, max_result_chars=max_result_chars)
    with _HINT_CACHE_LOCK:
        _HINT_CACHE[key] = (entries, list(own_tools), tools, extras)
        while len(_HINT_CACHE) > _HINT_CACHE_SIZE:
            _HINT_CACHE.popitem(last=False)
    return list(tools), {k: dict(v) for k, v in extras.items()}


_HINT_CACHE_SIZE = 16
"""Listings kept per (catalog, own tools, hot set, bound): every tools/list page asks for the same one."""
_HINT_CACHE: OrderedDict[tuple[Any, ...], tuple[Any, list[types.Tool], list[types.Tool], dict[str, dict[str, Any]]]]
_HINT_CACHE = OrderedDict()
_HINT_CACHE_LOCK = threading.Lock()


def _hint_listing(
    entries: Sequence[Any], own_tools: Sequence[types.Tool], hot: HotSet, *, max_result_chars: int | None
) -> tuple[list[types.Tool], dict[str, dict[str, Any]]]:
    given = [e.tool for e in entries] + list(own_tools)
    off_bytes = listing_bytes(given)
    trimmed = [compact.tool(e.tool) for e in entries]
    rows = [_Marking(t, dict(t.meta or {})) for t in [*trimmed, *own_tools]]
    budget = off_bytes - listing_bytes([r.tool for r in rows])
    downstream = range(len(entries))
    is_hot = [e.name in hot for e in entries] + [True] * len(own_tools)

    def take(row: _Marking, key: str, value: Any, *, wire: bool = False) -> bool:
        nonlocal budget
        if not wire and key in row.meta and key != MAX_RESULT_SIZE:
            return False  # a key the server set itself is never overwritten
        cost = row.cost(key, value, wire=wire)
        if cost > budget:
            return False
        budget -= cost
        (row.extras if wire else row.additions)[key] = value
        return True

    for i in [*range(len(entries), len(rows)), *downstream]:  # own tools first: stubs name recall
        if is_hot[i]:
            take(rows[i], ALWAYS_LOAD, True)
    cold = [i for i in downstream if not is_hot[i] and rows[i].meta.get(ALWAYS_LOAD) is not True]
    if max_result_chars is not None:
        for i in downstream:
            if is_hot[i]:
                take(rows[i], MAX_RESULT_SIZE, max_result_chars)
    deferred = [i for i in cold if take(rows[i], DEFER_LOADING, True, wire=True)]
    if max_result_chars is not None:
        for i in downstream:
            if not is_hot[i]:
                take(rows[i], MAX_RESULT_SIZE, max_result_chars)
    for i in deferred:
        take(rows[i], SEARCH_HINT, search_hint(rows[i].tool))

    tools = [row.marked() for row in rows]
    extras = {row.tool.name: row.extras for row in rows if row.extras}
    listed = listing_bytes(tools, extras)
    if listed > off_bytes:  # the arithmetic above is exact; this is the guarantee should it ever drift
        logger.warning(
            "hint listing came to %d bytes, over off's %d: listing the trimmed tools unmarked", listed, off_bytes
        )
        return [row.tool for row in rows], {}
    return tools, extras
