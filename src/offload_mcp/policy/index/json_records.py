"""JSON records: the longest array of objects (or rows) in a document, one line per item by its
identifier fields, with the JSONPath that pages the rest (the package docstring says which fields and why)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice, repeat
from typing import Any

from ...text.data_view import literal_value
from ...text.jsonpath_keys import is_plain_key, key_segment
from ..textscan import lstripped_head
from .fields import (
    STANDOUTS_SHOWN,
    Fields,
    choose,
    counts_line,
    get,
    is_figure,
    is_scalar,
    standout_line,
    standouts,
    value_counts,
)
from .render import VALUE_CHARS, render

_SAMPLE = 50
_DISPLAY_CHARS = 40
"""A display name (a title, a commit message) in a row line: enough to tell rows apart."""
_LITERAL_MAX_CHARS = 100_000  # reading a literal costs time in proportion to its size (docs/design.md, "Data views")


def python_literal(text: str) -> Any | None:
    """A Python-repr list/dict (sqlite MCP server rows: `[{'id': 4, ...}]`), or None. Bounded in size."""
    if not lstripped_head(text, 3).startswith(("[{'", "{'", "[['", "[(")):
        return None  # before text.lstrip(), which copies a body that starts with blanks
    s = text.lstrip()
    if len(s) > _LITERAL_MAX_CHARS:
        return None
    return literal_value(s)


def json_index(doc: Any, budget: int, trm_id: str, *, json_paths: bool = True) -> str:
    """Index of the largest array of objects (or rows) in `doc`, at the top or under one key; '' if none.

    Fields (fields.py): the keys that identify a row first, then a table's date and numeric columns,
    then one display name; few-valued fields as value counts, rows that stand out listed whole, each
    said once above the rows. The line after the shown items pages the rest: with `json_paths` (the
    stored body is JSON) a JSONPath giving just the first indexed field of every remaining item, and
    one giving whole items; otherwise (a Python-repr body) a search or a char range.
    """
    if budget <= 0:
        return ""
    found = _records_or_entries(doc)
    if found is None:
        return ""
    path, items, entries = found
    if all(isinstance(it, (list, tuple)) for it in items[:_SAMPLE]):
        shown: _Shown | None = _row_lines(items)
    else:
        shown = _item_lines(items, bool(entries), budget)
    if shown is None:
        return ""
    prefixes = _url_prefixes(items) if isinstance(items[0], dict) else []
    noun = "entries" if entries else "items"
    head = f"index of {len(items):,} {noun} at {path}, one line each: "
    extra = [f"  {name} of every item starts {prefix}…" for name, prefix in prefixes] + shown.extra
    fields = shown.fields
    first = fields[0] if fields[0].startswith("[") else _field_path(items[0], fields[0])
    page = _pager(path, entries, trm_id, json_paths, first, shown.whats[0].split(", ")[0])
    return render(
        head,
        shown.whats,
        extra,
        shown.rows,
        budget,
        lambda k: f"{len(items) - k:,} more {noun} not shown: {page(k)}",
        len(items),
        paged=shown.paged,
        paged_below=1.0 if shown.table else 0.5,
        # A table's first rows with more figures than the rest read as a partial table: the room is left.
        enrich=not shown.table,
        keys=shown.key_counts,
    )


def _records_or_entries(doc: Any) -> tuple[str, list[Any], list[Any]] | None:
    """The records to index, their JSONPath, and a map's keys in order when the records are a map's
    entries (else no keys)."""
    found = _records(doc)
    if found is not None:
        return found[0], found[1], []
    found = _record_map(doc)
    if found is None:
        return None
    return found[0], found[1], [it[MAP_KEY] for it in found[1]]


@dataclass
class _Shown:
    """What an index shows of each item, richest level first, and what it says once above the items."""

    fields: list[str]
    rows: Iterator[tuple[str, ...]]
    """Each item at every level, read lazily: render stops once even the most compact level is past the
    budget, so a huge array costs what its first few hundred items do."""
    whats: tuple[str, ...]
    """What each level shows, named."""
    extra: list[str]
    key_counts: tuple[int, ...] = ()
    paged: int | None = None
    table: bool = False


def _row_lines(items: list[Any]) -> _Shown:
    """A list of rows: the first column, then the date and number columns of a table read by row, fewer
    as room requires."""
    columns, names = _figure_columns(items)
    col_levels = [[0, *columns[:n]] for n in range(len(columns), -1, -1)]
    return _Shown(
        fields=["[0]"],
        rows=(tuple(" | ".join(_cell(it, j) for j in level) for level in col_levels) for it in items),
        whats=tuple(", ".join(["first column", *names[: len(level) - 1]]) for level in col_levels),
        extra=[],
        paged=0 if columns else None,
        table=bool(columns),
    )


def _item_lines(items: list[Any], entries: bool, budget: int) -> _Shown | None:
    """Objects: their chosen fields, richest first (every chosen field, then fewer, the display name
    giving way first, then the first one alone), with value counts and standouts said once above them;
    None when no field is worth showing. `entries`: the items are a map's entries, whose key comes first."""
    chosen, wrapper = _choose(items)
    if entries:  # a map's key says which entry is which: always first
        chosen = Fields(
            [MAP_KEY, *(f for f in chosen.keys if f != MAP_KEY)],
            [f for f in chosen.values if f != MAP_KEY],
            [f for f in chosen.display if f != MAP_KEY],
            [f for f in chosen.few if f != MAP_KEY],
            chosen.numbers,
        )
    if not chosen.shown:
        return None
    chosen, extra = _without_counters(items, chosen)
    extra += _summaries(items, chosen, wrapper, budget)
    fields = chosen.shown
    levels = [fields[:n] for n in range(len(fields), 0, -1)]
    projected = len(chosen.keys) + len(chosen.values)
    return _Shown(
        fields=fields,
        rows=(_levels(it, fields, levels, projected) for it in items),
        whats=tuple(", ".join(level) for level in levels),
        extra=extra,
        key_counts=tuple(sum(1 for f in level if f in chosen.keys) for level in levels),
        # keys and figures, without the display name
        paged=len(fields) - projected if projected > 1 else None,
        table=bool(chosen.values),
    )


