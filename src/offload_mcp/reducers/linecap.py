"""linecap: a per-line cap plus non-adjacent duplicate-line collapse, command-agnostic.

How it works: lines repeated anywhere in the output (not adjacent: extract handles those) keep their
first copy, annotated `(xN)`; then every line longer than `max_line_chars` is cut to its head with
`...[+K chars]`. A line is never cut when it carries something the agent acts on (NEVER_TRUNCATE_RE:
a path, a `path:line` location, a stack frame, an error, a test verdict, an exit status, a diff marker,
a URL), and never folded or cut when it is a record (FIELD_RE, DATA_LINE_RE: a later record without its
`Author:` line says nothing of who wrote it) or data wherever it sits in it (a document, rows or
records on one line: text/data_view.py, text/rows.py). The whole original is stashed behind one marker
per output, so every cut restores byte for byte, and a note line names the lines cut and dropped, so
the model knows what it lacks. It runs last in the pipeline: its marker would make the drastic
reducers decline.

When it shines: text with long noise lines (base64, hex dumps, a word list on one line) and lines
repeated far apart (a notice printed again by each step of a build).

When it is inert: `below_min_size`; `already_marked` and `kept_verbatim_after_expand` (the
gates every cutting reducer shares); `diff_shaped` (two identical `+ return nil` lines are two edits);
`json_document` and `data_document` (a whole data document's long lines are the records an agent acts
on: smartcrush's and tabulate's job); `no_long_or_repeated_lines`; `marker_no_win` (the cut would not
pay for its marker). Every guard, and what it keeps, is in docs/reducers.md ("linecap in detail").
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

import orjson

from ..text.data_view import KEY_VALUE_BLOCKS, data_in_line, find_data
from .base import Declined, FloorTerms, Outcome, ReduceContext, cg_hash, common_decline, never_worse, trailer
from .settings import LinecapSettings

MIN_DUP_CHARS = 8
PROTECTED_EDGE_LINES = 3

_NEVER_TRUNCATE: tuple[tuple[str, tuple[tuple[str, ...], ...], bool], ...] = (
    # (alternative, what each of its matches holds: one substring of every group, in the lower-cased
    # line when the third item is True)
    # A file path at line start, or after a separator
    (r"^(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.\w{1,10}\b", (("/",), (".",)), False),
    (r"[\s\"'(=:\[](?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.\w{1,10}\b", (("/",), (".",)), False),
    # path:line[:col] at line start (also catches `{"items":[{"id":1`)
    (r"^\S+:\d+", ((":",),), False),
    # path:line[:col] anywhere (from a token start: linear, not quadratic)
    (r"(?<![\w./-])[\w./-]+\.\w{1,10}:\d+(?::\d+)?", ((":",), (".",)), False),
    (r"^\s*File \".*\", line \d+", (), False),  # Python stack frame
    (r"^\s+at \S.*(?:\(.*:\d+(?::\d+)?\)|\.\w+:\d+)", (), False),  # JS / JVM stack frame
    (
        r"(?i:\b(?:error|exception|traceback|fatal|panic)\b)",
        (("error", "exception", "traceback", "fatal", "panic"),),
        True,
    ),
    (r"\w(?:Error|Exception)\b", (("Error", "Exception"),), False),  # ValueError, IOException
    # test verdicts
    (
        r"\b(?:PASSED|FAILED|XFAIL|XPASS|SKIPPED|ERROR|FAIL|PASS|\d+ (?:passed|failed|errors?))\b",
        (("PASS", "FAIL", "SKIPPED", "ERROR", " passed", " failed", " error"),),
        False,
    ),
    (r"(?i:\bexit(?:ed)? (?:code|status|with)\b|\breturn ?code\b)", (("exit ", "exited ", "return"),), True),
    (r"^(?:diff --git |\+\+\+ |--- |index [0-9a-f]+\.\.[0-9a-f]+)", (), False),  # diff markers
    (r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", (), False),  # hunk header
    (r"\b(?:https?|ftp|file)://", (("://",),), False),
)
NEVER_TRUNCATE_RE = re.compile("|".join(pattern for pattern, _, _ in _NEVER_TRUNCATE))
"""A line carrying something the agent acts on (a path, a location, a stack frame, an error, a test
verdict, an exit status, a diff marker, a URL): linecap never cuts it. `^` is the line's start."""
_ALTERNATIVES = tuple((re.compile(pattern), needs, lowered) for pattern, needs, lowered in _NEVER_TRUNCATE)


