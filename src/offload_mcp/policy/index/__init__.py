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

Which fields of JSON records, since issue 38 (fields.py): identifiers first, recognised by their values
(unique per row and id-shaped: digits, hex, uuids, slugs, codes) as much as by their names (`_id`,
`uuid`, `sku`, `part_num`, `orderId`, nested `user.id`); then a table's date and numeric columns (a
table read by row: its key with its figures); then one display name, the first to give way. Few-valued
fields (status, state, labels, logins) are said once as value counts, and rows that stand out (a field
only a handful of rows set, such as `error`; a value only a handful of rows have, such as a failing
status, a figure far outside the rest of its column) are listed whole above the rows. A map of records
(daily prices keyed by date) is indexed as a list of its entries, its key first. Why: a list of 2,000
items with 2 error items was indexed by 530 names and showed no sign of the errors.

What it is: one line per item (JSON arrays of objects, at the top or under a key; list-of-rows
tables: their first column), or per record for text (git log: sha, author, subject; Playwright
snapshots: the page's URL and title, its controls by kind, then ref and row/link name; source code:
its definitions, each at its line number; diffs: their files; CSV/TSV/markdown tables and tables
aligned by spaces: first column; logs: ERROR lines; file listings: paths; HTML pages: their `<h1>`-`<h6>`
headings, each at its line number, and their links' targets; other text: its headings, each at its line
number, and its distinct URLs), in input order. Each record has levels, richest first (git: sha subject (author), the subject
shortened, the sha alone; JSON: the chosen fields, then fewer; ERROR lines: the line, without its
timestamp, its identifiers alone), and the index uses the richest level at which EVERY record fits
`budget`; when none does, the most compact level for the first records that fit, then one line that
says how many were left out and the call that pages them; unless that level would list less than half
of them (a git log of 545 commits: 134 bare shas), or the records are a table read by row: then fewer
records at a level that says which is which (sha, date and subject; the key with its figures). A JSON field that counts up by one in item
order (a row number) is stated once instead of on every line. Why (replay --client claude-code on
bench/data/corpus/mcp_servers.jsonl.gz): the needed facts behind a stub were shas from the middle of
git logs of 220 and 89 commits and ids of a log's 70th ERROR line, while the index spent its budget on
the first 63, 46 and 57 records in full; listing every record compactly took facts behind a stub from
5 of 143 to 0, tokens cut 89.38% -> 89.46%. Pure and deterministic: same body and budget, same bytes.

Where: json_records.py (JSON arrays of objects or rows), text_records.py (the line-oriented kinds, each
by its own finder), document.py (headings and URLs), render.py (the one layout every finder shares),
lines.py (lines found by str.find, numbered as they are read).
"""

from __future__ import annotations

from .json_records import json_index, python_literal
from .text_records import text_index

__all__ = ["json_index", "python_literal", "text_index"]
