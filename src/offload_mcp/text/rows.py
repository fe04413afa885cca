"""Whether a multi-line text is rows of data: a table, JSON lines, or `key: value` records.

A server often hands rows over as one JSON string literal whose value is plain text: a CSV or TSV
export, a table aligned by spaces (psql, kubectl, a DataFrame print), JSON lines, mcp-server-git's
`Commit:` / `Author:` blocks; sometimes encoded twice, sometimes with a prose envelope or a markdown
fence inside the string. On the page that is one long line, and a cap on it hides every row after the
first few. `holds_rows` judges the decoded text as a reader would: most of its first non-blank lines
are rows of one kind. A few lines of prose, envelope tags or fences around the rows do not change the
verdict; prose, code or a blob do not pass (their lines share no separator count, no column gaps, no
`key: value` form).

Bounded: only the first SAMPLE_LINES non-blank lines of the first SAMPLE_CHARS chars are read.
"""

from __future__ import annotations

import csv
import re
from collections import Counter

SAMPLE_LINES = 60
SAMPLE_CHARS = 200_000
MIN_ROWS = 3
ROW_SHARE = 0.6
"""Rows must be this share of the sampled lines: 10 rows under a 4-line envelope are 71%."""
_SEPARATORS = (",", "\t", "|", ";")
_ALIGNED_GAP = re.compile(r" {2,}")
_ALIGNED_MIN_CELLS = 3
_SENTENCE_ENDS = (".", "!", "?", ":")
_RECORD_LINE = re.compile(r"""^[ \t]*(?:- )?["']?[A-Za-z_][\w.-]*(?: [\w.-]+){0,3}["']?:[ \t]+\S""")
"""A `key: value` field (`Author: Ada`, `- name: x`, `"id": 4`); a line ending in a colon is a header."""


def sample_lines(text: str) -> list[str]:
    """The first SAMPLE_LINES non-blank lines of `text` (trailing `\\r` and blanks dropped)."""
    head = text[:SAMPLE_CHARS].split("\n", SAMPLE_LINES * 4)
    lines = [line.rstrip() for line in head[: SAMPLE_LINES * 4]]
    return [line for line in lines if line.strip()][:SAMPLE_LINES]


def holds_rows(text: str) -> bool:
    """Whether most of `text`'s first non-blank lines (3 or more) are rows: of a delimited table (one
    count of fields), of a table aligned by runs of spaces, JSON lines, or `key: value` record fields."""
    lines = sample_lines(text)
    if len(lines) < MIN_ROWS:
        return False
    needed = max(MIN_ROWS, ROW_SHARE * len(lines))
    records = sum(1 for line in lines if _is_json_line(line) or _RECORD_LINE.match(line) is not None)
    if records >= needed:
        return True
    # a line that ends a sentence is prose, whatever separators its clauses share
    cells = [line for line in lines if not line.endswith(_SENTENCE_ENDS)]
    aligned = sum(1 for line in cells if len(_ALIGNED_GAP.split(line.strip())) >= _ALIGNED_MIN_CELLS)
    if aligned >= needed:
        return True
    return any(_delimited_rows(cells, sep) >= needed for sep in _SEPARATORS)


def _is_json_line(line: str) -> bool:
    s = line.strip()
    return len(s) >= 2 and (s[0], s[-1]) in (("{", "}"), ("[", "]"))


def _delimited_rows(lines: list[str], sep: str) -> int:
    """How many lines hold the commonest count (2 fields or more) of `sep`-separated fields, quotes read
    as CSV reads them (a quoted `,` in a name is no separator)."""
    counts: Counter[int] = Counter()
    for line in lines:
        if sep not in line:
            continue
        fields = len(next(csv.reader([line], delimiter=sep))) if '"' in line else line.count(sep) + 1
        counts[fields] += 1
    return counts.most_common(1)[0][1] if counts else 0