FIELD_RE = re.compile(
    r"^\s*(?:\d+[→\t]\s*)?(?:- )?(?![A-Z0-9_]+:|\w*(?:Error|Warning|Exception):)[A-Za-z_][\w-]*(?: [\w-]+){0,3}:\s+\S"
)
"""A `key: value` field of a record (git log `Author:`, YAML `- name: x`, `Status: ok`).

A repeated field line is the same value in *different* records: folding it to
one `(xN)` copy leaves the later records without it (the git log case: which
commit did `Author: Dev 1` write?). Never collapsed, never capped."""
DATA_LINE_RE = re.compile(r'^\s*(?:\d+[→\t]\s*)?(?:[\[{]|"[^"\n]{1,80}"\s*:)')
"""A JSON record or `"key": value` member on one line: its fields are values an agent acts on."""
HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)
DIFF_HEADER_RE = re.compile(r"^(?:diff --git |--- \S|\+\+\+ \S)", re.M)


def is_diff_shaped(text: str) -> bool:
    # `in` first: HUNK_RE's search tries each line start, every position of a one-line blob
    hunk = "@@ -" in text and HUNK_RE.search(text) is not None
    return hunk or len(DIFF_HEADER_RE.findall(text, 0, 200_000)) >= 2


def is_json_document(text: str) -> bool:
    """A whole JSON document: its long lines are records the agent acts on, and a cut one is invalid JSON."""
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def never_truncate(line: str) -> bool:
    """NEVER_TRUNCATE_RE.search(line), found sooner on an ASCII line.

    One search of the whole alternation tries every alternative at every position, slow on a long
    line that matches none (base64, hex, a CSV or a word list on one line). Each alternative needs a
    substring of each of its groups, which `in` finds in C, so only those that can match are searched,
    each alone (on ASCII, only A-Z fold to the letters of the case-blind ones; docs/design.md,
    "Reducers"). The same answer, tested on the corpora's lines and on generated ones
    (tests/test_reducer_linecap.py).
    """
    if not line.isascii():
        return NEVER_TRUNCATE_RE.search(line) is not None
    lower = line.lower()
    return any(
        all(any(needle in (lower if lowered else line) for needle in group) for group in needs)
        and regex.search(line) is not None
        for regex, needs, lowered in _ALTERNATIVES
    )


def is_record_line(line: str, json_records: bool = True) -> bool:
    """A line an agent reads as data (a field, or a JSON record unless JSON capping was opted in)."""
    return FIELD_RE.match(line) is not None or (json_records and DATA_LINE_RE.match(line) is not None)


def kept_whole(line: str, json_records: bool = True) -> bool:
    """A line linecap never cuts: a record line or one on the never-truncate allow-list."""
    return is_record_line(line, json_records) or never_truncate(line)


def _line_ranges(numbers: list[int]) -> str:
    """`3, 7-9, 12` (1-based line numbers of the original), at most 6 runs then `...`."""
    runs: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], -1]:
        if n == prev + 1:
            prev = n
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ", ".join(runs[:6]) + (", ..." if len(runs) > 6 else "")


def cut_note(capped: list[int], folded: list[int], limit: int) -> str:
    """What linecap removed, in lines of the original the model can name when it expands."""
    parts: list[str] = []
    if capped:
        parts.append(f"cut line{'s' if len(capped) > 1 else ''} {_line_ranges(capped)} at {limit} chars")
    if folded:
        parts.append(f"dropped repeat line{'s' if len(folded) > 1 else ''} {_line_ranges(folded)} (xN)")
    return f"[linecap {'; '.join(parts)}; expand for all]"


HEADER_RE = re.compile(r"^[\w./@+~-]*[\w.]:\s*$")
"""A record header: a path or name ending in `:` alone on its line (`./astropy/io:`, `.:`, `src:`).
Not prose ending in a colon (`Traceback (most recent call last):`), whose blocks repeat log noise."""


