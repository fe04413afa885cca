"""Which fields of a list of records the index shows, and what it says of the rest, judged by the values
as much as by the names.

- keys: fields that identify a row. An id-like name (`id`, `_id`, `uuid`, `sku`, `slug`, `*_id`, `*Id`,
  `part_num`...), or values unique per row and shaped like identifiers (digits, hex, uuids, slugs, codes
  such as ORD-2025-00042); dates key a row only when nothing else does (daily prices). Nested keys
  (`user.id`) only when the top level has none.
- values: the date and numeric columns of a table read by row (flat records: prices by date, orders with
  their dates and totals), shown after the keys: the row an agent reads is its key with its figures.
- display: one display name (name, title, login, email; at the top level, any text with spaces), shown
  last, so it is the first to give way when a row must be shorter.
- few: fields with few distinct values (status, state, type, labels): one line of value counts each.
- standouts: rows that stand out, listed whole: a field that only a handful of rows have (`error`), or a
  value of a few-valued field that only a handful of rows have (a failing status).

Why: indexed by names alone, a long list showed no sign of its few error items, and a list of daily
prices showed its dates alone (docs/design.md, "The identifier index"). Pure and deterministic: same
items, same choice.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from itertools import repeat
from statistics import median
from typing import Any

import orjson

from ...text.jsonpath_keys import is_plain_key

SAMPLE = 200
"""Items read to classify fields; counts and standouts read every item."""

_KEY_NAMES = ("id", "sha", "number", "key", "path", "order_no", "slug", "uuid", "sku", "ref")
"""Exact key names, in the order they are shown."""
_KEY_SUFFIXES = (
    "_id",
    "_no",
    "_num",
    "_ref",
    "_key",
    "_sha",
    "_number",
    "_uuid",
    "_sku",
    "_slug",
    "_code",
    "Id",
    "ID",
    "No",
    "Num",
    "Number",
    "Key",
    "Uuid",
    "Sku",
    "Slug",
    "Code",
)
_DISPLAY_NAMES = ("name", "title", "login", "email", "full_name", "display_name", "subject", "label")
_NOT_KEYS = ("node_id",)  # GitHub GraphQL ids: 26 chars per item, never reused in the corpora
_MAX_KEYS = 3
_MAX_VALUES = 3
_DISPLAY_CHARS = 80
"""A display field's values average at most this: a body of prose is no name."""
_TABLE_FIELDS = 16
"""A table read by row: at most this many fields, nearly all of them scalars."""
_FEW_VALUES = 10
_COUNTED_FIELDS = 4
_COUNTS_SHOWN = _FEW_VALUES
_RARE_SHARE = 0.02
"""A field or value that at most 2% of rows have (in a list of at least 20) makes those rows stand out."""
_RARE_MIN_ROWS = 20
_RARE_FEW = 3
_OUTLIER_MADS = 20
_OUTLIER_SAMPLE = 1000
"""Or at most 3 rows, in a shorter list."""
STANDOUTS_SHOWN = 5
_STANDOUT_CHARS = 400

_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_HEX = re.compile(r"(?=[a-f]*\d)[0-9a-f]{6,64}|(?=[A-F]*\d)[0-9A-F]{6,64}")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/#@+-]{1,79}")
"""One token: a slug (`brick-2x4`), a code (`ORD-2025-00042`, `SKU_3001`), a resource name (`projects/7/x`)."""
_DECIMAL = re.compile(r"-?\d+(?:\.\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?")


@dataclass(frozen=True)
class Fields:
    keys: list[str]
    values: list[str]
    display: list[str]
    few: list[str]
    numbers: list[str] = dataclass_field(default_factory=list)
    """Every numeric field, shown or not: a figure far outside the rest of its column marks its row."""

    @property
    def shown(self) -> list[str]:
        """The fields of a row line, richest first: keys, then values, then the display name."""
        return self.keys + self.values + self.display


def get(item: Any, field: str) -> Any:
    """The item's value of `field`: a top-level key (`1. open` too), else a path of keys (`user.id`)."""
    if not isinstance(item, dict):
        return None
    if "." not in field or field in item:
        return item.get(field)
    value: Any = item
    for key in field.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _nested(field: str) -> bool:
    """A path one level down (`user.id`), not a top-level key that holds a dot (`1. open`)."""
    return "." in field and all(map(is_plain_key, field.split(".")))


def is_scalar(v: Any) -> bool:
    return v is not None and isinstance(v, (str, int, float)) and not isinstance(v, bool)


