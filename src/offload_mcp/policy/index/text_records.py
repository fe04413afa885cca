"""Line-oriented text, by what it is: a git log's commits, a page snapshot's rows, a diff's files, source
code's definitions, a table's first column, a test log's failures, a log's ERROR lines, a listing's paths;
anything else goes to document.py (headings and URLs). The first finder that recognises the text indexes it."""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from ..describe import ALIGNED_RULE, aligned_columns, aligned_header, looks_like_test_log, share_above, text_kind
from ..textscan import DEFINITIONS_MAX_CHARS, TextScan, commit_matches, first_chars, not_blank
from .aria_rows import Row, table_rows
from .document import document_index
from .lines import iter_lines, lines_at, lines_holding, matches, numbered
from .render import VALUE_CHARS, Found, clip, text_render

_GIT = re.compile(r"^(?:commit|Commit:)\s+([0-9a-f]{7,40})\b", re.M)
_AUTHOR = re.compile(r"^Author:\s*(.*?)\s*(<[^>]*>)?\s*$")
_MESSAGE = re.compile(r"^(?:Message:\s*|\s{4})(\S.*)$")
_ARIA_RECORD_ROLES = ("row", "link", "listitem", "option", "treeitem")
"""A page snapshot's records: its most frequent one of these is listed element by element."""
_ARIA_CONTROL_ROLES = (
    "button",
    "textbox",
    "searchbox",
    "combobox",
    "checkbox",
    "radio",
    "switch",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "slider",
    "spinbutton",
)
"""What an agent types into, picks or presses: listed once per kind (role and name, digits aside), before the records."""
_ARIA = re.compile(
    r"^[ \t]*- (" + "|".join(_ARIA_RECORD_ROLES + _ARIA_CONTROL_ROLES) + r')(?: "([^"\\\n]*(?:\\.[^"\\\n]*)*)")?'
    r"(?: \[[^\]\n]*\])*? \[ref=([A-Za-z0-9]+)\]",
    re.M,
)
"""`- role "name" [attribute]... [ref=e12]`: Playwright MCP's aria snapshot line (a name's `"` escaped as `\\"`;
older releases spelled refs `s1e12`). A record needs its name; a control may have none (`- textbox [ref=e5]`)."""
_ARIA_PAGE = re.compile(r"^- Page (URL|Title): (.+)$", re.M)
_ARIA_PAGE_CHARS = 2_000
"""Playwright MCP states the page's URL and title just above its snapshot."""
_ARIA_CONTROLS_BESIDE_RECORDS = 40
"""Kinds of controls listed before a page's records: a grid of 500 kinds of buttons must not crowd out its rows."""
_ARIA_REPEAT_REFS = 4
_CONTROL_ROLES = frozenset(_ARIA_CONTROL_ROLES)
_NO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
"""Applied to a name's UTF-8 bytes (no multi-byte sequence holds an ASCII digit): a tenth of str.translate's cost."""
_ERROR_WORDS = ("ERROR", "FATAL", "CRITICAL", "Exception", "Traceback")
_LOG_LINE = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|^(DEBUG|INFO|WARN|WARNING|ERROR)\b")
"""Anchored in each alternative: `match` answers what `search` would, without search's try at every char
of the line (sre skips them only for a pattern that opens with `^`)."""
_PATH = re.compile(
    r"^(\[(FILE|DIR)\]\s+)?\.{0,2}/?[\w.@+-]+(/[\w.@+-]+)+/?$|^(\[(FILE|DIR)\]\s+)?[\w.@+-]+\.[A-Za-z0-9]{1,5}$"
)
_LOG_STAMP = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[ T][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?\]?\s*")
_TOKEN = re.compile(r"[A-Za-z0-9][\w.:/@#-]*[A-Za-z0-9]")
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}")
_GIT_SUBJECT_SHORT = (32, 16)
_GIT_SUBJECT_PAGED = 48
_GIT_PAGED_LEVEL = 1
"""When bare shas would list less than half of a long log, fewer lines of sha, date and subject say
which commit is which (render's `paged`), and the paging call reads on from the first one not listed."""
_ISO_DAY = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_ISO_STAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?=\s|$)"
)
"""An ISO date or date-time at the start of a `Date:` line's value, as written (to its first space past the time)."""
_GIT_REVERT = re.compile(r"^(?:Message:[ \t]*|[ \t]{4})Revert\b", re.M)
"""A commit message's first line that says the commit reverts another (git's own `Revert "..."` and prose alike)."""
_GIT_STANDOUTS_MAX = 5
_GIT_STANDOUT_MIN_COMMITS = 20
_GIT_DAY = re.compile(r"\b([A-Z][a-z]{2}) +(\d{1,2}) \d{1,2}:\d{2}:\d{2} (\d{4})\b")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
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
The first word is taken possessively (a word of many `::` backtracked cubically)."""
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


def text_index(
    text: str, budget: int, trm_id: str, scan: TextScan | None = None, pager: Callable[[int], str] | None = None
) -> str:
    """Index of a line-oriented text result: git log, Playwright snapshot, CSV/TSV, log, file listing, a document's
    headings and URLs; '' if none.

    Entries are produced lazily and counted with one regex pass, so a 4 MB body costs about what its
    first few hundred lines do (the 1 MB path must stay at the speed of no proxy). `scan`: the text's
    TextScan when describe_text reads the same text (its head lines, line and commit counts once).
    `pager`: the call that reads on from a line of `text` (render.text_render), when `lines=` does not.
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
            if finder is _git_log:
                extra = _git_standouts(scan.text, scan.commits())
                return text_render(
                    *found, budget=budget, trm_id=trm_id, paged=_GIT_PAGED_LEVEL, extra=extra, pager=pager
                )
            return text_render(*found, budget=budget, trm_id=trm_id, pager=pager)
    return document_index(scan, budget, trm_id)


