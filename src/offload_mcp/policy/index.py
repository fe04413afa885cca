"""The identifier index of an offloaded result: the values an agent passes to its next call.

Why: on bench/data/corpus/mcp_servers.jsonl.gz (replay --client claude-code) 20 of 143 needed facts
(values an agent later passed to a tool that came from an earlier result) sat behind a stub whose
only content was the shape and 6 head lines: commit shas (github.list_commits, git_log), notion page
ids, `order_no` of SQL rows, Playwright row names and refs, ERROR lines of a log file, the first
column of a CSV. Which fields: measured over the three corpora (mcp_servers, shared mcp_dev, shared
dev), the JSON keys whose values agents reused were name, order_no, date, login, email, sha, id,
sku and the owner/repo inside *_url fields; so the index keeps identifier-like fields (exact names
below, and `*_id`, `*_no`, `*_ref`, `*_key`, `*_sha`), one level of nesting for login/name, and the
common prefix of URL fields (which carries owner/repo) instead of every URL.

What it is: one line per item (JSON arrays of objects, at the top or under a key; list-of-rows
tables: their first column), or per record for text (git log: sha, author, subject; Playwright
snapshots: ref and row/link name; source code: its definitions, each at its line number; diffs: their
files; CSV/TSV/markdown tables: first column; logs: ERROR lines; file listings: paths; other text:
its headings, each at its line number, and its distinct URLs),
in input order. Each record has levels, richest first (git: sha subject (author), the subject
shortened, the sha alone; JSON: the chosen fields, then fewer; ERROR lines: the line, without its
timestamp, its identifiers alone), and the index uses the richest level at which EVERY record fits
`budget`; when none does, the most compact level for the first records that fit, then one line that
says how many were left out and the call that pages them. A JSON field that counts up by one in item
order (a row number) is stated once instead of on every line. Why (replay --client claude-code on
bench/data/corpus/mcp_servers.jsonl.gz): the needed facts behind a stub were shas from the middle of
git logs of 220 and 89 commits and ids of a log's 70th ERROR line, while the index spent its budget on
the first 63, 46 and 57 records in full; listing every record compactly took facts behind a stub from
5 of 143 to 0, tokens cut 89.38% -> 89.46%. Pure and deterministic: same body and budget, same bytes.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat
from typing import Any

from ..jsonpath_keys import is_plain_key
from .describe import looks_like_test_log, share_above, text_kind
from .textscan import (
    DEFINITIONS_MAX_CHARS,
    TextScan,
    commit_matches,
    first_chars,
    lstripped_head,
    not_blank,
)

_ID_NAMES = (
    "id",
    "sha",
    "number",
    "key",
    "name",
    "title",
    "login",
    "path",
    "order_no",
    "slug",
    "uuid",
    "sku",
    "email",
    "date",
    "ref",
)
_ID_SUFFIXES = ("_id", "_no", "_ref", "_key", "_sha", "_number", "Id")
_NESTED_NAMES = ("login", "name", "title")
_NOT_IDS = ("node_id",)  # GitHub GraphQL ids: 26 chars per item, never reused in the corpora
_MAX_FIELDS = 3
_VALUE_CHARS = 60
_SAMPLE = 50
_LITERAL_MAX_CHARS = 100_000  # ast.literal_eval costs ~0.5 ms per KB
_TEXT_ENTRY_CHARS = 140


def python_literal(text: str) -> Any | None:
    """A Python-repr list/dict (sqlite MCP server rows: `[{'id': 4, ...}]`), or None. Bounded in size."""
    if not lstripped_head(text, 3).startswith(("[{'", "{'", "[['", "[(")):
        return None  # before text.lstrip(), which copies a body that starts with blanks
    s = text.lstrip()
    if len(s) > _LITERAL_MAX_CHARS:
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def json_index(doc: Any, budget: int, trm_id: str, *, json_paths: bool = True) -> str:
    """Index of the largest array of objects (or rows) in `doc`, at the top or under one key; '' if none.

    The line after the shown items pages the rest: with `json_paths` (the stored body is JSON) a
    JSONPath giving just the first indexed field of every remaining item, and one giving whole items;
    otherwise (a Python-repr body) a search or a char range.
    """
    found = _records(doc)
    if found is None or budget <= 0:
        return ""
    path, items = found
    extra_counters: list[str] = []
    rows: Iterator[tuple[str, ...]]
    if all(isinstance(it, (list, tuple)) for it in items[:_SAMPLE]):
        fields = ["[0]"]
        rows = ((_scalar(it[0]) if it else "",) for it in items)
        whats: tuple[str, ...] = ("first column",)
    else:
        fields = _choose_fields(items)
        if not fields:
            return ""
        counters = [f for f in fields if _counts_up(items, f)]
        if counters and len(counters) < len(fields):
            # A row number (id 1, 2, 3 ... in item order) is stated once instead of on every line.
            fields = [f for f in fields if f not in counters]
            extra_counters = [
                f"  {f} of item k is {_get(items[0], f)} + k (it counts up in item order)" for f in counters
            ]
        # Richest first: every chosen field, then fewer, then the first one alone (the identifier).
        levels = [fields[:n] for n in range(len(fields), 0, -1)]
        # Lazily: _render stops reading once even the most compact level is past the budget (1 MB of JSON
        # items costs what the first few hundred do).
        rows = (_levels(it, fields, levels) for it in items)
        whats = tuple(", ".join(level) for level in levels)
    prefixes = _url_prefixes(items) if isinstance(items[0], dict) else []
    head = f"index of {len(items):,} items at {path}, one line each: "
    extra = [f"  {name} of every item starts {prefix}…" for name, prefix in prefixes]
    extra += extra_counters
    first = fields[0] if fields[0].startswith("[") else "." + fields[0]

    def page(k: int) -> str:
        if not json_paths:
            return f'recall_tool_result(mem_id="{trm_id}", query="<value>") or (mem_id="{trm_id}", offset=0, max_chars=8000)'
        return (
            f'recall_tool_result(mem_id="{trm_id}", json_path="{path}[{k}:]{first}") for their {whats[0].split(", ")[0]}, '
            f'json_path="{path}[{k}:{k + 20}]" for whole items'
        )

    return _render(
        head, whats, extra, rows, budget, lambda k: f"{len(items) - k:,} more items not shown: {page(k)}", len(items)
    )


def _levels(item: Any, fields: list[str], levels: list[list[str]]) -> tuple[str, ...]:
    values = [_scalar(_get(item, f)) if isinstance(item, dict) else "" for f in fields]
    return tuple(" | ".join(values[: len(level)]) for level in levels)


def text_index(text: str, budget: int, trm_id: str, scan: TextScan | None = None) -> str:
    """Index of a line-oriented text result: git log, Playwright snapshot, CSV/TSV, log, file listing, a document's
    headings and URLs; '' if none.

    Entries are produced lazily and counted with one regex pass, so a 4 MB body costs about what its
    first few hundred lines do (the 1 MB path must stay at the speed of no proxy). `scan`: the text's
    TextScan when describe_text reads the same text (its head lines, line and commit counts once).
    """
    if budget <= 0 or not text:
        return ""
    scan = scan if scan is not None else TextScan(text)
    finders = (
        _diff_files,
        _git_log,
        _aria_snapshot,
        _code_outline,
        _table_first_column,
        _test_outcomes,
        _error_lines,
        _listing,
    )
    for finder in finders:
        found = finder(scan)
        if found is not None:
            return _text_render(*found, budget=budget, trm_id=trm_id)
    return _document_index(scan, budget, trm_id)


def _text_render(
    head: str,
    whats: tuple[str, ...],
    entries: Iterable[tuple[int, tuple[str, ...]]],
    total: int,
    *,
    budget: int,
    trm_id: str,
) -> str:
    starts: list[int] = []

    def lines() -> Iterator[tuple[str, ...]]:
        for n, entry in entries:
            starts.append(n)
            yield entry

    def more(k: int) -> str:
        first = starts[k]
        return (
            f"{total - k:,} more not shown, from line {first:,}: "
            f'recall_tool_result(mem_id="{trm_id}", lines="{first}-{first + 400}")'
        )

    return _render(head, whats, [], lines(), budget, more, total)


_ALL_SHOWN = "; all shown"
_MORE_RESERVE = 180
"""Room kept for the "N more ... recall_tool_result(...)" line when not every entry fits."""


def _render(
    head: str,
    whats: tuple[str, ...],
    extra: list[str],
    entries: Iterable[tuple[str, ...]],
    budget: int,
    more: Callable[[int], str],
    total: int,
) -> str:
    """One line per record at the richest level at which EVERY record fits; else the most compact level, in order.

    Each entry is its record rendered at each level, richest first (git: sha subject (author), then a
    shorter subject, then the sha alone; JSON: the chosen fields, then fewer). An agent passes one
    record's identifier to its next call, and which record it will pick is not known here, so covering
    more records beats saying more about the first ones: the measure is needed facts visible
    (replay --client claude-code on bench/data/corpus/mcp_servers.jsonl.gz: facts behind a stub 5 -> 0
    when git logs of 89 and 220 commits and a log's 132 ERROR lines are listed by identifier instead of
    the first 46, 63 and 57 records in full). Entries are consumed lazily and only until even the most
    compact level is past the budget, so a 4 MB body costs what its first few hundred records do.
    When every record fits with room to spare, the first records take the richest level in that room
    (every issue number, and the first ones with their titles).
    """
    heads = tuple(head + what for what in whats)
    levels = len(heads)
    base = [len(h) + 1 + sum(len(x) + 1 for x in extra) for h in heads]
    sizes = list(base)
    kept: list[tuple[str, ...]] = []
    complete = True
    for entry in entries:
        kept.append(entry)
        for lv in range(levels):
            sizes[lv] += len(entry[lv]) + 3  # "  " indent and newline
        if sizes[-1] > budget:
            complete = False  # not even the most compact level holds them all: stop reading
            break
    if complete:
        for lv in range(levels):
            if sizes[lv] + len(_ALL_SHOWN) <= budget:
                return _all_shown(heads[lv], whats[0], extra, kept, lv, budget - sizes[lv])
    lv = levels - 1
    out = [heads[lv], *extra]
    size = base[lv]
    shown = 0
    for entry in kept:
        line = "  " + entry[lv]
        reserve = 0 if shown == total - 1 else _MORE_RESERVE
        if size + len(line) + 1 + reserve > budget:
            break
        out.append(line)
        size += len(line) + 1
        shown += 1
    if shown == 0:
        return ""
    if shown < total:
        out[0] += f"; first {shown:,} shown"
        out.append("  " + more(shown))
    else:
        out[0] += "; all shown"
    return "\n".join(out)


def _all_shown(head: str, richest: str, extra: list[str], kept: list[tuple[str, ...]], lv: int, spare: int) -> str:
    """Every record at level `lv`, the first ones at the richest level while `spare` chars allow."""
    richer = 0
    spare -= len(f"{_ALL_SHOWN}, the first {len(kept):,} as {richest}")  # the head says which ones are richer
    while lv > 0 and richer < len(kept) and len(kept[richer][0]) - len(kept[richer][lv]) <= spare:
        spare -= len(kept[richer][0]) - len(kept[richer][lv])
        richer += 1
    head += f"{_ALL_SHOWN}, the first {richer:,} as {richest}" if richer else _ALL_SHOWN
    lines = ("  " + (e[0] if i < richer else e[lv]) for i, e in enumerate(kept))
    return "\n".join([head, *extra, *lines])


# ------------------------------------------------------------------ JSON


_NESTED_DEPTH = 6
_NESTED_KEYS = 2_000


def _records(doc: Any) -> tuple[str, list[Any]] | None:
    """The array of records to index and its JSONPath: the document itself, else the longest one under a
    key, else the longest one deeper down (GraphQL's `$.data.repository.issues.nodes`, an API's
    `$.result.data.items`), through objects only, at most 6 keys deep and 2,000 keys read below the top.
    Why deeper: a 65K GraphQL search of 150 issues got `JSON object with 1 key {data: object{repository}}`
    and no index, so every issue number and id sat behind the stub, and the model had to guess the path
    to page them."""
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


def _is_records(items: list[Any]) -> bool:
    sample = items[:_SAMPLE]
    return all(isinstance(it, dict) for it in sample) or all(isinstance(it, (list, tuple)) and it for it in sample)


def _is_id_name(name: str) -> bool:
    if name in _NOT_IDS:
        return False
    return name in _ID_NAMES or name.endswith(_ID_SUFFIXES)


def _choose_fields(items: list[Any]) -> list[str]:
    sample = [it for it in items[:_SAMPLE] if isinstance(it, dict)]
    if not sample:
        return []
    wrapper = _wrapper_key(sample)
    if wrapper is not None:
        return [f"{wrapper}.{field}" for field in _choose_fields([it[wrapper] for it in sample])]
    need = (len(sample) + 1) // 2
    counts: dict[str, int] = {}
    for it in sample:
        for k, v in it.items():
            if isinstance(k, str) and _is_scalar(v):
                counts[k] = counts.get(k, 0) + 1
            elif isinstance(k, str) and isinstance(v, dict):
                for k2, v2 in v.items():
                    if k2 in _NESTED_NAMES and _is_scalar(v2):
                        counts[f"{k}.{k2}"] = counts.get(f"{k}.{k2}", 0) + 1
    # A field with one value across the sample (committer.login "web-flow") identifies nothing.
    common = [
        k for k, c in counts.items() if c >= need and (len(sample) < 3 or len({str(_get(it, k)) for it in sample}) > 1)
    ]
    top = [k for k in common if "." not in k]
    rank = {name: i for i, name in enumerate(_ID_NAMES)}
    exact = sorted((k for k in top if k in rank), key=lambda k: rank[k])
    suffixed = [k for k in top if k not in rank and _is_id_name(k)]
    nested = [k for k in common if "." in k]
    chosen = (exact + suffixed + nested)[:_MAX_FIELDS]
    if not chosen:
        urls = [k for k in top if k in ("html_url", "url")]
        chosen = urls[:1]
    return chosen


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


def _is_scalar(v: Any) -> bool:
    return v is not None and isinstance(v, (str, int, float)) and not isinstance(v, bool)


def _wrapper_key(sample: list[dict[str, Any]]) -> str | None:
    """The key every item keeps its record under, as GraphQL's edges do (`{"cursor": "Y3Vy…", "node":
    {"id", "number", "title"...}}`): each item's one object-valued key, the same in all, beside at most
    2 other keys. Why: of such an edge only `node.title` was indexed (nested fields counted only as
    login, name and title), so the ids and numbers of 120 pull requests sat behind the stub."""
    wrapper: str | None = None
    for it in sample:
        inner = [k for k, v in it.items() if isinstance(v, dict)]
        if len(inner) != 1 or len(it) > 3 or (wrapper is not None and inner[0] != wrapper):
            return None
        wrapper = inner[0]
    return wrapper if is_plain_key(wrapper) else None


def _get(item: dict[str, Any], field: str) -> Any:
    if "." not in field:
        return item.get(field)
    value: Any = item
    for key in field.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _scalar(v: Any) -> str:
    if v is None:
        return "-"
    text = str(v).replace("\n", " ").replace("|", "/")
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


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


# ------------------------------------------------------------------ text

_GIT = re.compile(r"^(?:commit|Commit:)\s+([0-9a-f]{7,40})\b", re.M)
_AUTHOR = re.compile(r"^Author:\s*(.*?)\s*(<[^>]*>)?\s*$")
_MESSAGE = re.compile(r"^(?:Message:\s*|\s{4})(\S.*)$")
_ARIA_ROLES = r"(row|link|listitem|option|treeitem)"
_ARIA = re.compile(r"^[ \t]*- " + _ARIA_ROLES + r' "([^"\n]+)"(?: \[[^\]\n]*\])*? \[ref=(e\d+)\]', re.M)
_ERROR_WORDS = ("ERROR", "FATAL", "CRITICAL", "Exception", "Traceback")
_LOG_LINE = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|^(DEBUG|INFO|WARN|WARNING|ERROR)\b")
"""Anchored in each alternative: `match` answers what `search` would, without search's try at every char
of the line (sre skips them only for a pattern that opens with `^`; a 1 MB single line: ~0.4 ms)."""
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")
_PATH = re.compile(
    r"^(\[(FILE|DIR)\]\s+)?\.{0,2}/?[\w.@+-]+(/[\w.@+-]+)+/?$|^(\[(FILE|DIR)\]\s+)?[\w.@+-]+\.[A-Za-z0-9]{1,5}$"
)
_URL_TRAIL = ".,;:!?*_\\"  # and the backslash of a JSON-escaped quote after a URL in JSON-lines text

_LOG_STAMP = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[ T][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?\]?\s*")
_TOKEN = re.compile(r"[A-Za-z0-9][\w.:/@#-]*[A-Za-z0-9]")
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}")
_GIT_SUBJECT_SHORT = (32, 16)
_ARIA_NAME_SHORT = 24
_LOG_LINE_SHORT = 80
# A test runner's line for a failed or erroring test: pytest's short summary and -v lines, unittest,
# go test (test and package), jest/vitest (file and test marks), cargo, TAP.
_TEST_FAILED = re.compile(
    r"(?:FAILED|ERROR)\s+\S+(?:::|\.py\b)"
    r"|(?=\S+::\S)\S++.*?\s(?:FAILED|ERROR)\b"
    r"|(?:FAIL|ERROR): \w"
    r"|\s*--- FAIL: "
    r"|FAIL\s+\S"
    r"|\s*[✕×✗] "
    r"|test \S+ \.\.\. FAILED"
    r"|not ok \d+"
)
_TEST_FAILED_WORDS = ("FAIL", "ERROR", "✕", "×", "✗", "not ok")
_TEST_LINE_CHARS = 1024
"""A runner's failure line is short: only a line's start is matched, so a hostile 1 MB line costs what 1 KB does.
The first word is taken possessively (a word of many `::` backtracked cubically: 6 KB took 250 s)."""
# Its closing tally: pytest's `== 1 failed, 599 passed in 41.87s ==`, jest/vitest, cargo, unittest, mocha.
_TEST_TALLY = re.compile(
    r"=+ [^\n]*?\b\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b[^\n]*? in [\d.]+s"
    r"|\s*Tests?:?\s+\d"
    r"|\s*Test Files\s+\d"
    r"|test result: "
    r"|Ran \d+ tests? in "
    r"|(?:FAILED|OK) \((?:failures|errors|skipped)="
    r"|\s*\d+ (?:passing|failing|pending)\b"
)
_TEST_TALLY_LINES = 40
"""A runner prints its tally last: only the last lines are read for it, whatever the log's length."""
_TEST_TALLY_CHARS = 256
"""And only their start: the pytest pattern's two open spans are quadratic in a line's length."""

Found = tuple[str, tuple[str, ...], Iterator[tuple[int, tuple[str, ...]]], int]
"""(head, what each level shows (richest first), (line number, the record at each level) lazily, how many records)."""


def _iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) lazily: a caller that stops early never splits the rest."""
    start, n = 0, 1
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield n, text[start:]
            return
        yield n, text[start:end]
        start, n = end + 1, n + 1


def _matches(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each match with its 1-based line number, counting newlines incrementally."""
    return _numbered(pattern.finditer(text), text)


def _numbered(matches: Iterable[re.Match[str]], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Matches of `text`, in order, each with its 1-based line number."""
    line, pos = 1, 0
    for m in matches:
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield line, m


def _clip(s: str, n: int = _TEXT_ENTRY_CHARS) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _git_log(scan: TextScan) -> Found | None:
    text = scan.text
    if not any(_GIT.match(ln) for ln in scan.head(20)):
        return None
    total = scan.commits()

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        for line, m in commit_matches(text):
            sha, author, subject = m.group(1), "", ""
            for follow in text[m.end() : m.end() + 2000].split("\n", 12)[1:12]:
                if _GIT.match(follow):
                    break
                a = _AUTHOR.match(follow)
                if a and not author:
                    author = a.group(1)
                msg = _MESSAGE.match(follow)
                if msg and not subject and not follow.startswith(("Author:", "Date:")):
                    subject = msg.group(1).strip()
                if author and subject:
                    break
            full = f"{sha} {_clip(subject, 60)} ({_clip(author, 20)})" if author else f"{sha} {_clip(subject, 60)}"
            yield line, (full, *(f"{sha} {_clip(subject, n)}" for n in _GIT_SUBJECT_SHORT), sha)

    shortened = tuple(f"sha subject (first {n} chars)" for n in _GIT_SUBJECT_SHORT)
    whats = ("sha subject (author)", *shortened, "sha")
    commits = "commit" if total == 1 else "commits"
    return f"index of {total:,} {commits}, one line each: ", whats, entries(), total


def _aria_snapshot(scan: TextScan) -> Found | None:
    text = scan.text
    if text.find("[", 0, 20_000) < 0 or text.find("[ref=e", 0, 20_000) < 0:  # `in text[:20_000]`, no copy
        return None
    counts: dict[str, int] = {}
    for m in _ARIA.finditer(text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    if not counts:
        return None
    role = max(counts, key=lambda r: (counts[r], r))
    entries = (
        (line, (f"{m.group(3)} {_clip(m.group(2), 80)}", f"{m.group(3)} {_clip(m.group(2), _ARIA_NAME_SHORT)}"))
        for line, m in _matches(_ARIA, text)
        if m.group(1) == role
    )
    head = f"index of {counts[role]:,} {role} elements of the page snapshot, one line each: "
    return head, ("ref name", "ref name (shortened)"), entries, counts[role]


_DIFF_GIT = "\ndiff --git "
_DIFF_PLUS = "\n+++ "


def _diff_files(scan: TextScan) -> Found | None:
    """A diff's files, each at its header's line, with the lines it adds and removes: which files
    changed and where to read each one (`lines=`), and the paths an agent opens or edits next. The shape
    line alone said `3,945 lines; looks like a diff / patch` over the first file's header (git_diff of 40
    commits, 200K chars). `diff --git a/X b/X` headers (the b/ side), else unified `+++ X` ones. Found by
    str.find from line break to line break and counted by two str.count per file: ~4.5 ms per MB of diff
    read (the index stops reading files once even the paths alone are past its budget).
    One commit with its diff (`git show`) is indexed the same way: its files, where the commit index
    would list the one commit the head already shows (a 65K `git_show` said `index of 1 commit`).
    Inert (None) when describe calls the text neither a diff nor a git log of one commit, or no file
    header is found.
    """
    kind = text_kind(scan)
    if kind != "a diff / patch" and not (kind.startswith("git log") and scan.commits() == 1):
        return None
    text = "\n" + scan.text  # every header then follows a line break, the first one too
    marker = _DIFF_GIT if _DIFF_GIT in text else _DIFF_PLUS
    starts: list[int] = []
    at = text.find(marker)
    while at >= 0:
        starts.append(at + 1)
        at = text.find(marker, at + 1)
    if not starts:
        return None

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        line, pos = 0, 0
        for k, start in enumerate(starts):
            line += text.count("\n", pos, start)
            pos = start
            end = text.find("\n", start)
            header = text[start : end if end >= 0 else len(text)]
            path = _diff_path(header, marker is _DIFF_GIT)
            until = starts[k + 1] if k + 1 < len(starts) else len(text)
            # Every "+"/"-" line of the file counts but its `--- a/X` and `+++ b/X` header lines: those come
            # before its first hunk (git), or are the line just before the next file's `+++` (unified).
            hunks = text.find("\n@@", start, until)
            before = hunks if hunks >= 0 else until
            plus_headers = text.count("\n+++ ", start, before)
            minus_headers = text.count("\n--- ", start, before)
            if marker is _DIFF_PLUS and until < len(text):
                minus_headers += text.startswith("--- ", text.rfind("\n", start, until - 1) + 1)
            added = text.count("\n+", start, until) - plus_headers
            removed = text.count("\n-", start, until) - minus_headers
            yield line, (f"{line}: {_clip(path)} (+{added} -{removed})", f"{line} {_clip(path, 80)}")

    files = len(starts)
    head = f"index of the {files:,} files of the diff, one line each, at its header's line: "
    return head, ("path (+added -removed)", "path"), entries(), files


def _diff_path(header: str, git: bool) -> str:
    """The changed file's path in `diff --git a/X b/X` (the b/ side) or `+++ b/X	date`."""
    if git:
        rest = header[len("diff --git ") :]
        cut = rest.rfind(" b/")
        return rest[cut + 3 :] if cut >= 0 else rest
    path = header[len("+++ ") :].split("\t", 1)[0].strip()
    return path[2:] if path.startswith("b/") else path


_MIN_DEFINITIONS = 3
_INDENT_SHOWN = 12


def _code_outline(scan: TextScan) -> Found | None:
    """Source code's definitions (def, class, function, fn, func, struct, interface...), each at its line
    number: the file's table of contents, so an agent reads the one it needs (`lines="446-520"`) instead
    of paging 8,000 chars at a time from the top, and the names it passes on (a function to call, grep or
    edit) are in view. The shape line alone said `785 lines; looks like source code` over 6 head lines
    (a 38 KB module read through server-filesystem). Nesting shows as the code's own indentation.
    Inert (None) when the text is not source code by describe's own judgement, defines fewer than 3 names,
    or is over DEFINITIONS_MAX_CHARS.
    """
    text = scan.text
    if len(text) > DEFINITIONS_MAX_CHARS or text_kind(scan) != "source code":
        return None
    found = scan.definitions()
    if len(found) < _MIN_DEFINITIONS:
        return None

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        for line, m in _numbered(found, text):
            indent = m.group("indent").replace("\t", "  ")[:_INDENT_SHOWN]
            end = text.find("\n", m.start())
            whole = text[m.start() : end if end >= 0 else len(text)].strip()
            kind, name = (
                (m.group("kind"), m.group("name")) if m.group("kind") else (m.group("binding"), m.group("bound"))
            )
            yield line, (f"{line}: {indent}{_clip(whole, 100)}", f"{line}: {indent}{kind} {name}", f"{line} {name}")

    lines = scan.line_count()
    head = f"index of {len(found):,} definitions in {lines:,} lines of source, one line each, at its line number: "
    return head, ("the definition line", "its kind and name", "its name"), entries(), len(found)


_TABLE_RULE = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
"""A markdown table's delimiter row (`|---|:---:|`): no row of data."""


def _table_first_column(scan: TextScan) -> Found | None:
    """The first column of a TSV, CSV or markdown (`| a | b |`) table: its rows' identifiers, as a SQL or
    spreadsheet server's first column usually is. Markdown tables were described (`looks like a table`)
    but not indexed, so an order number from the middle of 700 rows sat behind the stub; their delimiter
    row is no row. The separators are tried in describe's order, so the index and the shape agree."""
    text = scan.text
    sample = not_blank(scan.head(50))
    if len(sample) < 3:
        return None
    for sep in ("\t", "|", ","):
        if sep not in sample[0]:
            continue  # a header without the separator is no table: the other lines need no count
        counts = [ln.count(sep) for ln in sample]
        if sum(1 for c in counts if c == counts[0]) / len(counts) > 0.9:
            piped = sep == "|"
            header = _first_cell(sample[0], sep, piped)
            rules = sum(1 for ln in sample if _TABLE_RULE.match(ln)) if piped else 0
            rows = scan.line_count() - text.count("\n\n") - 1 - rules

            def entries(sep: str = sep, piped: bool = piped) -> Iterator[tuple[int, tuple[str, ...]]]:
                header_seen = False
                for n, ln in _iter_lines(text):
                    if not ln.strip() or (piped and _TABLE_RULE.match(ln)):
                        continue
                    if header_seen:
                        yield n, (_clip(_first_cell(ln, sep, piped), _VALUE_CHARS),)
                    header_seen = True

            return f"index of {rows:,} rows, one line each: ", (f"first column ({_clip(header, 40)})",), entries(), rows
    return None


def _first_cell(line: str, sep: str, piped: bool) -> str:
    if piped:
        line = line.lstrip()
        line = line[1:] if line.startswith("|") else line
    return line.split(sep, 1)[0].strip()


def _lines_holding(text: str, words: tuple[str, ...]) -> list[int]:
    """The start of every line holding one of `words`, in order, by str.find (a regex alternation costs
    ~25 ms per MB). After a hit the search goes on from the next line: a line is found once per word,
    so many hits on one long line cost one pass, where a backward scan per hit was quadratic (a 1.4 MB
    line of `FAIL x` took 2.9 s).

    A word with a letter the text lacks is not looked for: a one-char `in` is a memchr pass (0.007-0.01
    ms/MB, the whole text when the letter is missing), a word's find 0.3 ms/MB. On bench_offload's 1 MB
    log (lower-case words, ISO stamps) that skips all five finds, 1.5 ms of its shaping; a text that has
    every letter pays ~0.01 ms more. Each letter is looked for once, in the word's order (capitals
    first): the E of ERROR answers for Exception, and the 1 MB log pays 4 memchr passes, not 5-6.
    """
    present: dict[str, bool] = {}
    starts: set[int] = set()
    for word in words:
        if not all(_has(text, letter, present) for letter in word):
            continue
        pos = text.find(word)
        while pos >= 0:
            starts.add(text.rfind("\n", 0, pos) + 1)
            end = text.find("\n", pos)
            if end < 0:
                break
            pos = text.find(word, end + 1)
    return sorted(starts)


def _has(text: str, letter: str, present: dict[str, bool]) -> bool:
    found = present.get(letter)
    if found is None:
        found = present[letter] = letter in text
    return found


def _lines_at(text: str, starts: list[int], limit: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of each line that begins at one of `starts` (sorted), counting line breaks
    only between one start and the next; with `limit`, only a line's first `limit` chars are read."""
    line, pos = 1, 0
    for start in starts:
        line += text.count("\n", pos, start)
        pos = start
        stop = len(text) if limit is None else min(len(text), start + limit)
        end = text.find("\n", start, stop)
        yield line, text[start : stop if end < 0 else end]


def _error_lines(scan: TextScan) -> Found | None:
    text = scan.text
    sample = not_blank(scan.head(200))
    if not sample or not _may_be_log(first_chars(sample)) or not share_above(sample, _LOG_LINE.match, 0.5):
        return None
    starts = _lines_holding(text, _ERROR_WORDS)
    if not starts:
        return None
    lines = scan.line_count()

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        for line, raw in _lines_at(text, starts):
            full = raw.strip()
            yield line, (_clip(full), _clip(_LOG_STAMP.sub("", full), _LOG_LINE_SHORT), _identifiers(full))

    head = f"index of the {len(starts):,} ERROR lines of {lines:,} log lines, one line each: "
    return head, ("the line", "the line without its timestamp", "its identifiers"), entries(), len(starts)


def _test_outcomes(scan: TextScan) -> Found | None:
    """A test log's failed and erroring tests and its closing tally, in order: what an agent runs tests to
    learn, and the test ids it passes to its next call (a re-run, a file read). The shape line alone said
    `1,223 lines; looks like a test log` and the head showed the session banner, so which test failed
    sat behind the stub (the demo's run_tests). Candidate lines are found by str.find of the failure
    words (a pytest -v log has PASSED on every line and FAILED on few), the tally in the last lines only.
    Inert (None) when the text is no test log by describe's own judgement, or names no failure or tally.
    """
    if not looks_like_test_log(scan):
        return None
    text = scan.text
    starts = _lines_holding(text, _TEST_FAILED_WORDS)
    found: dict[int, str] = {}
    for line, full in _lines_at(text, starts, _TEST_LINE_CHARS):
        if _TEST_FAILED.match(full):
            found[line] = full.strip()
    tail_end = len(text.rstrip("\n"))
    tail = tail_end
    for _ in range(_TEST_TALLY_LINES):
        tail = text.rfind("\n", 0, tail)
        if tail < 0:
            break
    tail += 1
    first_tail_line = scan.newlines - text.count("\n", tail) + 1
    for n, ln in enumerate(text[tail:tail_end].split("\n"), first_tail_line):
        if n not in found and _TEST_TALLY.match(ln[:_TEST_TALLY_CHARS]):
            found[n] = ln.strip()
    if not found:
        return None
    entries = ((n, (_clip(found[n]), _clip(found[n], _LOG_LINE_SHORT))) for n in sorted(found))
    lines = scan.line_count()
    head = f"index of the {len(found):,} failure and result lines of {lines:,} test log lines, one line each: "
    return head, ("the line", "its first 80 chars"), entries, len(found)


def _may_be_log(firsts: frozenset[str]) -> bool:
    """Some sampled line starts as a _LOG_LINE can (`[`, a digit, or D/I/W/E of a level); none: no line is one."""
    return any(c == "[" or c.isdecimal() or c in "DIWE" for c in firsts)


def _identifiers(line: str) -> str:
    """The id-like tokens of a line (request ids, SKUs, hosts, paths: a digit and 4+ chars; not dates, times or
    short counts), in order, once each: the values an agent searches or passes on from a log line."""
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(line):
        if len(token) < 4 or not any(c.isdigit() for c in token) or _DATE_OR_TIME.match(token):
            continue
        if token.isdigit() and len(token) < 6:
            continue
        seen.setdefault(token)
    return " ".join(seen) if seen else _clip(_LOG_STAMP.sub("", line), 40)


def _listing(scan: TextScan) -> Found | None:
    text = scan.text
    head = "\n".join(scan.head(200))
    if "/" not in head and "." not in head:
        return None  # every _PATH holds a "/" or a ".": two C searches instead of up to 200 matches
    sample = [ln.strip() for ln in not_blank(scan.head(200))]
    if not sample or not share_above(sample, _PATH.match, 0.7):
        return None
    total = scan.line_count() - text.count("\n\n")
    entries = ((n, (_clip(ln.strip()),)) for n, ln in _iter_lines(text) if ln.strip())
    return f"index of {total:,} paths, one line ", ("each",), entries, total


def _links(scan: TextScan) -> Callable[[], Found] | None:
    """Distinct URLs of a page or document, in order: the links an agent fetches next (WebFetch, fetch, document readers).

    A text without a "/" has no URL: one memchr pass (~0.01 ms/MB) instead of the URL pattern's scan (~0.23 ms/MB,
    a tenth of a 1 MB offload's shaping when no other finder matched; "://" in text costs more than the regex).
    The distinct URLs are found once; each call of the returned function makes the index's entries afresh
    (a generator, read lazily), as a document's index may render them twice, on two budgets.
    """
    text = scan.text
    if "/" not in text:
        return None
    distinct = {u.rstrip(_URL_TRAIL) for u in _URL.findall(text)}
    distinct = {u for u in distinct if len(u) <= _TEXT_ENTRY_CHARS}
    if len(distinct) < 3:
        return None

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        seen: set[str] = set()
        for line, m in _matches(_URL, text):
            url = m.group(0).rstrip(_URL_TRAIL)
            if url in distinct and url not in seen:
                seen.add(url)
                yield line, (url,)

    def found() -> Found:
        return (
            f"index of the {len(distinct):,} distinct URLs in the text, one line ",
            ("each",),
            entries(),
            len(distinct),
        )

    return found


# ------------------------------------------------------------------ documents

_ATX = re.compile(r"(#{1,6})(?:[ \t]+([^\n]*))?(?=\n|$)")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_UNDERLINE = re.compile(r"(?:={3,}|-{3,})[ \t]*(?=\n|$)")
_MIN_HEADINGS = 3
_MAX_MARKS = 20_000
"""More candidate lines than this (1 MB of Node's API docs has ~2,600) and a text gets no outline: a
hostile 4 MB of `# a` lines took 2.4 s to list 800,000 "headings"."""
_HEADINGS_APART_SHARE = 0.6
"""A markdown document's headings stand apart (a blank line below, no `#` line above): 0.6 or more of them."""
_MARKDOWN_BLOCKS = ("- ", "* ", "+ ", "> ", "|", "<", "```", "~~~", "![", "1. ")
"""What may follow a heading line directly, besides a blank line."""
_NOT_SETEXT_TITLE = ("-", "*", "+", ">", "|", "#", "    ", "\t")
_ORDERED_ITEM = re.compile(r" {0,3}\d{1,9}[.)](?:[ \t]|$)")
_DOCUMENT_KINDS = ("markdown text", "prose / plain text")
_HEADING_SHORT = 48
_LINKS_SHARE = 0.4
"""Of the index budget, what a document's URLs may take when it has headings too (they take less when
they need less, and the outline's leftover when it needs less)."""
_OUTLINE_HEAD_CHARS = 160
"""Room for the outline's head line when its depth is chosen."""
_OUTLINE_MIN_SHOWN = 10

Heading = tuple[int, int, str]
"""(line number, level 1-6, title)."""


def _headings(scan: TextScan) -> list[Heading] | None:
    """A markdown document's headings, each at its line number: `#`-style and underlined (`===`, `---`),
    outside fenced code blocks (a shell example's `# install` is no heading) and front matter.

    Why: a fetched page or a read document of 30K chars and up is stubbed, and its stub listed only its
    distinct URLs: Claude Code's own 78K hooks reference (WebFetch, shared dev corpus) showed 3 URLs and 6
    head lines, Node's 121K http.md 45 URLs, mostly pull requests. Its headings are its table of contents:
    the section an agent wants is one `lines=` call away, and the API names in them are in view.
    How: the lines that can matter are found by str.find of their first chars (a line break then `#`,
    `===` or `---`; a fence's backticks or tildes anywhere), ~0.6-0.9 ms per MB and mark; one regex over
    every line start cost ~5 ms per MB. 1 MB of Node's docs (not ASCII) takes ~10 ms, its 121K http.md
    ~2 ms. Headings indented by 1-3 blanks are not looked for.
    Which `#` lines: on ~2,000 sampled files of 8K-400K chars (this project's virtualenv, node_modules and
    /usr/share/doc), blocks of `# comments` and `#  define`s read as headings in 16 source, config and data
    files. A document's headings stand apart (_stands_apart), a comment sits over the code it explains:
    with 0.6 or more of the `#` lines apart, 172 of 176 sampled .md files get an outline, and of the code
    only 1 of 300 .py files (numpy's, whose docstring is underlined RST).
    Inert (None) when describe judges the text other than markdown or prose, when it has none of those
    marks (a 1 MB log without `#`, `=` and `-`: three memchr passes) or over 20,000 of them, fewer than 3
    headings, fewer than 0.6 of them apart, or only `#` lines of one level in a text describe calls prose
    (a script's comments).
    """
    text = scan.text
    if text_kind(scan) not in _DOCUMENT_KINDS:
        return None
    start = _front_matter_end(text)
    heading_marks = _positions(text, ("\n#", "\n===", "\n---"), start, _MAX_MARKS)
    if heading_marks is None:
        return None
    hashes, equals, dashes = heading_marks
    if not (hashes or equals or dashes or text.startswith("#", start)):
        return None  # no heading mark at all: the fences are not looked for
    fence_marks = _positions(text, ("```", "~~~"), start, _MAX_MARKS - len(hashes) - len(equals) - len(dashes))
    if fence_marks is None:
        return None
    backticks, tildes = fence_marks
    marks = [at + 1 for at in hashes]
    if text.startswith("#", start):
        marks.insert(0, start)
    underlines = [at + 1 for at in equals + dashes]
    events = sorted(
        [*((at, 0) for at in backticks + tildes), *((at, 1) for at in marks), *((at, 2) for at in underlines)]
    )
    found: list[Heading] = []
    fence = ""
    apart = underlined = 0
    line, pos = 1, 0
    for at, what in events:
        line += text.count("\n", pos, at)
        pos = at
        if what == 0:
            begin = text.rfind("\n", 0, at) + 1
            m = _FENCE.match(text, begin)
            if m is None or m.end() != at + 3:
                continue  # backticks inside a line, or a fence's closing run read again
            if not fence:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = ""
        elif fence:
            continue
        elif what == 1:
            m = _ATX.match(text, at)
            if m is None:
                continue
            title = (m.group(2) or "").strip().rstrip("#").rstrip()
            if title:
                found.append((line, len(m.group(1)), title))
                apart += _stands_apart(text, at, m.end())
        elif _UNDERLINE.match(text, at) is not None:
            title = _setext_title(text, at)
            if title is not None and not (found and found[-1][0] >= line - 1):
                found.append((line - 1, 1 if text[at] == "=" else 2, title))
                apart += 1
                underlined += 1
    if len(found) < _MIN_HEADINGS or apart < len(found) * _HEADINGS_APART_SHARE:
        return None
    if text_kind(scan) != "markdown text" and not underlined and all(level == 1 for _, level, _ in found):
        return None
    return found


def _stands_apart(text: str, start: int, end: int) -> bool:
    """Whether the `#` line from `start` to `end` has a blank line (or the text's end, or a list, quote,
    table, image or fence) below it and no `#` line above it, as a heading has and the lines of a block of
    `# comments` or `#  define`s have not (a comment is followed by the code it explains)."""
    above = text.rfind("\n", 0, start - 1) + 1 if start else 0
    if start and text.startswith("#", above):
        return False
    below = text.find("\n", end + 1)
    line = text[end + 1 : below if below >= 0 else None]
    return not line.strip() or line.startswith(_MARKDOWN_BLOCKS)


def _positions(text: str, marks: tuple[str, ...], start: int, room: int) -> list[list[int]] | None:
    """The positions of each of `marks` from `start`, or None past `room` of them in all: tens of thousands
    of `#` lines or fences make no table of contents, and are not read one by one."""
    found: list[list[int]] = []
    for mark in marks:
        found.append(list(islice(_finds(text, mark, start), room + 1)))
        room -= len(found[-1])
        if room < 0:
            return None
    return found


def _finds(text: str, mark: str, start: int) -> Iterator[int]:
    """Every position of `mark` in `text` from `start`, by str.find. A text without the mark's last char
    is told by one memchr pass (~0.01 ms/MB) instead of the find's (~0.6-0.9 ms/MB for 2-4 chars)."""
    if mark[-1] not in text:
        return
    at = text.find(mark, start)
    while at >= 0:
        yield at
        at = text.find(mark, at + len(mark))


def _front_matter_end(text: str) -> int:
    """Where the text starts after YAML front matter (`---` lines around its first lines), else 0."""
    if not text.startswith("---\n"):
        return 0
    end = text.find("\n---", 3)
    if end < 0:
        return 0
    after = text.find("\n", end + 4)
    return len(text) if after < 0 else after


def _setext_title(text: str, underline: int) -> str | None:
    """The line above an `===`/`---` line at `underline` when it can be a setext heading's title."""
    if underline == 0:
        return None
    start = text.rfind("\n", 0, underline - 1) + 1
    title = text[start : underline - 1]
    if not title.strip() or title.startswith(_NOT_SETEXT_TITLE) or _ORDERED_ITEM.match(title):
        return None
    return title.strip()


def _document_index(scan: TextScan, budget: int, trm_id: str) -> str:
    """A document's outline (its headings) and its distinct URLs, sharing the budget; either alone when the
    other is missing. The URLs are what an agent fetches next, the outline where it reads next."""
    headings = _headings(scan)
    links = _links(scan)
    if headings is None:
        return "" if links is None else _text_render(*links(), budget=budget, trm_id=trm_id)
    if links is None:
        return _outline(headings, scan, budget, trm_id)
    urls = _text_render(*links(), budget=int(budget * _LINKS_SHARE), trm_id=trm_id)
    outline = _outline(headings, scan, budget - len(urls) - 1, trm_id)
    if _ALL_SHOWN not in urls.split("\n", 1)[0]:  # not every URL fit its share: they take the outline's leftover
        urls = _text_render(*links(), budget=budget - len(outline) - 1, trm_id=trm_id)
    return "\n".join(part for part in (outline, urls) if part)


def _outline(headings: list[Heading], scan: TextScan, budget: int, trm_id: str) -> str:
    """The headings down to the deepest level at which all of them fit `budget` as line and short title.
    When that leaves fewer than 10 (a title over 400 sections), or not even the top level fits, the first
    headings of the next level down and the call that pages the rest."""
    total = len(headings)
    lines = scan.line_count()
    compact = [f"{line} {'#' * level} {_clip(title, _HEADING_SHORT)}" for line, level, title in headings]
    size_at = [0] * 7
    for (_, level, _), short in zip(headings, compact, strict=True):
        size_at[level] += len(short) + 3
    depth = max(level for _, level, _ in headings)
    while depth > 1 and sum(size_at[: depth + 1]) + _OUTLINE_HEAD_CHARS > budget:
        depth -= 1
    if sum(1 for _, level, _ in headings if level <= depth) < _OUTLINE_MIN_SHOWN and depth < 6 and size_at[depth + 1]:
        depth += 1  # a title alone says nothing: the next level's first headings, then the call that pages on
    shown = [(h, short) for h, short in zip(headings, compact, strict=True) if h[1] <= depth]
    head = (
        f"index of the {len(shown):,} heading{'' if len(shown) == 1 else 's'} of level"
        f"{' 1' if depth == 1 else f's 1-{depth}'} of {total:,} in {lines:,} lines "
        f"(read a section with lines=), one line each, at its line number: "
        if len(shown) < total
        else f"index of the {total:,} headings in {lines:,} lines, one line each, at its line number: "
    )
    entries = ((h[0], (f"{h[0]}: {'#' * h[1]} {_clip(h[2], 100)}", short)) for h, short in shown)
    return _text_render(head, ("heading", "heading (shortened)"), entries, len(shown), budget=budget, trm_id=trm_id)
