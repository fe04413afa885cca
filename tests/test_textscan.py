"""The stub's fast text readers (policy/textscan.py and the guards describe/index put before their
per-line tests) give exactly what the straightforward definitions they replaced give: those
definitions are written out here and compared on adversarial texts (empty, no trailing line break,
\\r\\n, one 10 MB line, non-ASCII and non-ASCII blanks, many blank lines at the end, git headers
split across lines) and on hypothesis-generated ones."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offload_mcp.policy import describe
from offload_mcp.policy.describe import describe_text, share_above
from offload_mcp.policy.index import json_records, python_literal, text_index, text_records
from offload_mcp.policy.index.json_records import _counts_up
from offload_mcp.policy.index.lines import lines_holding
from offload_mcp.policy.stub import _clip, _preview
from offload_mcp.policy.textscan import (
    DEFINITION,
    TextScan,
    commit_matches,
    first_chars,
    head_lines,
    lstripped_head,
    not_blank,
    without_escapes,
)
from offload_mcp.text import pieces as text_pieces
from offload_mcp.text.data_view import find_data

# ------------------------------------------------------------------ the straightforward definitions

_GIT_REFERENCE = re.compile(r"^(?:commit|Commit:)\s+([0-9a-f]{7,40})\b", re.M)


def head_reference(text: str, count: int, limit: int) -> list[str]:
    return text[:limit].split("\n", count)[:count]


def preview_reference(text: str, max_lines: int) -> str:
    if max_lines <= 0 or not text:
        return ""
    lines = text.split("\n", max_lines)[:max_lines]
    return "\n".join("  " + _clip(line.rstrip("\r"), 120) for line in lines)


def counts_up_reference(items: list[Any], field: str) -> bool:
    first, last = (json_records._get(it, field) if isinstance(it, dict) else None for it in (items[0], items[-1]))
    if not isinstance(first, int) or not isinstance(last, int) or last - first != len(items) - 1:
        return False
    previous: int | None = None
    for it in items:
        value = json_records._get(it, field) if isinstance(it, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or (previous is not None and value != previous + 1):
            return False
        previous = value
    return len(items) >= 3


def text_kind_reference(text: str) -> str:
    """describe._text_kind as it was: each share read line by line, the sample cut from an 800 KB copy."""
    d = describe
    lines = [ln[:400] for ln in text[: 200 * 4096].split("\n", 200)[:200] if ln.strip()]
    if not lines:
        return "blank text"

    def share(pattern: re.Pattern[str] | Callable[[str], bool], threshold: float) -> bool:
        test = pattern.search if isinstance(pattern, re.Pattern) else pattern
        return sum(1 for ln in lines if test(ln)) / len(lines) > threshold

    if any(d._GIT_COMMIT.match(ln) for ln in lines[:20]):
        commits = len(re.findall(r"^(?:commit|Commit:)\s+[0-9a-f]{7,40}\b", text, re.M))
        return f"git log ({commits:,} commit{'' if commits == 1 else 's'})"
    if share(d._DIFF, 0.02) and any(ln.startswith(("diff --git", "@@")) for ln in lines):
        return "a diff / patch"
    header = next(
        (
            i
            for i, ln in enumerate(lines[:20])
            if ln.startswith("diff --git ")
            or (ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "))
        ),
        None,
    )
    if header is not None:
        rest = lines[header:]
        diff_lines = sum(1 for ln in rest if ln[:1] in "+- \\" or ln.startswith(d._DIFF_LINE_STARTS))
        if any(ln.startswith("@@ -") for ln in rest) and diff_lines / len(rest) > 0.9:
            return "a diff / patch"
    if share(re.compile(r'^[ \t]*- [a-z]+(?: "[^\n]*")?(?: \[[^\]\n]*\])*? \[ref=[A-Za-z0-9]+\]'), 0.3):
        return "a web page snapshot (accessibility tree)"
    if share(d._is_test_line, 0.05):
        return "a test log"
    if d._jsonl_share(lines) > 0.8:
        return "JSON lines"
    table = d._table_shape(lines)
    if table:
        return table
    if share(d._LISTING, 0.7):
        return "a file listing"
    if share(d._LOGLINE, 0.5):
        return "log lines"
    if share(d._SOURCE, 0.15):
        return "source code"
    if text.lstrip().startswith(("<!DOCTYPE", "<html", "<?xml")):
        return "HTML/XML"
    if len(text) <= 250_000 and "```" not in text and "~~~" not in text:
        definitions = len(DEFINITION.findall(text))  # source whose first lines are a docstring or comments
        if definitions >= 5 and text.count("\n") + 1 - text.endswith("\n") <= 40 * definitions:
            return "source code"
    if share(re.compile(r"^#{1,6} |^[-*] "), 0.1):
        return "markdown text"
    return "prose / plain text"


def describe_reference(text: str) -> str:
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    lines = f"{line_count:,} line{'' if line_count == 1 else 's'}"
    view = find_data(text)  # data wherever it sits: data_view's own tests read how it is found
    if view is not None:
        return f"{lines}; {describe.describe_view(view)}"
    return f"{lines}; looks like {text_kind_reference(text)}"


# ------------------------------------------------------------------ adversarial texts

BIG_LINE = "a, b\tc | d " * 1_000_000  # one 11 MB line: windows grow to the 819,200-char cut
GIT = "".join(f"commit {i:040x}\nAuthor: Dev <d@x>\nDate: today\n\n    change {i}\n\n" for i in range(300))
LOG = "".join(f"2026-11-29T16:00:{i % 60:02d}Z INFO request {i} ok\n" for i in range(500))
DOCSTRING_FIRST = '"""' + "A module whose docstring fills the first lines.\n" * 300 + '"""\n\n'
ADVERSARIAL = [
    DOCSTRING_FIRST + "".join(f"def step_{i}(x):\n    return x + {i}\n\n" for i in range(60)),
    "# Guide\n\n"
    + "".join(f"```python\ndef example_{i}():\n    pass\n```\n\n" + "Some words.\n" * 6 for i in range(40)),
    "",
    "\n",
    "\n" * 5000,
    "x",
    "no trailing line break\nsecond",
    "crlf\r\nlines\r\n" * 400,
    "line\r",
    "\r" * 2000,
    BIG_LINE,
    BIG_LINE + "\n" + LOG,
    "é✓ ünïcödé ✗ line\n" * 700,
    "\u3000\u2003\x1c blank-ish\n" * 300,
    "\u3000\n\x1c\x1d\n   \n" * 300,
    " " * 5000 + "{}",
    " " * 5000 + "<!DOCTYPE html>",
    "\n" * 10 + "[{'a': 1}]",
    LOG + "\n" * 3000,
    LOG.replace("INFO", "ERROR", 7),
    GIT,
    "\n" + GIT,
    GIT.replace("\n", "\r\n"),
    "commit\n\n  abcdef1234567 x\ncommit abcdef1\ncommit abcdef123g\nCommit:\tABCDEF1\nCommit: 0123456\n" * 50,
    "commit " + "a" * 41 + "\ncommit " + "a" * 40 + " \ncommit abc123\n" * 40,
    "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n" * 60,
    "tests/t.py::test_a PASSED\n" * 30 + "prose\n" * 100,
    "x" * 400 + "PASSED\n" * 50,
    " " * 450 + "def f():\n" * 250,
    "src/a/b.py\nsrc/c.txt\n" * 150,
    "[FILE] a.txt\n[DIR] b\n" * 120,
    "# Title\n- item\n* item\ntext\n" * 60,
    "[ref=e1]\n" + '- row "a b" [ref=e2]\n' * 40,
    "- Page URL: x\n" + '  - button "a \\" b" [checked] [ref=s1e2]\n- row\n' * 30 + "PASSED\n" * 80,
    "- Page URL: x\n" + '  - button "a \\" b" [checked] [ref=s1e2]\n- row\n' * 30 + "PASSED\n" * 10,
    "<html><body>" + "x" * 100_000,
    "Diff with abc:\ndiff --git a/x.csv b/x.csv\n--- a/x.csv\n+++ b/x.csv\n@@ -1,3 +1,300 @@\n" + "+row\n" * 300,
    "--- a/x\n+++ b/x\n@@ -1 +1,200 @@\n" + "+row\n" * 180 + "prose line\n" * 30,
    "# Notes\n\n```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n" + "Words about it.\n" * 100,
    "id,name\n" + "".join(f"{i},n{i}\n" for i in range(400)),
    "https://example.com/a https://example.com/b https://example.com/c\n" * 10,
    '\ufeff{\n  "a": [1, 2]\n}',
    "٣٣٣٣-١١-٢٩ 10:00 ERROR x\n" * 120,
    "DEBUG a\nINFO b\nWARN c\nERROR d\n" * 60,
]

_TEXT = st.lists(
    st.sampled_from(
        [*"ab c\n\n\r\t,|/.-{}[]#*:=0123456789éxDPF✓ ", "\u3000", "\x1c", "commit ", "Commit: ", "PASSED", "ERROR"]
    ),
    max_size=300,
).map("".join)


# ------------------------------------------------------------------ textscan


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_every_reader_matches_its_definition_on_adversarial_texts(text: str) -> None:
    scan = TextScan(text)
    for count in (1, 6, 20, 50, 200):
        assert head_lines(text, count, count * 4096) == head_reference(text, count, count * 4096), count
        assert scan.head(count) == head_reference(text, count, count * 4096), count
    assert scan.newlines == text.count("\n")
    assert scan.line_count() == text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    assert scan.commits() == len(_GIT_REFERENCE.findall(text))
    assert_commit_matches(text)
    for n in (1, 3, 9):
        assert lstripped_head(text, n) == text.lstrip()[:n]
    head = scan.head(200)
    assert not_blank(head) == [ln for ln in head if ln.strip()]
    for lines in range(0, 8):
        assert _preview(text, lines) == preview_reference(text, lines), lines
    assert describe_text(text) == describe_reference(text)


def assert_commit_matches(text: str) -> None:
    fast = [(line, m.group(1), m.end()) for line, m in commit_matches(text)]
    plain = [(text.count("\n", 0, m.start()) + 1, m.group(1), m.end()) for m in _GIT_REFERENCE.finditer(text)]
    assert fast == plain


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT, st.integers(1, 40), st.integers(0, 700))
def test_head_lines_is_the_split_of_the_prefix(text: str, count: int, limit: int) -> None:
    assert head_lines(text, count, limit) == head_reference(text, count, limit)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT)
def test_readers_match_their_definitions(text: str) -> None:
    scan = TextScan(text)
    assert scan.commits() == len(_GIT_REFERENCE.findall(text))
    assert_commit_matches(text)
    assert lstripped_head(text, 2) == text.lstrip()[:2]
    for lines in (1, 3, 6):
        assert _preview(text, lines) == preview_reference(text, lines)
    assert describe_text(text) == describe_reference(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="\nab\r", max_size=40), st.integers(min_value=1, max_value=7))
def test_newlines_counted_in_pieces_are_the_count(text: str, piece: int) -> None:
    """Pieces of any size, a line break on either side of their edges: the count of the whole."""
    kept = text_pieces.PIECE_CHARS
    text_pieces.PIECE_CHARS = piece
    try:
        assert TextScan(text).newlines == text.count("\n")
    finally:
        text_pieces.PIECE_CHARS = kept


def test_small_windows_grow_to_the_same_lines() -> None:
    """Lines longer than the first window (count * 128 chars) and a last line cut at the limit."""
    text = "\n".join("y" * (i * 37 % 3000) for i in range(400))
    for count, limit in ((200, 819_200), (20, 81_920), (50, 204_800), (200, 5_000), (3, 10)):
        assert head_lines(text, count, limit) == head_reference(text, count, limit)


# ------------------------------------------------------------------ guards before per-line tests


@pytest.mark.parametrize(
    ("pattern", "first"),
    [
        (describe._DIFF, describe._DIFF_FIRST),
        (describe._TEST_AT_START, describe._TEST_FIRST),
        (describe._SOURCE, describe._SOURCE_FIRST),
        (describe._MARKDOWN, describe._MARKDOWN_FIRST),
    ],
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_line_a_pattern_matches_starts_with_a_char_its_guard_admits(
    pattern: re.Pattern[str], first: str, data: st.DataObject
) -> None:
    line = data.draw(st.from_regex(pattern))
    if pattern.match(line):
        assert describe._may_start(first_chars([line]), first), line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(describe._LISTING))
def test_a_listing_line_starts_as_one_or_holds_a_slash_or_a_dot(line: str) -> None:
    if describe._LISTING.match(line):
        assert describe._may_start(first_chars([line]), describe._LISTING_FIRST) or "/" in line or "." in line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(text_records._LOG_LINE))
def test_a_log_line_passes_the_log_guard(line: str) -> None:
    if text_records._LOG_LINE.search(line):
        assert text_records._may_be_log(first_chars([line]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(text_records._PATH))
def test_a_path_holds_a_slash_or_a_dot(line: str) -> None:
    if text_records._PATH.match(line.strip()):
        assert "/" in line or "." in line


def test_anchored_patterns_match_where_they_search() -> None:
    """`match` replaced `search` for patterns anchored in every alternative (no MULTILINE)."""
    for pattern in (describe._DIFF, describe._LISTING, describe._LOGLINE, describe._SOURCE, describe._MARKDOWN):
        assert not pattern.flags & re.M
    for text in ADVERSARIAL[:30]:
        for line in text[:20_000].split("\n")[:300]:
            for pattern in (describe._DIFF, describe._LOGLINE, describe._MARKDOWN, text_records._LOG_LINE):
                assert (pattern.search(line) is None) == (pattern.match(line) is None)


def test_share_of_no_possible_line_is_false() -> None:
    assert not share_above(["x"], lambda ln: False, 0.0)


# ------------------------------------------------------------------ index


@pytest.mark.parametrize(
    "items",
    [
        [{"id": i} for i in range(5)],
        [{"id": i} for i in range(2)],
        [{"id": i} for i in range(3, 9)],
        [{"id": i if i != 3 else 3.0} for i in range(6)],
        [{"id": bool(i) if i < 2 else i} for i in range(6)],
        [{"id": i} for i in range(4)] + [{"id": 5}, {"id": 5}],
        [{"id": 0}, {"id": 2}, {"id": 1}, {"id": 3}],
        [{"id": 0}, {"other": 1}, {"id": 2}],
        [{"id": 0}, [1], {"id": 2}],
        [{"a": {"id": i}} for i in range(5)],
        [{"id": i} for i in range(10_000)],
    ],
)
def test_counts_up_matches_its_loop(items: list[Any]) -> None:
    for field in ("id", "a.id"):
        assert _counts_up(items, field) == counts_up_reference(items, field)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-3, 12), st.booleans(), st.floats(0, 10), st.none()), min_size=1, max_size=12))
def test_counts_up_matches_its_loop_on_any_values(values: list[Any]) -> None:
    items = [{"id": v} for v in values]
    assert _counts_up(items, "id") == counts_up_reference(items, "id")


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_every_line_holding_an_error_word_is_found(text: str) -> None:
    plain = sorted(
        {
            text.rfind("\n", 0, m.start()) + 1
            for word in text_records._ERROR_WORDS
            for m in re.finditer(re.escape(word), text)
        }
    )
    assert lines_holding(text, text_records._ERROR_WORDS) == plain


def test_python_literal_after_blanks() -> None:
    assert python_literal("\n  [{'a': 1}]") == [{"a": 1}]
    assert python_literal(" " * 5000 + "[{'a': 1}]") == [{"a": 1}]
    assert python_literal(" " * 5000 + "x") is None


def test_text_index_reads_the_same_text_with_or_without_a_shared_scan() -> None:
    for text in ADVERSARIAL:
        scan = TextScan(text)
        describe_text(text, scan=scan)  # describe first, as build_stub does: the index reuses what it read
        assert text_index(text, 6000, "trm_0123456789abcdef", scan) == text_index(text, 6000, "trm_0123456789abcdef")


_ESCAPE_PIECES = st.sampled_from(
    [
        "\x1b[0m",
        "\x1b[1;32m",
        "\x1b[2K",
        "\x1b]8;;https://x.example\x1b\\",
        "\x1b]0;title\x07",
        "\x1b(",
        "\x1b]0;a\nb\x07",
    ]
)


@given(st.lists(st.one_of(_ESCAPE_PIECES, st.sampled_from(["\n", "PASSED", " ", "x", "\r", "\x1b"])), max_size=60))
def test_without_escapes_keeps_every_line_break_and_strips_what_extract_strips(pieces: list[str]) -> None:
    from offload_mcp.reducers.extract import ANSI_RE

    text = "".join(pieces)
    plain = without_escapes(text)
    assert plain.count("\n") == text.count("\n")  # the index's line numbers are the stored body's
    if "\x1b]0;a\n" not in text:  # extract's OSC may span a line break; the stub's view may not
        assert plain == ANSI_RE.sub("", text)
    clean = text.replace("\x1b", "")
    assert without_escapes(clean) is clean  # inert without an ESC: not even a copy