def is_key_name(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    if leaf in _NOT_KEYS:
        return False
    return leaf in _KEY_NAMES or (len(leaf) > 2 and leaf.endswith(_KEY_SUFFIXES)) or leaf == "_id"


def _is_display_name(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    return leaf in _DISPLAY_NAMES or leaf.endswith(("_name", "Name", "_title", "Title"))


def _id_shaped(v: Any) -> bool:
    """A value that reads as an identifier: digits, hex, a uuid, a slug or code; no URL, no prose."""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        return False
    if isinstance(v, int):
        return True
    if "://" in v or " " in v:
        return False
    return bool(_UUID.fullmatch(v) or _HEX.fullmatch(v) or (_CODE.fullmatch(v) and _code_like(v)))


def _code_like(v: str) -> bool:
    # A plain word ("apple", "Paris") is a name; a slug or code has a digit or a joiner.
    return any(c.isdigit() for c in v) or any(c in v for c in "-_/:#")


def is_figure(v: Any) -> bool:
    """A number, a number sent as text ("12.50") or a date: what a table read by row is read for."""
    if isinstance(v, bool):
        return False
    return isinstance(v, (int, float)) or (isinstance(v, str) and (_DECIMAL.fullmatch(v) is not None or _is_date(v)))


def _is_date(v: Any) -> bool:
    return isinstance(v, str) and _DATE.fullmatch(v) is not None


@dataclass
class _Stats:
    present: int = 0
    distinct: int = 0
    ids: int = 0
    dates: int = 0
    numbers: int = 0
    texts: int = 0
    spaced: int = 0
    chars: int = 0
    urls: int = 0
    listed: int = 0
    """Values that are lists of scalars (labels, tags)."""


def _stats(sample: list[dict[str, Any]], field: str) -> _Stats:
    s = _Stats()
    seen: set[Any] = set()
    for it in sample:
        v = get(it, field)
        if isinstance(v, list) and all(is_scalar(_label(x)) for x in v):
            s.listed += 1
            continue
        if not is_scalar(v):
            continue
        s.present += 1
        seen.add(v)
        if isinstance(v, (int, float)):
            s.numbers += 1
            s.ids += isinstance(v, int)
            continue
        if _DECIMAL.fullmatch(v):
            # A figure sent as text ("12.50", "82488700"): an identifier by its field's name only, as a number is.
            s.numbers += 1
            continue
        s.texts += 1
        s.chars += len(v)
        s.urls += "://" in v
        s.spaced += " " in v.strip()
        s.dates += _is_date(v)
        s.ids += _id_shaped(v)
    s.distinct = len(seen)
    return s


def _candidates(sample: list[dict[str, Any]]) -> list[str]:
    """Scalar (or list-of-scalar) fields most sampled items have, top level first, then one level down."""
    need = (len(sample) + 1) // 2
    top: Counter[str] = Counter()
    nested: Counter[str] = Counter()
    for it in sample:
        for k, v in it.items():
            if not isinstance(k, str):
                continue
            if is_scalar(v) or isinstance(v, list):
                top[k] += 1
            elif isinstance(v, dict) and is_plain_key(k):
                for k2, v2 in v.items():
                    if isinstance(k2, str) and is_scalar(v2) and is_plain_key(k2):
                        nested[f"{k}.{k2}"] += 1
    ordered = [k for k, c in top.items() if c >= need] + [k for k, c in nested.items() if c >= need]
    return ordered


def choose(items: list[Any]) -> Fields:
    sample = [it for it in items[:SAMPLE] if isinstance(it, dict)]
    if not sample:
        return Fields([], [], [], [])
    rows = len(sample)
    table = _is_table(sample)
    name_keys: list[str] = []
    value_keys: list[str] = []
    dates: list[str] = []
    numbers: list[str] = []
    display: list[str] = []
    few: list[str] = []
    constant: list[str] = []
    for field in _candidates(sample):
        if field.rsplit(".", 1)[-1] in _NOT_KEYS:
            continue
        s = _stats(sample, field)
        if s.listed >= max(1, s.present):
            if rows >= 10 and _few_listed(sample, field):
                few.append(field)
            continue
        if s.present < (rows + 1) // 2 or s.urls:
            continue  # URLs: their common prefix is said once (json_records._url_prefixes)
        if rows >= 3 and s.distinct < 2:
            # One value across the sample (committer.login "web-flow") identifies nothing; its counts
            # over every row may show the few rows that differ (status "ok" but for 2 "failed").
            if rows >= 10 and s.texts == s.present:
                constant.append(field)
            continue
        if rows >= 10 and s.distinct <= _FEW_VALUES and s.distinct * 4 <= s.present and not s.numbers * 2 > s.present:
            few.append(field)
            continue
        unique = s.distinct == s.present
        if is_key_name(field):
            name_keys.append(field)
        elif s.texts and s.dates == s.present:
            dates.append(field)
        elif s.texts == s.present and s.ids == s.present and unique and rows >= 2:
            value_keys.append(field)
        elif s.numbers == s.present:
            numbers.append(field)
        elif s.texts == s.present and (_is_display_name(field) or (s.spaced * 2 >= s.present and not _nested(field))):
            if s.chars <= _DISPLAY_CHARS * s.present:
                display.append(field)
    keys = _key_order(_ranked(name_keys), value_keys)
    unique_dates = [f for f in dates if _unique(sample, f)]
    if not keys and unique_dates:
        keys = unique_dates[:1]
    if not keys and display:
        keys, display = display[:1], display[1:]  # a name is what identifies a row that has nothing else
    values = [f for f in dates + numbers if f not in keys] if table else []
    display = [f for f in display if not _nested(f)] + [f for f in display if _nested(f)]
    return Fields(
        keys[:_MAX_KEYS],
        values[:_MAX_VALUES],
        _display_first(display)[:1],
        (few + constant)[:_COUNTED_FIELDS],
        [f for f in numbers if f not in keys and not _nested(f)],
    )


def _ranked(fields: list[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(_KEY_NAMES)}
    exact = sorted((f for f in fields if f in rank), key=lambda f: rank[f])
    return exact + [f for f in fields if f not in rank]


def _key_order(named: list[str], by_value: list[str]) -> list[str]:
    """Keys by name, then keys by value; nested ones (`user.id`) only where the top level has none of that
    kind. A key named so one level down (YouTube's `id.videoId`) comes before a top-level one recognised by
    its values alone (an `etag`)."""
    named_top = [k for k in named if not _nested(k)]
    value_top = [k for k in by_value if not _nested(k)]
    first = named_top or named
    return first + (value_top if first or value_top else by_value)


def _display_first(display: list[str]) -> list[str]:
    """Named display fields first (title before a nested login), then other text with spaces."""
    named = [f for f in display if _is_display_name(f)]
    return named + [f for f in display if f not in named]


def _unique(sample: list[dict[str, Any]], field: str) -> bool:
    values = [get(it, field) for it in sample]
    return all(map(is_scalar, values)) and len(set(values)) == len(values)


def _is_table(sample: list[dict[str, Any]]) -> bool:
    """Flat records read by row: few fields, nearly all scalars (or null)."""
    fields = scalars = 0
    for it in sample:
        if len(it) > _TABLE_FIELDS:
            return False
        fields += len(it)
        scalars += sum(1 for v in it.values() if v is None or isinstance(v, (str, int, float)))
    return fields > 0 and scalars * 10 >= fields * 9


def _few_listed(sample: list[dict[str, Any]], field: str) -> bool:
    """Lists of labels drawn from few distinct ones."""
    values = (get(it, field) for it in sample)
    seen = {label for v in values if isinstance(v, list) for label in map(_label, v) if is_scalar(label)}
    return 0 < len(seen) <= _FEW_VALUES * 2


def _label(x: Any) -> Any:
    """A label as a list holds it: itself, or a label object's name (GitHub's `{"id", "name": "bug", "color"}`)."""
    return x.get("name") if isinstance(x, dict) else x


def _values(items: list[Any], field: str) -> list[Any]:
    """The field's value in every item, in order (None where it has none)."""
    if "." not in field:
        try:
            return list(map(dict.get, items, repeat(field)))  # every item, in C
        except TypeError:
            pass  # an item that is no object
    return [get(it, field) for it in items]


def _all_dicts(items: list[Any]) -> bool:
    return set(map(type, items)) == {dict}


def value_counts(items: list[Any], field: str) -> Counter[Any]:
    """How many items hold each value of `field` (each label of a list of labels); empty if unhashable."""
    values = _values(items, field)
    if any(isinstance(v, list) for v in values[:SAMPLE]):
        return Counter(label for v in values if isinstance(v, list) for label in map(_label, v) if is_scalar(label))
    try:
        counts = Counter(values)  # in C; then the non-values dropped
    except TypeError:
        return Counter()
    for v in [v for v in counts if not is_scalar(v)]:
        del counts[v]
    return counts


def counts_line(field: str, counts: Counter[Any], clip: Callable[[str], str]) -> str:
    """`field: paid 1,990, failed 8, +3 more values` (most frequent first, ties by value)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    shown = ", ".join(f"{clip(str(v))} {c:,}" for v, c in ranked[:_COUNTS_SHOWN])
    more = f", +{len(ranked) - _COUNTS_SHOWN} more values" if len(ranked) > _COUNTS_SHOWN else ""
    return f"  {field} (value counts): {shown}{more}"


def standouts(
    items: list[Any], fields: Fields, counted: dict[str, Counter[Any]], figures: list[str]
) -> tuple[list[int], list[str]]:
    """The rows that stand out, in item order, and why (the fields or values that set them apart):
    `counted` the value counts of few-valued fields, `figures` a table's numeric columns."""
    n = len(items)
    if n < _RARE_MIN_ROWS:
        return [], []
    rare = max(_RARE_FEW, int(n * _RARE_SHARE))
    why: list[str] = []
    marked: set[int] = set()
    # A field only a handful of rows give a value (an `error`): a key most rows lack, or one null or empty in
    # most. Counted in C (map over every item); a row is read in Python only once it is known to stand out.
    if not _all_dicts(items):
        return [], []
    usual = set(items[0]).intersection(*items[1:SAMPLE])
    odd_sized = n - _usual_size(items)
    extra = [i for i, size in enumerate(map(len, items)) if size > len(usual)] if 0 < odd_sized <= rare else []
    rare_keys: dict[str, list[int]] = {}
    for i in extra:
        for key in items[i]:
            if key not in usual and isinstance(key, str):
                rare_keys.setdefault(key, []).append(i)
    for key in sorted(usual, key=str):
        if isinstance(key, str) and not any(map(dict.get, items[:SAMPLE], repeat(key))):
            if 0 < sum(map(bool, map(dict.get, items, repeat(key)))) <= rare:
                rare_keys[key] = [i for i, v in enumerate(map(dict.get, items, repeat(key))) if v]
    for key in sorted(rare_keys):
        having = [i for i in rare_keys[key] if items[i].get(key) not in (None, "", [], {})]
        if 0 < len(having) <= rare:
            marked.update(having)
            why.append(f"{key} set")
    # A value of a few-valued field that only a handful of rows have, beside a usual one (a failing status).
    for field, counts in counted.items():
        if len(counts) < 2 or max(counts.values()) * 2 < n:
            continue
        odd = {v for v, c in counts.items() if c <= rare}
        if not odd:
            continue
        values = _values(items, field)
        hits = [i for v in sorted(odd, key=str) for i in _positions(values, v)]
        if hits and len(hits) <= rare:
            marked.update(hits)
            why.append(f"{field} " + "/".join(sorted(map(str, odd))))
    # A figure far outside the rest (a total 40 times the usual one), in a table's numeric columns.
    for field in figures:
        far = _far_outside(_values(items, field), rare)
        if far:
            marked.update(far)
            why.append(f"{field} far outside the rest")
    return sorted(marked), why


def _far_outside(values: list[Any], rare: int) -> list[int]:
    """Rows whose number lies more than _OUTLIER_MADS median absolute deviations from the median, judged on
    values strided across the whole list (a drifting series is judged by all of it); none when more than
    `rare` rows would be."""
    if len(values) < _RARE_MIN_ROWS or not set(map(type, values)) <= {int, float}:
        return []  # a column of numbers only (no bool, no gap): its extremes are then read in C
    spread = values[:: max(1, len(values) // _OUTLIER_SAMPLE)]
    mid = median(spread)
    mad = median(abs(v - mid) for v in spread)
    if not mad:
        return []
    low, high = mid - _OUTLIER_MADS * mad, mid + _OUTLIER_MADS * mad
    if min(values) >= low and max(values) <= high:
        return []
    far = [i for i, v in enumerate(values) if not low <= v <= high]
    return far if len(far) <= rare else []


def _usual_size(items: list[Any]) -> int:
    """How many items have the most common number of keys."""
    return max(Counter(map(len, items)).values())


def _positions(values: list[Any], value: Any) -> list[int]:
    """Where `value` sits in `values`, by list.index (in C): the rare values of a field are few."""
    out: list[int] = []
    at = -1
    while True:
        try:
            at = values.index(value, at + 1)
        except ValueError:
            return out
        if is_scalar(values[at]):
            out.append(at)


def standout_line(k: int, item: Any, fields: Fields) -> str:
    """The row whole, as compact JSON, its key fields first; clipped at a few hundred chars."""
    if isinstance(item, dict):
        first = {f: item[f] for f in fields.keys if f in item}
        item = {**first, **{k2: v for k2, v in item.items() if k2 not in first}}
    try:
        text = orjson.dumps(item, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:  # a Python literal's integer past 64 bits, which orjson refuses
        text = json.dumps(item, default=str, separators=(",", ":"), ensure_ascii=False, skipkeys=True)
    line = f"  item {k}: {text}"
    return line if len(line) <= _STANDOUT_CHARS else line[: _STANDOUT_CHARS - 1] + "…"