@dataclass(frozen=True)
class _Commit:
    """What a git log says of one commit: its sha as written, author, date (as the log spells an ISO one), subject."""

    sha: str
    author: str
    date: str
    subject: str


def _commit_at(text: str, m: re.Match[str]) -> _Commit:
    """The commit whose header `m` matched: the fields on the lines below it, up to the next header."""
    sha, author, subject, date = m.group(1), "", "", ""
    for follow in text[m.end() : m.end() + 2000].split("\n", 12)[1:12]:
        if _GIT.match(follow):
            break
        a = _AUTHOR.match(follow)
        if a and not author:
            author = a.group(1)
        if follow.startswith("Date:") and not date:
            date = _git_date(follow)
        msg = _MESSAGE.match(follow)
        if msg and not subject and not follow.startswith(("Author:", "Date:")):
            subject = msg.group(1).strip()
        if author and subject:
            break
    return _Commit(sha, author, date, subject)


def _git_log(scan: TextScan) -> Found | None:
    text = scan.text
    if not any(_GIT.match(ln) for ln in scan.head(20)):
        return None
    total = scan.commits()

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        for line, m in commit_matches(text):
            c = _commit_at(text, m)
            sha, subject, author = c.sha, c.subject, c.author
            dated_sha = f"{sha} {c.date}" if c.date else sha
            full = f"{dated_sha} {clip(subject, 60)}" + (f" ({clip(author, 20)})" if author else "")
            dated = f"{sha} {c.date} {clip(subject, _GIT_SUBJECT_PAGED)}" if c.date else f"{sha} {clip(subject, 60)}"
            yield line, (full, dated, *(f"{sha} {clip(subject, n)}" for n in _GIT_SUBJECT_SHORT), sha)

    shortened = tuple(f"sha subject (first {n} chars)" for n in _GIT_SUBJECT_SHORT)
    whats = ("sha date subject (author)", f"sha date subject (first {_GIT_SUBJECT_PAGED} chars)", *shortened, "sha")
    commits = "commit" if total == 1 else "commits"
    return f"index of {total:,} {commits}, one line each: ", whats, entries(), total


def _git_standouts(text: str, total: int) -> tuple[str, ...]:
    """The reverts of a long log, whole (sha, date, subject, author), to list above its commits: a revert says
    what broke, so it is the commit an agent goes to next, and in a log of thousands it sits where no compact
    listing reaches. None when they are not rare (a log of reverts has none that stand out) or the log is short
    enough to be listed whole anyway."""
    if total < _GIT_STANDOUT_MIN_COMMITS:
        return ()
    found: list[_Commit] = []
    for revert in _GIT_REVERT.finditer(text):
        if len(found) >= _GIT_STANDOUTS_MAX:
            return ()  # more than a handful: none of them stands out
        header = max(text.rfind("\ncommit ", 0, revert.start()), text.rfind("\nCommit: ", 0, revert.start())) + 1
        m = _GIT.match(text, header)
        if m is not None and (not found or found[-1].sha != m.group(1)):
            found.append(_commit_at(text, m))
    if not found:
        return ()
    lines = [f"reverts ({len(found)}), whole:"]
    for c in found:
        lines.append(
            f"  {' '.join(p for p in (c.sha, c.date, clip(c.subject, 80)) if p)}"
            + (f" ({c.author})" if c.author else "")
        )
    return tuple(lines)


