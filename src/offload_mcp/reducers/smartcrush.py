"""smartcrush: a long JSON array keeps its first, last and error-signalling items.

How it works: the text must be a JSON array (or a JSON object whose largest
top-level value is one) of at least `min_items` items. Items are located by
their raw spans, so every kept item is byte-verbatim (schema-preserving):
`keep_first` + `keep_last` items plus every item whose content carries an error
signal (an `error`/`exception`/`failure` key with a non-empty value, or a string
value naming an error or failure). A note `[k of N items shown (indices);
full array: call context_guru_expand <<cg:HASH>>]` follows the array.
Measured reason for the size floor (`min_chars`, default 60,000): an agent
reads an array result as data, and on real MCP results the first+last window
hid the row the agent needed next (45% of the values hidden by reducers there:
stock prices, SQL rows, hourly weather; on `mcp_dev.jsonl.gz` 94 values of one
7.5K weather result). Below the floor every item stays; above it smartcrush is
a last resort like collapse: the shaper judges an output that large by the
policy first (an offloaded one gets a stub with a JSONPath-recallable index,
not a window), and smartcrush only windows what the policy keeps inline.
When it shines: list endpoints, search hits, record dumps kept inline above the floor.
When it is inert: smaller outputs (`below_min_chars`), non-JSON or non-array text (`not_json_array`), short arrays
(`too_few_items`), every item kept anyway (`nothing_to_drop`), JSON nested
beyond the decoder's limit (`too_deeply_nested`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .base import Declined, Outcome, ReduceContext, cg_hash, common_decline, marker, never_worse
from .settings import SmartcrushSettings

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
ERROR_KEY_RE = re.compile(r"(?i)^(error|errors|exception|failure|failed|fault|stderr|traceback)$")
ERROR_WORD_RE = re.compile(r"(?i)\b(error|exception|traceback|fail(?:ed|ure)?|fatal|panic)\b")
ANY_SIGNAL_RE = re.compile(r"(?i)error|exception|traceback|fail|fatal|panic|fault|stderr")
"""Cheap whole-text pre-check: without any of these words no item can signal an error."""
MAX_SIGNAL_DEPTH = 6


def _signals_error(value: Any, depth: int = 0) -> bool:
    if depth > MAX_SIGNAL_DEPTH:
        return False
    if isinstance(value, str):
        return bool(ERROR_WORD_RE.search(value))
    if isinstance(value, dict):
        for key, item in value.items():
            if ERROR_KEY_RE.match(key) and item not in (None, False, "", [], {}, 0):
                return True
            if _signals_error(item, depth + 1):
                return True
        return False
    if isinstance(value, list):
        return any(_signals_error(item, depth + 1) for item in value)
    return False


def _skip_ws(text: str, pos: int) -> int:
    """The first position at or after `pos` that is not JSON whitespace."""
    match = _WS.match(text, pos)
    return match.end() if match else pos  # `[ \t\n\r]*` matches the empty string, so there is always a match


def array_items(text: str, start: int) -> tuple[list[tuple[int, int, Any]], int] | None:
    """Spans (begin, end, value) of the items of the array opening at `start`, and its end."""
    if text[start] != "[":
        return None
    items: list[tuple[int, int, Any]] = []
    pos = _skip_ws(text, start + 1)
    if pos < len(text) and text[pos] == "]":
        return items, pos + 1
    while True:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            return None
        items.append((pos, end, value))
        pos = _skip_ws(text, end)
        if pos >= len(text):
            return None
        if text[pos] == "]":
            return items, pos + 1
        if text[pos] != ",":
            return None
        pos = _skip_ws(text, pos + 1)


def _find_array(text: str) -> tuple[int, list[tuple[int, int, Any]], int] | None:
    """The array to crush: the whole text, or the largest array value of a top-level object."""
    begin = _skip_ws(text, 0)
    if begin >= len(text) or text[begin] not in "[{":
        return None
    if text[begin] == "[":
        found = array_items(text, begin)
        if found is None or text[found[1] :].strip():
            return None
        return begin, found[0], found[1]
    try:
        obj, end = _DECODER.raw_decode(text, begin)
    except ValueError:
        return None
    if text[end:].strip() or not isinstance(obj, dict):
        return None
    # Locate the top-level values by re-scanning keys; only arrays directly under the object qualify.
    best: tuple[int, list[tuple[int, int, Any]], int] | None = None
    pos = _skip_ws(text, begin + 1)
    while pos < end and text[pos] == '"':
        _key, key_end = _DECODER.raw_decode(text, pos)
        pos = _skip_ws(text, key_end) + 1  # past ':'
        pos = _skip_ws(text, pos)
        if text[pos] == "[":
            found = array_items(text, pos)
            if found is not None and (best is None or len(found[0]) > len(best[1])):
                best = (pos, found[0], found[1])
        _value, value_end = _DECODER.raw_decode(text, pos)
        pos = _skip_ws(text, value_end)
        if text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        else:
            break
    return best


def _ranges(indices: list[int]) -> str:
    parts: list[str] = []
    run_start = prev = indices[0]
    for idx in indices[1:] + [None]:
        if idx is not None and idx == prev + 1:
            prev = idx
            continue
        parts.append(str(run_start) if run_start == prev else f"{run_start}-{prev}")
        if idx is not None:
            run_start = prev = idx
    return ", ".join(parts)


class Smartcrush:
    name = "smartcrush"
    yields_to_offload = True
    """It windows an output (a sample of an array's records): a stub with an index and sliced recall serves better."""

    def __init__(self, settings: SmartcrushSettings) -> None:
        self.settings = settings

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        if len(text) < self.settings.min_chars:
            return Declined("below_min_chars")
        if (gate := common_decline(text, ctx)) is not None:
            return gate
        stripped = text.lstrip()
        if not stripped or stripped[0] not in "[{":
            return Declined("not_json_array")
        try:
            found = _find_array(text)
        except RecursionError:  # the stdlib decoder's nesting limit: nothing a list endpoint returns
            return Declined("too_deeply_nested")
        if found is None:
            return Declined("not_json_array")
        open_at, items, close_end = found
        total = len(items)
        if total < self.settings.min_items:
            return Declined("too_few_items")
        s = self.settings
        keep = set(range(min(s.keep_first, total))) | set(range(max(total - s.keep_last, 0), total))
        if ANY_SIGNAL_RE.search(text, open_at, close_end):
            keep |= {i for i, (_b, _e, value) in enumerate(items) if _signals_error(value)}
        if len(keep) >= total:
            return Declined("nothing_to_drop")
        kept = sorted(keep)
        multiline = "\n" in text[open_at:close_end]
        joiner = ",\n" if multiline else ", "
        body = joiner.join(text[items[i][0] : items[i][1]] for i in kept)
        array = f"[\n{body}\n]" if multiline else f"[{body}]"
        hash_ = cg_hash(text)
        dropped = sorted(set(range(total)) - keep)
        note = (
            f"[{len(kept)} of {total} items shown ({_ranges(kept)}); items {_ranges(dropped)} omitted; "
            f"full array: call context_guru_expand {marker(hash_)}]"
        )
        reduced = f"{text[:open_at]}{array}{text[close_end:]}"
        sep = "" if reduced.endswith("\n") else "\n"
        return never_worse(text, f"{reduced}{sep}{note}", hash_)
