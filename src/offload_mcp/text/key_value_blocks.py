"""Records written as blocks of `key: value` lines, read as an array of records.

SQL servers that print rows for a reader (mcp-alchemy's `1. row` then `id: 10` / `job_id: ...` per
column, a blank line between rows), YAML-ish listings (`- id: 4` then indented `name: x`), and exports
separated by `---` lines hand a table over as text. Read as prose, a 69K-char listing got no index and
every job id sat behind the stub. Read as records, describe and the index treat it as the table it is:
ids first, value counts, rows that stand out, projected rows.

A block is a run of `key: value` lines; a blank line, a `---` line, a line that is no field (a `1. row`
header) or a `- ` item ends it; so does a repeat of the block's first key (records with no separator).
The text is records when there are at least MIN_RECORDS blocks sharing a key, the lines that are no field
are at most one a record plus a few of envelope, and a field repeated inside a block other than its
first key is no record (a log's `INFO:` lines). Values are kept as written (strings): what a reader
copies is the text. Bounded: a sample of the first lines is judged before the whole text is read, and
texts over MAX_CHARS are not read.
"""

from __future__ import annotations

import re
from collections import Counter

MAX_CHARS = 8_000_000
MIN_RECORDS = 3
SAMPLE_LINES = 40
SAMPLE_FIELD_SHARE = 0.5
"""Field lines among the sampled non-blank ones: a `1. row` header and one column are half."""
SHARED_KEY_SHARE = 0.8
"""A key the records share: this share of them have it."""
ENVELOPE_LINES = 12
"""Lines that are no field and no record's header, around the blocks (a title, a row count)."""

_FIELD = re.compile(r"^([ \t]*)(- )?([A-Za-z_][\w.-]*(?: [\w.-]+){0,3}):[ \t]+(\S.*?)[ \t\r]*$")
"""`key: value` (a key of up to four words, `Order ID: 7`), optionally a YAML item's first field (`- key: v`)."""
_SEPARATOR = re.compile(r"^[ \t]*(?:-{3,}|={3,})?[ \t\r]*$")
_GIT_LOG = re.compile(r"^[ \t]*(?:commit|Commit:)[ \t]+'?[0-9a-f]{7,40}\b", re.M)
_GIT_LOG_HEAD = 2_000
"""Where a git log's first commit line sits (`git log`, mcp-server-git's `Commit: sha`): its blocks are
commits, which the index reads as a log (sha, subject, author: policy/index/text_records.py), not a table."""


def key_value_records(text: str) -> list[dict[str, str]] | None:
    """The records `text` writes as blocks of `key: value` lines, or None when it is not such a listing."""
    if len(text) > MAX_CHARS or _GIT_LOG.search(text, 0, _GIT_LOG_HEAD) or not _sample_is_fields(text):
        return None
    records: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    first_key = ""
    others = 0
    for line in text.split("\n"):
        if _SEPARATOR.match(line):
            current = None
            continue
        m = _FIELD.match(line)
        if m is None:
            others += 1  # a record's header, or envelope prose
            current = None
            continue
        _indent, dash, key, value = m.groups()
        if current is not None and (dash or key == first_key):
            current = None
        elif current is not None and key in current:
            return None  # a key repeated inside a record: lines of a log, not records
        if current is None:
            current = {}
            first_key = key
            records.append(current)
        current[key] = value
    if len(records) < MIN_RECORDS or others > len(records) + ENVELOPE_LINES:
        return None
    counts: Counter[str] = Counter(k for record in records for k in record)
    shared = [k for k, n in counts.items() if n >= SHARED_KEY_SHARE * len(records)]
    if not shared:
        return None
    if others < MIN_RECORDS and all(len(record) == 1 for record in records):
        return None  # one field a line and no header per record: labelled lines, not a table
    return records


def _sample_is_fields(text: str) -> bool:
    """Whether most of the first non-blank lines are `key: value` fields (a cheap look before the full read)."""
    lines: list[str] = []
    start = 0
    while len(lines) < SAMPLE_LINES and start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start : min(end, start + 1_000)]
        if line.strip():
            lines.append(line)
        start = end + 1
    if len(lines) < MIN_RECORDS * 2:
        return False
    fields = sum(1 for line in lines if _FIELD.match(line))
    return fields >= SAMPLE_FIELD_SHARE * len(lines)