def _git_date(line: str) -> str:
    """`Date: 2026-02-01 18:00:00+00:00` (mcp-server-git) as written, or `Date:   Fri Nov 17 08:32:20 2023 +0000`
    (git log) as 2023-11-17; '' when neither. A date the log spells in ISO form is kept whole, its time and
    zone too: that is the text an agent passes on (`since=`), and a day alone matches none of it."""
    iso = _ISO_STAMP.match(line[5:].strip())
    if iso:
        return iso.group(0)
    m = _GIT_DAY.search(line)
    if m and m.group(1) in _MONTHS:
        return f"{m.group(3)}-{_MONTHS.index(m.group(1)) + 1:02d}-{int(m.group(2)):02d}"
    iso_day = _ISO_DAY.search(line)
    return iso_day.group(0) if iso_day else ""


@dataclass
class _Kind:
    """One kind of control of a page snapshot: where it first is, its first name and refs, how many."""

    at: int
    name: str
    refs: list[str]
    count: int = 1
    alike: bool = False
    """Its names differ, in their digits only."""


def _aria_snapshot(scan: TextScan) -> Found | None:
    """A page snapshot's controls and records: what an agent clicks, types into or reads next, by ref.

    Its controls (buttons, text boxes, combo boxes, check boxes, tabs, menu items...) come first, one line
    per kind in page order: a kind is a role and a name, its digits aside, so a `Refund` button on each of
    150 rows, or an `Edit ORD-2025-00638` one, is one line with its count and first refs, and the page's
    own search box and `Next page` button are not crowded out. Then the elements of its most frequent
    record role (rows, links, list items), one line each. The page's URL and title head it. Why: the
    index listed only that record role, so a stubbed page kept its search box, its `Next` button and its
    form fields behind the stub, and the shape line called it prose (docs/design.md, "The identifier
    index"). Inert (None) when no snapshot line with a ref is found in its first
    20K chars, or it has neither controls nor named records.
    """
    text = scan.text
    if text.find("[ref=", 0, 20_000) < 0:  # `in text[:20_000]`, no copy
        return None
    records: dict[str, int] = {}
    controls: dict[tuple[str, bytes], _Kind] = {}  # by role and name less its digits, in page order
    for m in _ARIA.finditer(text):
        role, name, ref = m.groups()
        if role not in _CONTROL_ROLES:
            if name:
                records[role] = records.get(role, 0) + 1
            continue
        name = name or ""
        kind = controls.get(key := (role, name.encode("utf-8", "surrogatepass").translate(_NO_DIGITS)))
        if kind is None:
            controls[key] = _Kind(m.start(), name, [ref])
        else:
            kind.count += 1
            kind.alike = kind.alike or name != kind.name
            if len(kind.refs) <= _ARIA_REPEAT_REFS:
                kind.refs.append(ref)
    if not records and not controls:
        return None
    rows = _unnamed_table_rows(text, records)
    role = max(records, key=lambda r: (records[r], r)) if records else ""
    if rows and 2 * len(rows) >= records[role]:
        role = "row"  # a table's rows hold its links and buttons: listing the rows lists them too, by row
    else:
        rows = []
    kinds = list(controls.items())
    if role:
        kinds = kinds[:_ARIA_CONTROLS_BESIDE_RECORDS]
    levels = 3 if rows else 2
    loose_links = _links_outside(text, rows)

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        line, counted = 1, 0
        for (kind_role, _), kind in kinds:  # in the order of their first lines
            line, counted = line + text.count("\n", counted, kind.at), kind.at
            ref = kind.refs[0]
            rich, short = (f"{ref} {kind_role} {clip(kind.name, n)}".rstrip() for n in (80, _ARIA_NAME_SHORT))
            if kind.count > 1:
                count = f"x{kind.count:,}" + (" alike" if kind.alike else "")
                refs = kind.refs[:_ARIA_REPEAT_REFS] + ["…"] * (kind.count > _ARIA_REPEAT_REFS)
                rich, short = f"{rich} ({count}: {', '.join(refs)})", f"{short} ({count})"
            yield line, (rich, *(short,) * (levels - 1))
        if rows:
            yield from heapq.merge(((row.line, row.levels()) for row in rows), loose_links, key=lambda e: e[0])
        elif role:
            for line, m in matches(_ARIA, text):
                if m.group(1) == role and m.group(2):
                    ref, name = m.group(3), m.group(2)
                    yield line, (f"{ref} {clip(name, 80)}", f"{ref} {clip(name, _ARIA_NAME_SHORT)}")

    listed = f"{records[role]:,} {role} elements (ref name)" if role else ""
    if rows:
        listed = f"{len(rows):,} table rows (cells, then the refs in each row)"
        listed += f", and its {len(loose_links):,} links outside them (ref name)" if loose_links else ""
    head = f"{_aria_page(text)}index of the page snapshot: {_aria_parts(len(kinds), len(controls), listed)}, one line each: "
    whats = _ARIA_ROW_LEVELS if rows else ("names in full", "names shortened")
    return head, whats, entries(), len(kinds) + len(loose_links) + (records[role] if role else 0)


