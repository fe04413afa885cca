"""Cold-tool deferral on tools/list, in the forms MCP clients can use (seed 004).

Tool definitions are often most of an agent's starting context. The hot set
(catalog/hotset.py) stays loaded; every other downstream tool is cold, and
the mode (`catalog.deferral`) says how cold tools are offered:

- `hint` (default): every tool is listed. A cold tool carries the wire-level
  `"defer_loading": true` (a Messages-API field, spliced into the JSON by
  the server's middleware because the SDK's models would drop it) and
  `_meta["anthropic/searchHint"]`, a short phrase from its description; a hot
  tool carries `_meta["anthropic/alwaysLoad"]: true`. Claude Code reads the
  `_meta` keys and defers MCP tools itself; other clients ignore them and
  load everything, so hint mode never hides a tool from anyone.
- `search`: tools/list holds the hot tools plus `search_tools` and
  `invoke_tool` (tools/tool_search.py, tools/invoke.py). Cold tools are
  reached only through them, so it cuts definition tokens on any client,
  including ones that ignore `notifications/tools/list_changed`. Every
  listed tool is marked `alwaysLoad` so that a client which defers MCP tools
  by itself does not hide the search tool behind its own search.
- `off`: every tool exactly as its server gave it; no marks at all.

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
(everything above it is offloaded whatever the gate says; it defaults to
Claude Code's own MAX_MCP_OUTPUT_TOKENS, 25,000 tokens x 4 chars), so every
downstream tool — and `invoke_tool`, whose results are downstream results —
declares exactly that value: the proxy is the one place a large result is
decided, and Claude Code keeps what the proxy kept. The key is left out
(Claude Code's default applies) when the proxy does not decide sizes: in
`observe` mode, with the policy disabled, or with `client_max_result_chars`
set to 0 (no bound to promise). Unlike the deferral keys this one is always
the proxy's value, since the proxy, not the downstream server, now shapes
the result's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import mcp_types as types

from .hotset import Candidate, HotSet

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

    Re-checked against replay --client claude-code (issue 12): with the defaults the largest result
    the proxy sends inline is 26,645 chars on bench/data/corpus/mcp_servers.jsonl.gz, 28,928 on the
    shared dev corpus and 9,868 on mcp_dev (the 30K pre-filter and the gate offload the rest; stubs
    are <= ~8K), so Claude Code's own 50,000 would change nothing there. It matters when the proxy
    keeps a 50K-100K result inline: with the gate declining (an unpriced model) and reducers off,
    declaring nothing lets Claude Code file 8 such results on the MCP corpus to disk (2 needed facts
    behind the file, 98.60% visible) and 1 on dev; declaring client_max_result_chars keeps all of
    them (100%). Above it Claude Code's MAX_MCP_OUTPUT_TOKENS rejects anyway, so a larger value buys nothing.
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
    extras: dict[str, dict[str, Any]] = {}
    listed: list[types.Tool] = []
    if mode == "hint":
        for e in entries:
            tool, wire = hint_marks(e.tool, hot=e.name in hot, max_result_chars=max_result_chars, downstream=True)
            listed.append(tool)
            if wire:
                extras[tool.name] = wire
        listed += [hint_marks(t, hot=True, max_result_chars=None, downstream=False)[0] for t in own_tools]
        return listed, extras
    if mode == "search":
        for e in entries:
            if e.name in hot:
                listed.append(hint_marks(e.tool, hot=True, max_result_chars=max_result_chars, downstream=True)[0])
        listed += [hint_marks(t, hot=True, max_result_chars=None, downstream=False)[0] for t in own_tools]
        for t in search_tools:
            listed.append(
                hint_marks(t, hot=True, max_result_chars=max_result_chars, downstream=t.name == invoke_name)[0]
            )
        return listed, extras
    raise ValueError(f"unknown deferral mode {mode!r}: expected hint, search or off")