def _without_counters(items: list[Any], chosen: Fields) -> tuple[Fields, list[str]]:
    """A row number (id 1, 2, 3 ... in item order) is stated once instead of on every line; with no other
    key, the display name says which row is which. The fields left, and the lines that state the numbers."""
    fields = chosen.shown
    counters = [f for f in fields if _counts_up(items, f)]
    if not counters or len(counters) == len(fields):
        return chosen, []
    keys = [f for f in chosen.keys if f not in counters]
    display = [f for f in chosen.display if f not in counters]
    values = [f for f in chosen.values if f not in counters]
    chosen = Fields(keys or display, values, display if keys else [], chosen.few, chosen.numbers)
    return chosen, [f"  {f} of item k is {_get(items[0], f)} + k (it counts up in item order)" for f in counters]


def _pager(
    path: str, entries: list[Any], trm_id: str, json_paths: bool, first: str, first_what: str
) -> Callable[[int], str]:
    """The call that reads the items from the k-th on: a JSONPath into the stored JSON (the next map entry
    by its key, or the remaining items' first field and whole items), else a search or a char range."""

    def page(k: int) -> str:
        if entries and json_paths:
            one = path + key_segment(str(entries[k]))
            return f'recall_tool_result(mem_id="{trm_id}", json_path="{one}") for the next one, query="<key>" for any'
        if not json_paths:
            return f'recall_tool_result(mem_id="{trm_id}", query="<value>") or (mem_id="{trm_id}", offset=0, max_chars=8000)'
        return (
            f'recall_tool_result(mem_id="{trm_id}", json_path="{path}[{k}:]{first}") for their {first_what}, '
            f'json_path="{path}[{k}:{k + 20}]" for whole items'
        )

    return page


def _choose(items: list[Any]) -> tuple[Fields, str | None]:
    """The fields to show, under the key every item keeps its record under (GraphQL edges' `node`), if any."""
    sample = [it for it in items[:_SAMPLE] if isinstance(it, dict)]
    wrapper = _wrapper_key(sample) if sample else None
    if wrapper is None:
        return choose(items), None
    inner = choose([it.get(wrapper) if isinstance(it, dict) else None for it in items])

    def under(part: list[str]) -> list[str]:
        return [f"{wrapper}.{f}" for f in part]

    return Fields(
        under(inner.keys), under(inner.values), under(inner.display), under(inner.few), under(inner.numbers)
    ), wrapper