def _aria_parts(kinds: int, controls: int, listed: str) -> str:
    """What a page snapshot's index lists: its first `kinds` of `controls` kinds of control, then `listed`."""
    parts = []
    if kinds:
        some = f"first {kinds} of {controls:,}" if kinds < controls else f"{controls:,}"
        what = "kind" if controls == 1 else "kinds"
        parts.append(f"its controls, {some} {what} (ref role name; a repeated kind: how many, named alike or the same)")
    if listed:
        parts.append(f"{'then ' if kinds else ''}its {listed}")
    return ", ".join(parts)


_ARIA_ROW_LEVELS = (
    "cells in full, then the role and ref of each link and control",
    "cells shortened, then the refs",
    "each row's identifying cell, then the refs",
)


def _links_outside(text: str, rows: list[Row]) -> list[tuple[int, tuple[str, ...]]]:
    """The named links of a snapshot listed by its rows that no row holds (its navigation, its pager),
    at the rows' three levels; [] without rows."""
    if not rows:
        return []
    inside = {ref for row in rows for role, ref in row.controls if role == "link"}
    return [
        (line, (f"{ref} {clip(name, 80)}", *(f"{ref} {clip(name, _ARIA_NAME_SHORT)}",) * 2))
        for line, m in matches(_ARIA, text)
        if m.group(1) == "link" and (name := m.group(2)) and (ref := m.group(3)) not in inside
    ]


def _unnamed_table_rows(text: str, records: dict[str, int]) -> list[Row]:
    """The snapshot's table rows when some have no name of their own (their cells tell them apart), counted
    into `records`; [] when every row is named (its name already says which row it is)."""
    if "- row [" not in text:
        return []
    rows = table_rows(text, _CONTROL_ROLES)
    if rows:
        records["row"] = len(rows)
    return rows


def _aria_page(text: str) -> str:
    """`page: URL (title)` and a line break, from the lines Playwright MCP puts above its snapshot; '' if none."""
    found = {m.group(1): m.group(2).strip() for m in _ARIA_PAGE.finditer(text, 0, _ARIA_PAGE_CHARS)}
    if "URL" not in found:
        return ""
    title = found.get("Title", "")
    return f"page: {clip(found['URL'], 200)}" + (f" ({clip(title, 100)})" if title else "") + "\n"


_DIFF_GIT = "\ndiff --git "
_DIFF_PLUS = "\n+++ "