def _in_several_headed_blocks(lines: list[str], repeated: Any) -> set[str]:
    """Repeated lines whose copies sit in different blocks, one of them a headed record.

    A block is a run of non-blank lines; it is a headed record when its first
    line is a path or name header ending in `:` (`./astropy/io:` in `ls -R`).
    `__init__.py` under ten directory headers is ten facts (which package has
    one), not one line repeated: folding it to `(x10)` loses which directories.
    """
    blocks: dict[str, set[int]] = {}
    headed_copy: set[str] = set()
    block, headed, start = 0, False, True
    for line in lines:
        if not line.strip():
            block, start = block + 1, True
            continue
        if start:
            headed, start = HEADER_RE.match(line) is not None, False
        if line in repeated:
            blocks.setdefault(line, set()).add(block)
            if headed:
                headed_copy.add(line)
    return {line for line in headed_copy if len(blocks[line]) > 1}


def cap_line(line: str, limit: int) -> str:
    head = line[: max(limit - 3, 1)]
    return f"{head}...[+{len(line) - len(head)} chars]"


_FIELD_IN_LINE = re.compile(r"\w: +[^\s;]++(?!;)")
"""A `key: value` field anywhere in a line (`Simulation ID: WSA-ENLIL/39019/1`, `Arrival: 2025-05-27`);
not a CSS declaration (`flex: 2;`), whose value ends at a semicolon."""
FIELDS_MIN = 4
CHARS_PER_FIELD = 100
"""A line of records flattened onto one line holds a field every ~50 chars; prose a colon far less often."""
TABLE_SAMPLE_LINES = 50
TABLE_MIN_LINES = 3
TABLE_SHARE = 0.9
TABLE_HEAD_LINES = 3
_TABLE_SEPARATORS = ("\t", "|", ",", ";")
_NUMBERED = re.compile(r"^ *\d+→|^ +\d+\t")
"""A line number (Claude Code's Read `    37→`, `cat -n`'s padded `     1\t`): no column of a table (a TSV
row's first cell is a number before a tab too, unpadded)."""


def holds_data(line: str, limit: int, cap_json: bool = False) -> bool:
    """A long line that is data wherever it sits in it: a document (JSON, a JSON string of one, a
    Python literal) across the cap, or `key: value` fields packed along it (records flattened onto one
    line). Cutting it hides values an agent passes on; the policy offloads a result too long to keep."""
    if not cap_json and data_in_line(line, max(limit - 3, 1)):
        return True
    # each field holds ": ", counted in C first: most long lines hold too few to be records
    colons = line.count(": ")
    if colons < FIELDS_MIN or colons * CHARS_PER_FIELD < len(line):
        return False
    fields = len(_FIELD_IN_LINE.findall(line))
    return fields >= FIELDS_MIN and fields * CHARS_PER_FIELD >= len(line)


def table_rows(lines: list[str]) -> set[int]:
    """Indices of a CSV, TSV, pipe or space-aligned table's rows: when 90% of 50 non-blank lines (3 or
    more) from the header hold the header's count (1+) of a separator, as describe's shape line calls a
    table, every later line with that count is a row; aligned, when 90% split into 3+ cells at runs of
    2+ spaces. The header may follow up to TABLE_HEAD_LINES lines of prose, a fence or an envelope tag
    (`Found 40 rows:`). A log line that happens to hold commas is no row: the text is no table."""
    numbered = [(idx, _NUMBERED.sub("", line, 1)) for idx, line in enumerate(lines) if line.strip()]
    for head in range(min(TABLE_HEAD_LINES, max(len(numbered) - TABLE_MIN_LINES, 0)) + 1):
        sample = [line for _, line in numbered[head : head + TABLE_SAMPLE_LINES]]
        if len(sample) < TABLE_MIN_LINES:
            return set()
        enough = TABLE_SHARE * len(sample)
        for sep in _TABLE_SEPARATORS:
            count = sample[0].count(sep)
            if count < 1:
                continue
            if sum(1 for line in sample if line.count(sep) == count) >= enough:
                return {idx for idx, line in numbered[head:] if line.count(sep) == count}
        if sum(1 for line in sample if _aligned_cells(line)) >= enough:
            return {idx for idx, line in numbered[head:] if _aligned_cells(line)}
    return set()