def _summaries(items: list[Any], chosen: Fields, wrapper: str | None, budget: int) -> list[str]:
    """Value counts of the few-valued fields, then the rows that stand out, whole: within a quarter of `budget`."""
    inner = [it.get(wrapper) if isinstance(it, dict) else None for it in items] if wrapper else items
    counted = {f: value_counts(items, f) for f in chosen.few}
    lines = [counts_line(f, c, lambda v: _scalar(v)[:30]) for f, c in counted.items() if len(c) >= 2]

    def unwrapped(field: str) -> str:
        return field.split(".", 1)[1] if wrapper else field

    marked, why = standouts(
        inner, chosen, {unwrapped(f): c for f, c in counted.items()}, [unwrapped(f) for f in chosen.numbers]
    )
    if marked:
        some = f"the first {STANDOUTS_SHOWN} of " if len(marked) > STANDOUTS_SHOWN else ""
        what = "item that stands" if len(marked) == 1 else "items that stand"
        lines.append(f"  {some}{len(marked):,} {what} out ({'; '.join(why)}), whole:")
        lines += [standout_line(k, inner[k], chosen) for k in marked[:STANDOUTS_SHOWN]]
    room = budget // 4
    out: list[str] = []
    for line in lines:
        room -= len(line) + 1
        if room < 0:
            break
        out.append(line)
    return out


_ROW_COLUMNS = 12
"""Columns of a list-of-rows table read for its figures."""


def _figure_columns(rows: list[Any]) -> tuple[list[int], list[str]]:
    """Up to 3 columns past the first whose sampled cells are all numbers, numbers as text or dates (a
    sheet of prices by date, its header row aside), and their names: the header's, else `column N`."""
    header = rows[0] if rows and all(isinstance(c, str) and not is_figure(c) for c in rows[0]) else None
    body = [r for r in rows[1 if header else 0 : _SAMPLE] if isinstance(r, (list, tuple))]
    if len(body) < 2:
        return [], []
    width = min(_ROW_COLUMNS, max(map(len, body)))
    found = [j for j in range(1, width) if all(len(r) > j and is_figure(r[j]) for r in body)][:3]
    names = [str(header[j]) if header and j < len(header) else f"column {j + 1}" for j in found]
    return found, names


def _cell(row: Any, j: int) -> str:
    return _scalar(row[j]) if len(row) > j else ""


def _levels(item: Any, fields: list[str], levels: list[list[str]], display: int) -> tuple[str, ...]:
    """The item at each level; its display name (from field `display` on) at most _DISPLAY_CHARS."""
    values = [_scalar(_get(item, f)) if isinstance(item, dict) else "" for f in fields]
    values[display:] = [v if len(v) <= _DISPLAY_CHARS else v[: _DISPLAY_CHARS - 1] + "…" for v in values[display:]]
    return tuple(" | ".join(values[: len(level)]) for level in levels)


_NESTED_DEPTH = 6
_NESTED_KEYS = 2_000


def _records(doc: Any) -> tuple[str, list[Any]] | None:
    """The array of records to index and its JSONPath: the document itself, else the longest one under a
    key, else the longest one deeper down (GraphQL's `$.data.repository.issues.nodes`, an API's
    `$.result.data.items`), through objects only, at most 6 keys deep and 2,000 keys read below the top.
    Why deeper: a GraphQL search answer got `JSON object with 1 key {data: object{repository}}` and no
    index, so every issue number and id sat behind the stub, and the model had to guess the path to page
    them."""
    if isinstance(doc, list) and len(doc) >= 2 and _is_records(doc):
        return "$", doc
    if not isinstance(doc, dict):
        return None
    best: tuple[str, list[Any]] | None = None
    level = [("$", doc)]
    keys = _NESTED_KEYS
    for _ in range(_NESTED_DEPTH):
        deeper: list[tuple[str, dict[str, Any]]] = []
        for path, node in level:
            if node is not doc:
                keys -= len(node)
                if keys < 0:
                    return None  # a map of thousands of objects is no envelope: its keys are not all read
            for key, value in node.items():
                if not is_plain_key(key):
                    continue  # a path through it would not read back
                if isinstance(value, list):
                    if len(value) >= 2 and _is_records(value) and (best is None or len(value) > len(best[1])):
                        best = (f"{path}.{key}", value)
                elif isinstance(value, dict):
                    deeper.append((f"{path}.{key}", value))
        if best is not None or not deeper:
            return best  # the shallowest level that has one: a top-level array wins over a longer nested one
        level = deeper
    return None


