"""The identifier index of an offloaded result: the values an agent passes to its next call.

Why: the values an agent later passes to a tool (commit shas, page ids, an order's number, a row's
name, an ERROR line, a CSV's first column) sat behind stubs whose only content was the shape and a few
head lines. Which values agents reuse, and what the index won on the corpora, is in docs/design.md
("The identifier index").

Which fields of JSON records (fields.py): identifiers first, recognised by their values (unique per row
and id-shaped: digits, hex, uuids, slugs, codes) as much as by their names (`_id`, `uuid`, `sku`,
`part_num`, `orderId`, nested `user.id`, and `*_no`, `*_ref`, `*_key`, `*_sha`); then a table's date
and numeric columns (a table read by row: its key with its figures); then one display name, the first
to give way. Few-valued fields (status, state, labels, logins) are said once as value counts, and rows
that stand out (a field only a handful of rows set, such as `error`; a value only a handful of rows
have, such as a failing status, a figure far outside the rest of its column) are listed whole above the
rows, so a long list's few errors show. URL fields are given as their common prefix (which carries
owner/repo) instead of every URL. A map of records (daily prices keyed by date) is indexed as a list of
its entries, its key first.

What it is: one line per item (JSON arrays of objects, at the top or under a key; list-of-rows
tables: their first column), or per record for text (git log: sha, date, subject, author, its reverts whole; Playwright
snapshots: the page's URL and title, its controls by kind, then ref and row/link name; source code:
its definitions, each at its line number; diffs: their files; CSV/TSV/markdown tables and tables
aligned by spaces: first column; logs: ERROR lines; file listings: paths; HTML pages: their `<h1>`-`<h6>`
headings, each at its line number, and their links' targets; other text: its headings, each at its line
number, and its distinct URLs), in input order. Each record has levels, richest first (git: sha date subject
(author), the subject shortened, the sha alone; JSON: the chosen fields, then fewer; ERROR lines: the
line, without its timestamp, its identifiers alone), and the index uses the richest level at which
EVERY record fits `budget`: the value an agent needs next is as likely in the middle of a long list as
at its head. When none does, the most compact level for the first records that fit, then one line that
says how many were left out and the call that pages them; unless that level would list less than half
of them (a long git log shown as bare shas), or the records are a table read by row: then fewer records
at a level that says which is which (sha, date and subject; the key with its figures). A JSON field
that counts up by one in item order (a row number) is stated once instead of on every line. Pure and
deterministic: same body and budget, same bytes.

Where: json_records.py (JSON arrays of objects or rows), text_records.py (the line-oriented kinds, each
by its own finder), document.py (headings and URLs), render.py (the one layout every finder shares),
lines.py (lines found by str.find, numbered as they are read).
"""

from __future__ import annotations

from .json_records import json_index, python_literal
from .text_records import text_index

__all__ = ["json_index", "python_literal", "text_index"]