def _diff_files(scan: TextScan) -> Found | None:
    """A diff's files, each at its header's line, with the lines it adds and removes: which files
    changed and where to read each one (`lines=`), and the paths an agent opens or edits next, where the
    shape line alone names only the first file's header. `diff --git a/X b/X` headers (the b/ side), else
    unified `+++ X` ones. Found by str.find from line break to line break and counted by two str.count per
    file (the index stops reading files once even the paths alone are past its budget).
    One commit with its diff (`git show`) is indexed the same way: its files, where the commit index
    would list the one commit the head already shows.
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
            yield line, (f"{line}: {clip(path)} (+{added} -{removed})", f"{line} {clip(path, 80)}")

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
        for line, m in numbered(found, text):
            indent = m.group("indent").replace("\t", "  ")[:_INDENT_SHOWN]
            end = text.find("\n", m.start())
            whole = text[m.start() : end if end >= 0 else len(text)].strip()
            kind, name = (
                (m.group("kind"), m.group("name")) if m.group("kind") else (m.group("binding"), m.group("bound"))
            )
            yield line, (f"{line}: {indent}{clip(whole, 100)}", f"{line}: {indent}{kind} {name}", f"{line} {name}")

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
    sample = not_blank(scan.head(50))
    if len(sample) < 3:
        return None
    for sep in ("\t", "|", ","):
        if sep not in sample[0]:
            continue  # a header without the separator is no table: the other lines need no count
        counts = [ln.count(sep) for ln in sample]
        if sum(1 for c in counts if c == counts[0]) / len(counts) > 0.9:
            piped = sep == "|"
            rules = sum(1 for ln in sample if _TABLE_RULE.match(ln)) if piped else 0
            return _first_column(
                scan,
                _first_cell(sample[0], sep, piped),
                rules,
                _TABLE_RULE.match if piped else _no_rule,
                partial(_first_cell, sep=sep, piped=piped),
            )
    return _aligned_first_column(scan, sample)


def _first_column(
    scan: TextScan,
    label: str,
    rules: int,
    is_rule: Callable[[str], object],
    first_cell: Callable[[str], str],
    header_lines: int = 1,
) -> Found:
    """A table's rows by their first cell, at their line numbers: every non-blank line but its rules and
    its first `header_lines`. Counted without reading every row: its lines less its blank ones, its
    header lines and the `rules` of its sample."""
    text = scan.text
    rows = scan.line_count() - text.count("\n\n") - header_lines - rules

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        seen = 0
        for n, ln in iter_lines(text):
            if not ln.strip() or is_rule(ln):
                continue
            seen += 1
            if seen > header_lines:
                yield n, (clip(first_cell(ln), VALUE_CHARS),)

    return f"index of {rows:,} rows, one line each: ", (f"first column ({clip(label, 40)})",), entries(), rows


def _no_rule(line: str) -> bool:
    return False


def _aligned_first_column(scan: TextScan, sample: list[str]) -> Found | None:
    """The first column of a table whose columns are aligned by spaces (describe.aligned_header): pod
    names of `kubectl get pods`, container ids of `docker ps`, packages of `pip list`, a DataFrame's
    dates. Its rule lines (`----  ---`) are no rows, nor is the line naming a DataFrame's index (one
    cell, just under a header set further in than the rows). Inert when describe reads no such table."""
    header = aligned_header(sample)
    if header is None:
        return None
    # A DataFrame's header has no cell over its index column: it starts further in than the rows.
    unnamed = _indent(sample[0]) > min(_indent(ln) for ln in sample[1:])
    index_name = unnamed and len(aligned_columns(sample[1])) == 1
    label = sample[1].strip() if index_name else "unnamed" if unnamed else header[0]
    rules = sum(1 for ln in sample if ALIGNED_RULE.match(ln))
    return _first_column(
        scan,
        label,
        rules,
        ALIGNED_RULE.match,
        lambda ln: aligned_columns(ln)[0],
        header_lines=1 + index_name,
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _first_cell(line: str, sep: str, piped: bool) -> str:
    if piped:
        line = line.lstrip()
        line = line[1:] if line.startswith("|") else line
    return line.split(sep, 1)[0].strip()


def _error_lines(scan: TextScan) -> Found | None:
    text = scan.text
    sample = not_blank(scan.head(200))
    if not sample or not _may_be_log(first_chars(sample)) or not share_above(sample, _LOG_LINE.match, 0.5):
        return None
    starts = lines_holding(text, _ERROR_WORDS)
    if not starts:
        return None
    lines = scan.line_count()

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        for line, raw in lines_at(text, starts):
            full = raw.strip()
            yield line, (clip(full), clip(_LOG_STAMP.sub("", full), _LOG_LINE_SHORT), _identifiers(full))

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
    starts = lines_holding(text, _TEST_FAILED_WORDS)
    found: dict[int, str] = {}
    for line, full in lines_at(text, starts, _TEST_LINE_CHARS):
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
    entries = ((n, (clip(found[n]), clip(found[n], _LOG_LINE_SHORT))) for n in sorted(found))
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
    return " ".join(seen) if seen else clip(_LOG_STAMP.sub("", line), 40)


def _listing(scan: TextScan) -> Found | None:
    text = scan.text
    head = "\n".join(scan.head(200))
    if "/" not in head and "." not in head:
        return None  # every _PATH holds a "/" or a ".": two C searches instead of up to 200 matches
    sample = [ln.strip() for ln in not_blank(scan.head(200))]
    if not sample or not share_above(sample, _PATH.match, 0.7):
        return None
    total = scan.line_count() - text.count("\n\n")
    entries = ((n, (clip(ln.strip()),)) for n, ln in iter_lines(text) if ln.strip())
    return f"index of {total:,} paths, one line ", ("each",), entries, total