_ALIGNED_GAP = re.compile(r" {2,}")
_ALIGNED_MIN_CELLS = 3


def _aligned_cells(line: str) -> bool:
    """A row of a table aligned by spaces (psql, kubectl, a DataFrame print): 3+ cells between runs of 2+ spaces."""
    return "  " in line and len(_ALIGNED_GAP.split(line.strip())) >= _ALIGNED_MIN_CELLS


class Linecap:
    name = "linecap"

    def __init__(self, settings: LinecapSettings) -> None:
        self.settings = settings

    def floor(self, text: str, ctx: ReduceContext, terms: FloorTerms) -> FloorTerms | None:
        """It cuts lines to no fewer than `max_line_chars` and removes repeated ones; record lines and
        allow-listed ones (a minified bundle's long lines name paths and URLs) it keeps whole."""
        json_records = not self.settings.cap_json_documents
        keeps_whole = functools.partial(kept_whole, json_records=json_records)
        return replace(terms, cap=self.settings.max_line_chars, keeps_whole=keeps_whole)

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        s = self.settings
        if len(text) < s.min_size:
            return Declined("below_min_size")
        if (gate := common_decline(text, ctx)) is not None:
            return gate
        if is_diff_shaped(text):
            return Declined("diff_shaped")
        if not s.cap_json_documents and (view := find_data(text)) is not None and view.syntax != KEY_VALUE_BLOCKS:
            return Declined("data_document" if view.decoded else "json_document")
        lines = text.split("\n")
        rows: set[int] | None = None  # the table rows, found when a long line first asks
        counts = self._duplicate_counts(lines, s.collapse_indented_duplicates) if s.collapse_duplicate_lines else {}
        limit = s.max_line_chars
        out: list[str] = []
        capped: list[int] = []
        folded: list[int] = []
        emitted: set[str] = set()
        middle = range(PROTECTED_EDGE_LINES, len(lines) - PROTECTED_EDGE_LINES)
        for idx, line in enumerate(lines):
            times = counts.get(line, 0) if idx in middle else 0
            if times:
                if line in emitted:
                    folded.append(idx + 1)
                    continue
                emitted.add(line)
            shown = line
            if (
                limit
                and len(line) > limit
                and not never_truncate(line)
                and not is_record_line(line, not s.cap_json_documents)
                and not holds_data(line, limit, s.cap_json_documents)
                and idx not in (rows := table_rows(lines) if rows is None else rows)
            ):
                shown = cap_line(line, limit)
                capped.append(idx + 1)
            if times:
                shown = f"{shown} (x{times})"
            out.append(shown)
        if not (capped or folded):
            return Declined("no_long_or_repeated_lines")
        hash_ = cg_hash(text)
        reduced = "\n".join(out)
        sep = "" if reduced.endswith("\n") else "\n"
        note = cut_note(capped, folded, limit)
        return never_worse(text, f"{reduced}{sep}{note}\n{trailer(hash_)}", hash_)

    @staticmethod
    def _duplicate_counts(lines: list[str], indented: bool = False) -> dict[str, int]:
        """Lines (outside the protected edges, >= 8 trimmed chars) seen more than once, with their count.

        Indented lines count only with `collapse_indented_duplicates`: in source
        code a repeated indented line (`return None`) is structure whose position
        carries the meaning (and removing it shifts the line numbers an agent
        reads off for its next edit).
        """
        counts: dict[str, int] = {}
        for line in lines[PROTECTED_EDGE_LINES : len(lines) - PROTECTED_EDGE_LINES]:
            if len(line.strip()) >= MIN_DUP_CHARS and (indented or not line[:1].isspace()):
                counts[line] = counts.get(line, 0) + 1
        # the record test runs on repeated lines only: two regexes per line were a third of linecap's time
        repeated = {line: n for line, n in counts.items() if n > 1 and not is_record_line(line)}
        for line in _in_several_headed_blocks(lines, repeated.keys()) if repeated else ():
            del repeated[line]
        return repeated