def _field_path(item: Any, field: str) -> str:
    """`field` as JSONPath steps: `.id`, `.user.id`, `['Order ID']`, `['1. open']` (a top-level key first)."""
    if isinstance(item, dict) and field in item:
        return key_segment(field)
    return "".join(key_segment(part) for part in field.split("."))


MAP_KEY = "(key)"
"""The field that holds a map entry's own key, when the records are a map's entries."""
_MAP_MIN = 10


def _record_map(doc: Any) -> tuple[str, list[Any]] | None:
    """A map of records (`{"2024-01-02": {"open": ..., "close": ...}, ...}`, `{"SKU-1": {...}}`): the document
    itself or the largest one under one of its keys, as a list of entries, each its key (`(key)`) and its
    fields, with the JSONPath of the map. At least 10 entries whose sampled values are all objects with a
    plain value. Why: daily prices keyed by date and products keyed by SKU got no index at all."""
    candidates = [("$", doc)] if isinstance(doc, dict) else []
    if isinstance(doc, dict) and len(doc) <= _NESTED_KEYS:
        candidates += [("$" + key_segment(k), v) for k, v in doc.items() if isinstance(k, str) and isinstance(v, dict)]
    best: tuple[str, dict[Any, Any]] | None = None
    for path, node in candidates:
        if len(node) >= _MAP_MIN and (best is None or len(node) > len(best[1])) and _is_record_map(node):
            best = (path, node)
    if best is None:
        return None
    return best[0], [{MAP_KEY: k, **v} for k, v in best[1].items()]


def _is_record_map(node: dict[Any, Any]) -> bool:
    sample = list(islice(node.values(), _SAMPLE))
    return all(isinstance(v, dict) and MAP_KEY not in v and any(map(is_scalar, v.values())) for v in sample)


def _is_records(items: list[Any]) -> bool:
    sample = items[:_SAMPLE]
    return all(isinstance(it, dict) for it in sample) or all(isinstance(it, (list, tuple)) and it for it in sample)


def _counts_up(items: list[Any], field: str) -> bool:
    """The field is an integer that goes up by one from item to item (a row number): derivable from the position."""
    first, last = (_get(it, field) if isinstance(it, dict) else None for it in (items[0], items[-1]))
    if not isinstance(first, int) or not isinstance(last, int) or last - first != len(items) - 1:
        return False  # cheap rejection before reading every item
    if "." not in field and len(items) >= 3 and set(map(type, items)) == {dict}:
        # The loop below in C: the values in item order are first, first + 1, ... (== alone also admits
        # True and 2.0, hence the type check; anything else unusual is left to the loop).
        values = list(map(dict.get, items, repeat(field)))
        if values != list(range(first, first + len(items))):
            return False  # the loop stops at the first value out of step
        if set(map(type, values)) == {int}:
            return True
    previous: int | None = None
    for it in items:
        value = _get(it, field) if isinstance(it, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or (previous is not None and value != previous + 1):
            return False
        previous = value
    return len(items) >= 3


def _wrapper_key(sample: list[dict[str, Any]]) -> str | None:
    """The key every item keeps its record under, as GraphQL's edges do (`{"cursor": "Y3Vy…", "node":
    {"id", "number", "title"...}}`): each item's one object-valued key, the same in all, beside at most
    2 other keys. Why: of such an edge only `node.title` was indexed (nested fields counted only as
    login, name and title), so the ids and numbers of a page of pull requests sat behind the stub."""
    wrapper: str | None = None
    for it in sample:
        inner = [k for k, v in it.items() if isinstance(v, dict)]
        if len(inner) != 1 or len(it) > 3 or (wrapper is not None and inner[0] != wrapper):
            return None
        wrapper = inner[0]
    return wrapper if is_plain_key(wrapper) else None


_get = get


def _scalar(v: Any) -> str:
    if v is None:
        return "-"
    text = str(v).replace("\n", " ").replace("|", "/")
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _url_prefixes(items: list[Any]) -> list[tuple[str, str]]:
    """(field, common prefix) of *_url fields shared by every sampled item: owner/repo without 7 URLs per item."""
    sample = [it for it in items[:_SAMPLE] if isinstance(it, dict)]
    out: list[tuple[str, str]] = []
    keys = [k for k in ("html_url", "url") if all(isinstance(it.get(k), str) for it in sample)]
    for key in keys:
        prefix = os.path.commonprefix([it[key] for it in sample])
        if len(prefix) >= 12 and "/" in prefix[8:]:
            out.append((key, prefix[:160]))
    return out[:2]
