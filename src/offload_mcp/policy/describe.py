"""A structural index of a result: what shape it has, so the model can often answer from the stub.

JSON: the top-level type, keys with their value types, array lengths and the
keys of array items. Text: line count and what it looks like (git log, test
log, diff, file listing, CSV/table, table of aligned columns, web page
snapshot, source code, log lines, JSON lines, prose).
Pure and deterministic: the same text always gives the same words. Only the
first 200 lines are sampled (textscan.TextScan.head, without copying the rest),
so beyond them a body costs one line-count pass and, for a git log, one
commit-count pass (docs/design.md, "Describing a text").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import methodcaller
from typing import Any

import orjson

from ..text.data_view import DataView, find_data
from .textscan import DEFINITION, DEFINITIONS_MAX_CHARS, TextScan, first_chars, lstripped_head, not_blank

_SAMPLE_LINES = 200
_ARIA_LINE = re.compile(r'[ \t]*- [a-z]+(?: "[^\n]*")?(?: \[[^\]\n]*\])*? \[ref=[A-Za-z0-9]+\]')
"""A line of Playwright MCP's page snapshot: `- button "Save" [ref=e12]` (index/text_records.py lists them)."""
_SAMPLE_LINE_CHARS = 400
_MAX_KEYS = 8


def describe_json(value: Any, depth: int = 0) -> str:
    """`object{a: str, items: array[3000] of object{id, name}}`-style summary, bounded in size."""
    if isinstance(value, dict):
        keys = list(value)
        if depth >= 1:
            shown = ", ".join(keys[:_MAX_KEYS])
            more = f", +{len(keys) - _MAX_KEYS} more" if len(keys) > _MAX_KEYS else ""
            return f"object{{{shown}{more}}}"
        parts = [f"{k}: {describe_json(value[k], depth + 1)}" for k in keys[:_MAX_KEYS]]
        if len(keys) > _MAX_KEYS:
            parts.append(f"+{len(keys) - _MAX_KEYS} more keys")
        return f"object with {len(keys)} key{'' if len(keys) == 1 else 's'} {{{'; '.join(parts)}}}"
    if isinstance(value, list):
        if not value:
            return "array[0]"
        kinds = sorted({_kind(v) for v in value[:50]})
        if kinds == ["object"]:
            item_keys: list[str] = []
            for item in value[:50]:
                for k in item:
                    if k not in item_keys:
                        item_keys.append(k)
            shown = ", ".join(item_keys[:_MAX_KEYS])
            more = f", +{len(item_keys) - _MAX_KEYS} more" if len(item_keys) > _MAX_KEYS else ""
            return f"array[{len(value)}] of object{{{shown}{more}}}"
        return f"array[{len(value)}] of {'|'.join(kinds)}"
    if isinstance(value, str):
        return f"str({len(value)} chars)" if len(value) > 80 else "str"
    return _kind(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "array"
    return "object"


def parse_json_text(text: str) -> Any | None:
    """The JSON value a text block holds, or None. Only tried when it starts like JSON."""
    first = lstripped_head(text, 1)  # a 1 MB body that starts with a blank line is not copied to find out
    if not first or first not in "{[":
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


_GIT_COMMIT = re.compile(r"^(commit|Commit:)\s+[0-9a-f]{7,40}\b")
_DIFF = re.compile(r"^(diff --git |@@ -\d|\+\+\+ |--- a/)")
# A test-log line: one of these at its start, or a PASSED/FAILED/`passed ... in N` word anywhere. Two
# patterns, the unanchored one behind a substring check: as one alternation, re tried every
# alternative at every position of every sampled line, a large share of a big offload's cost.
_TEST_AT_START = re.compile(
    r"=+ test session starts|(not )?ok \d+|\s*✓|\s*✗|Tests?:\s+\d|--- (PASS|FAIL):|(PASS|FAIL)\s"
)
# unittest and cargo print `name ... ok` per test; the words alone would also admit prose's "... ok".
_TEST_WORD = re.compile(r"\bPASSED\b|\bFAILED\b|\bpassed\b.*\bin \d|\S \.\.\. (?:ok|FAIL|FAILED|ERROR|skipped\b.*)\r?$")


def _is_test_line(line: str) -> bool:
    if _TEST_AT_START.match(line) is not None:
        return True
    return any(word in line for word in _TEST_WORDS) and _TEST_WORD.search(line) is not None


_LISTING = re.compile(
    r"^(\[(FILE|DIR)\]\s|[dl-][rwx-]{9}\s|\.{0,2}/?[\w.@+-]+(/[\w.@+-]+)+/?$|[\w.@+-]+\.[A-Za-z0-9]{1,5}$)"
)
_SOURCE = re.compile(
    r"^\s*(def |class |import |from \S+ import |function |const |let |var |public |private |#include|package |fn |func |return\b|if \(|for \(|}\s*$|{\s*$)"
)
_LOGLINE = re.compile(
    r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|^\w{3} [ \d]\d \d{2}:\d{2}:\d{2}|^(DEBUG|INFO|WARN|WARNING|ERROR)\b"
)
_MARKDOWN = re.compile(r"^#{1,6} |^[-*] ")
# Every pattern above is anchored at the line start (`^`, no MULTILINE), so `match` answers what `search`
# would; sre only skips the other positions itself when the pattern opens with `^`, not with a `^...|^...`
# alternation (_LOGLINE, _MARKDOWN), which `search` tries at each of a line's up to 400 chars.

# The chars a line must start with for a pattern to match it (`SPACE`: any blank, for a leading `\s*`).
# When no sampled line starts with one, no line matches: the kind is out without reading each line.
# Most text is none of the kinds, and each kind would read up to 200 lines.
_SPACE = " "
_DIFF_FIRST = "d@+-"
_TEST_FIRST = "=noT-PF✓✗" + _SPACE
# _is_test_line's words: a line without any is judged at its start
_TEST_WORDS = ("PASSED", "FAILED", "passed", " ... ")
_SOURCE_FIRST = "dcifvlpr#{}" + _SPACE
_MARKDOWN_FIRST = "#-*"
_LISTING_FIRST = "[dl-"  # [FILE]/[DIR] and ls -l lines; a path holds a "/" or a ".", looked for in the joined lines


_NOT_PARSED: Any = object()


def share_above(lines: list[str], test: Callable[[str], object], threshold: float) -> bool:
    """`sum(1 for ln in lines if test(ln)) / len(lines) > threshold`, read only until the answer is certain.

    The same comparison, decided early: most text matches none of the kinds, and a kind that needs 70%
    of the lines is ruled out after 30% of them miss (describe and the index sample 200 lines per kind).
    """
    n = len(lines)
    if n == 0:
        raise ZeroDivisionError("share of no lines")
    need = min(n + 1, max(0, int(threshold * n)))  # the fewest hits h with h / n > threshold, found exactly
    while need <= n and not need / n > threshold:
        need += 1
    while need > 0 and (need - 1) / n > threshold:
        need -= 1
    if need > n:
        return False
    hits, misses_allowed = 0, n - need
    for ln in lines:
        if test(ln):
            hits += 1
            if hits >= need:
                return True
        else:
            misses_allowed -= 1
            if misses_allowed < 0:
                return False
    return hits >= need


def describe_text(text: str, view: Any = _NOT_PARSED, scan: TextScan | None = None) -> str:
    """`12,034 lines; looks like git log (3,000 commits)`-style summary. `view`: find_data(text) (a
    DataView or None) when the caller has it already (a large JSON body is parsed once per stub, not
    twice); `scan`: the text's TextScan when the identifier index reads the same text (line
    count, head, commits once). Data is described wherever it sits (data_view): inside a JSON string,
    as a Python literal, between lines of prose, in a field as JSON text."""
    scan = scan if scan is not None else TextScan(text)
    lines = scan.line_count()
    head = f"{lines:,} line{'' if lines == 1 else 's'}"
    found = find_data(text) if view is _NOT_PARSED else view
    if isinstance(found, DataView):
        return f"{head}; {describe_view(found)}"
    return f"{head}; looks like {text_kind(scan)}"


def describe_view(view: DataView) -> str:
    """`JSON array[20] of object{id, name}`, then where it sits when it was unwrapped or decoded."""
    where = view.where()
    return f"{view.syntax} {describe_json(view.value)}{f' ({where})' if where else ''}"


def text_kind(scan: TextScan) -> str:
    """What the shape line says the text looks like ("source code", "log lines", "a test log"...), judged
    once per TextScan: the index's finders (index/) ask the same question, so the two never disagree."""
    if scan.kind is None:
        scan.kind = _text_kind(scan)
    return scan.kind


def _text_kind(scan: TextScan) -> str:
    # Sample the first lines, each clipped: a 10 MB single-line body must cost what a short one does.
    lines = [ln[:_SAMPLE_LINE_CHARS] for ln in not_blank(scan.head(_SAMPLE_LINES))]
    if not lines:
        return "blank text"
    firsts = first_chars(lines)

    def share(test: Callable[[str], object], threshold: float, first: str | None = None) -> bool:
        if first is not None and not _may_start(firsts, first):
            return False  # no line can match: none is a hit
        return share_above(lines, test, threshold)

    if any(_GIT_COMMIT.match(ln) for ln in lines[:20]):
        commits = scan.commits()
        return f"git log ({commits:,} commit{'' if commits == 1 else 's'})"
    if share(_DIFF.match, 0.02, _DIFF_FIRST) and any(ln.startswith(("diff --git", "@@")) for ln in lines):
        return "a diff / patch"
    if _long_hunks(lines):
        return "a diff / patch"
    joined = "\n".join(lines)
    if "[ref=" in joined and share(_ARIA_LINE.match, 0.3, "-" + _SPACE):
        return "a web page snapshot (accessibility tree)"
    if _test_log(lines, firsts, joined):
        return "a test log"
    if _jsonl_share(lines) > 0.8:
        return "JSON lines"
    table = _table_shape(lines)
    if table:
        return table
    if (_may_start(firsts, _LISTING_FIRST) or _holds_any(joined, ("/", "."))) and share(_LISTING.match, 0.7):
        return "a file listing"
    if share(_LOGLINE.match, 0.5):
        return "log lines"
    if lstripped_head(scan.text, 9).startswith(("<!DOCTYPE", "<html", "<?xml")):
        return "HTML/XML"  # before source code: a page's inline scripts and code samples are the page's
    if share(_SOURCE.match, 0.15, _SOURCE_FIRST) and not _code_only_in_fences(lines):
        return "source code"
    if _defines_throughout(scan):
        return "source code"
    if share(_MARKDOWN.match, 0.1, _MARKDOWN_FIRST):
        return "markdown text"
    return "prose / plain text"


_FENCES = ("```", "~~~")


_DIFF_HEADER_WITHIN = 20
"""A diff's first file header comes within its first lines, under a line or two of its tool's own."""
_DIFF_LINE_STARTS = (
    "+",
    "-",
    " ",
    "@@",
    "\\",
    "diff ",
    "index ",
    "new file",
    "deleted file",
    "old mode",
    "new mode",
    "similarity",
    "rename ",
    "Binary files",
)


def _long_hunks(lines: list[str]) -> bool:
    """A diff whose sampled lines hold too few headers for the share rule: its hunks are long (a first
    file that appends hundreds of rows leaves a handful of header lines in the sample, read as prose).
    From its first file header on (`diff --git`, or `--- ` over `+++ `), 90% of the lines are diff lines,
    and a hunk header is among them."""
    for i, line in enumerate(lines[:_DIFF_HEADER_WITHIN]):
        if line.startswith("diff --git ") or (
            line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            rest = lines[i:]
            is_diff_line = methodcaller("startswith", _DIFF_LINE_STARTS)
            return any(ln.startswith("@@ -") for ln in rest) and share_above(rest, is_diff_line, 0.9)
    return False


def _code_only_in_fences(lines: list[str]) -> bool:
    """Whether sampled lines that read as code do so only inside fenced blocks (``` or ~~~): a markdown
    document with examples, which the code share alone called source code. Why: such a document's stub
    listed the definitions of its examples instead of its headings. Outside its fences such a document
    has at most 2 code-like lines or one in 20; source with a fenced example in a docstring has its
    imports and definitions outside the fence (docs/design.md, "Describing a text")."""
    fence = ""
    fences = outside = code = 0
    for line in lines:
        start = line.lstrip()[:3]
        if start in _FENCES and (not fence or start == fence):
            fence = "" if fence else start
            fences += 1
        elif not fence:
            outside += 1
            code += _SOURCE.match(line) is not None or DEFINITION.match(line) is not None
    return fences >= 2 and code <= max(2, outside // 20)


_MIN_DEFINITIONS_FOR_SOURCE = 5
_LINES_PER_DEFINITION = 40


def _defines_throughout(scan: TextScan) -> bool:
    """Source code whose first 200 lines are mostly a docstring, a licence or comments: at least 5 lines
    that start a definition (textscan.DEFINITION), one per 40 lines or more, and no fenced code block.

    Why: by the first lines alone, many source files read as prose or markdown (Python's `# ` comments
    read as headings), so their stubs had no outline; a README's examples sit in ``` fences, so READMEs
    stay documents (docs/design.md, "Describing a text"). Texts over DEFINITIONS_MAX_CHARS are not
    searched."""
    text = scan.text
    if len(text) > DEFINITIONS_MAX_CHARS or "```" in text or "~~~" in text:
        return False
    found = len(scan.definitions())
    return found >= _MIN_DEFINITIONS_FOR_SOURCE and scan.line_count() <= _LINES_PER_DEFINITION * found


def looks_like_test_log(scan: TextScan) -> bool:
    """What the shape line calls "a test log" (its first lines; git logs and diffs aside): index/text_records.py's
    test-outcome finder asks the same question, so the shape and the index never disagree on it."""
    lines = [ln[:_SAMPLE_LINE_CHARS] for ln in not_blank(scan.head(_SAMPLE_LINES))]
    return bool(lines) and _test_log(lines, first_chars(lines), "\n".join(lines))


def _test_log(lines: list[str], firsts: frozenset[str], joined: str) -> bool:
    may = _may_start(firsts, _TEST_FIRST) or _holds_any(joined, _TEST_WORDS)
    return may and share_above(lines, _is_test_line, 0.05)


def _holds_any(text: str, words: tuple[str, ...]) -> bool:
    """Some word is in `text`; a word with a letter the text lacks is ruled out by that letter's memchr,
    far cheaper than searching for the word."""
    return any(all(letter in text for letter in word) and word in text for word in words)


def _may_start(firsts: frozenset[str], chars: str) -> bool:
    """Some line starts with one of `chars` (a blank one, when they include _SPACE)."""
    if not firsts.isdisjoint(chars):
        return True
    return _SPACE in chars and any(c.isspace() for c in firsts)


def _jsonl_share(lines: list[str]) -> float:
    hits = 0
    for ln in lines[:50]:
        s = ln.strip()
        if s.startswith("{") and s.endswith("}"):
            hits += 1
    return hits / min(len(lines), 50)


def _table_shape(lines: list[str]) -> str | None:
    sample = lines[:50]
    if len(sample) < 3:
        return None
    named = _separated_table(sample)
    if named is None:
        aligned = aligned_header(sample)
        named = None if aligned is None else ("table of aligned columns", aligned)
    if named is None:
        return None
    name, cells = named
    shown = ", ".join(cells[:8]) + (", ..." if len(cells) > 8 else "")
    return f"a {name} ({len(cells)} columns; first row: {shown})"


def _separated_table(sample: list[str]) -> tuple[str, list[str]] | None:
    """(what table, its header cells) when 90% of the lines hold the header's count of a separator."""
    for sep, name in (("\t", "TSV table"), ("|", "table"), (",", "CSV table")):
        first = sample[0].count(sep)
        if first < 1:
            continue  # a header without the separator is no table: the other lines need no count
        counts = [ln.count(sep) for ln in sample]
        if sum(1 for c in counts if c == first) / len(counts) > 0.9:
            header = sample[0].strip()
            if sep == "|":
                header = header.strip("|")
            return name, [c.strip() for c in header.split(sep)]
    return None


_ALIGNED_GAP = re.compile(r"\s{2,}")
ALIGNED_RULE = re.compile(r"\s*-{2,}(?:\s+-{2,})*\s*$")
"""`----------  -------` under an aligned table's header (pip list): no row of data."""
_HEADER_CELL_CHARS = 30
_HEADER_CELL = re.compile(r"[A-Za-z%#][A-Za-z _%#()-]*$")


def aligned_columns(line: str) -> list[str]:
    """A line's cells where columns are set apart by two spaces or more (`kubectl get`, `docker ps`, pandas)."""
    return _ALIGNED_GAP.split(line.strip())


def aligned_header(sample: list[str]) -> list[str] | None:
    """The header cells of a table whose columns are aligned by spaces, read from its first non-blank lines;
    None when they are not such a table.

    A header: 2+ cells, each a name (at most 30 chars of letters, spaces, `%#()_-`: a log's first line has
    a timestamp, grep's a `path:`, `ls`' file names dots, prose long runs between double spaces). Its
    rows: at least 3 (rules aside), 80% of them of 2+ cells; not the header's count, as right-aligned
    numbers (`df -h`) split cells the header joins and empty columns (`docker ps`' PORTS, `pip list`'s
    editable location) drop theirs. Such output (`kubectl get pods`, `docker ps`, `pip list`, a
    DataFrame's `to_string()`) was "prose / plain text" with no index, so a pod name or a date from its
    middle sat behind the stub."""
    if len(sample) < 4:
        return None
    cells = aligned_columns(sample[0])
    if len(cells) < 2 or not all(len(c) <= _HEADER_CELL_CHARS and _HEADER_CELL.match(c) for c in cells):
        return None
    rows = [len(aligned_columns(ln)) for ln in sample[1:] if not ALIGNED_RULE.match(ln)]
    if len(rows) < 3:
        return None
    return cells if sum(1 for n in rows if n >= 2) / len(rows) >= 0.8 else None
