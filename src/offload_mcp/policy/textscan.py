"""What the stub reads of one text block, each fact computed once and only as far as it is needed.

describe.py (the shape line) and index/ (the identifier index) read the same things of a large
text: its line count, its first lines, its git commit count. Computed by each reader, they cost
several copies and passes of a large text: `text[:200 * 4096].split("\n", 200)` copies megabytes
to keep kilobytes, and a `^`-anchored MULTILINE pattern is tried by sre at every char. A `TextScan`
answers each question once per stub, exactly as those simple definitions would
(tests/test_textscan.py compares them on adversarial and generated texts; the measurements are in
docs/design.md, "Text scans and the event loop"):

- `head(count)`: the lines `text[: count * 4096].split("\n", count)[:count]` gives, split from a
  window of `count * 128` chars that grows 4x only while it holds fewer than `count` line breaks;
- `newlines`: `text.count("\n")`, the one full pass left for a text that has a line break (the C
  loop branches on each char, so irregular line lengths cost more than regular ones), and nothing
  exact in the standard library is faster (a bytes count runs the same loop; translate +
  int.bit_count is 5x slower); a text without any is told by memchr;
- `commits()`: the git commit headers, found by a pattern that starts with the line break, so sre
  skips to each "\n" instead of trying every position;
- `definitions()`: the lines that start a definition (DEFINITION), up to DEFINITIONS_MAX_CHARS: describe
  counts them to tell source code whose first lines are a docstring, index lists them as its outline
  (one pattern pass for both, where counting and then listing took two);
- `kind`: what describe judged the text to be, kept for the index's finders that ask the same.

Inert for short texts: every window then covers the whole text and the cost is what it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from operator import itemgetter

from ..text import pieces as text_pieces

_HEAD_LINE_CHARS = 4096
"""The head of `count` lines is read from the first `count * 4096` chars: one huge line costs what a short one does."""
_FIRST_WINDOW_LINE_CHARS = 128
"""The first window assumes lines of about this length; it grows 4x while it holds too few line breaks."""

# ANSI/VT escapes as extract strips them (reducers/extract.py ANSI_RE), except that an OSC sequence may not
# span a line break: a stub's index points at lines of the stored body, so the view must keep its lines.
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

DEFINITION = re.compile(
    # Possessive (*+, ++): on a long line of blanks the indent would give its blanks back one by one.
    r"^(?P<indent>[ \t]*+)"
    r"(?:(?:export|default|pub(?:\([\w:]+\))?|public|private|protected|internal|static|abstract|final|async|unsafe"
    r"|override|sealed|open|data|inline|suspend)[ \t]++)*+"
    r"(?:(?P<kind>def|class|function\*?|fn|fun|func|interface|struct|enum|trait|impl|type|module|namespace)[ \t]+"
    r"(?:\([^)\n]*\)[ \t]*)?"  # Go's receiver: func (s *Server) Name(
    r"(?P<name>[A-Za-z_$][\w$]*)"
    r"|(?P<binding>const|let|var)[ \t]+(?P<bound>[A-Za-z_$][\w$]*)[ \t]*=[ \t]*(?:async[ \t]*)?"
    r"(?:function\b|\([^)\n]*\)[ \t]*=>|[A-Za-z_$][\w$]*[ \t]*=>))",  # a function bound to a name (JS/TS)
    re.MULTILINE,
)
"""A definition at a line start: def, class, function, fn/fun/func (with Go's receiver), struct, interface,
enum, trait, impl, type, module, namespace, or a function bound by const/let/var, after any modifiers."""
DEFINITIONS_MAX_CHARS = 250_000
"""Larger texts are not searched for definitions: the pattern tries each line start, so its cost grows
with the text (docs/design.md, "Text scans and the event loop"), and a source file past this size is
generated or bundled code more often than one a model reads."""

_COMMIT_AT_START = re.compile(r"(?:commit|Commit:)\s+([0-9a-f]{7,40})\b")
_COMMIT_AFTER_BREAK = re.compile(r"\n(?:commit|Commit:)\s+([0-9a-f]{7,40})\b")


def head_lines(text: str, count: int, limit: int) -> list[str]:
    """`text[:limit].split("\n", count)[:count]`, copying only the first lines instead of `limit` chars.

    Exact: a window holding `count` line breaks splits into the same first `count` lines as any longer
    prefix; a window holding fewer grows, and once no line break is left before `limit` its last piece
    is extended to `limit` (the one huge line of a minified body is still cut where the slice cut it).
    """
    end = min(len(text), limit)
    window = min(end, max(1, count) * _FIRST_WINDOW_LINE_CHARS)
    while True:
        pieces = text[:window].split("\n", count)
        if len(pieces) > count:
            return pieces[:count]
        if window >= end:
            return pieces
        if text.find("\n", window, end) < 0:
            pieces[-1] = text[window - len(pieces[-1]) : end]
            return pieces
        window = min(end, window * 4)


def without_escapes(text: str) -> str:
    """`text` as a terminal shows it, for reading its shape: colour and cursor escapes removed, lines kept.

    A colourised log (pytest, jest, cargo with colour forced) read raw hides its kinds and lines: the
    ESC bytes reach the model in the stub's head, `\x1b[32mPASSED` holds no word `PASSED`, and a test
    log looked like prose with no index. Only the stub reads this view; the stored body stays as sent.
    Inert (the same object, one memchr pass) for text without an ESC.
    """
    return _TERMINAL_ESCAPE.sub("", text) if "\x1b" in text else text


def lstripped_head(text: str, n: int) -> str:
    """`text.lstrip()[:n]` without copying the text when it starts with blanks."""
    head = text[:_HEAD_LINE_CHARS].lstrip()
    if len(head) >= n or len(text) <= _HEAD_LINE_CHARS:
        return head[:n]
    return text.lstrip()[:n]


def not_blank(lines: list[str]) -> list[str]:
    """`[ln for ln in lines if ln.strip()]` without copying each line (str.strip and str.isspace share
    one definition of blank; a 1 MB single line is not copied to find it is not blank)."""
    return [ln for ln in lines if ln and not ln.isspace()]


def first_chars(lines: list[str]) -> frozenset[str]:
    """The first char of each (non-empty) line: a pattern anchored at the line start that cannot begin
    with any of them matches none of the lines, so a share of them is ruled out without reading each."""
    return frozenset(map(itemgetter(0), lines))


def commit_matches(text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each git commit header (`commit <sha>` / `Commit: <sha>` at a line start) with its 1-based line number.

    The same headers, in order, as `re.finditer(r"^(?:commit|Commit:)\\s+([0-9a-f]{7,40})\\b", text, re.M)`,
    each match with the same group(1) and end(): a header cannot contain another line start that
    begins one (the sha is hex, "commit" is not), so starting each match at its line break, and the
    first line apart, finds the same ones.
    """
    first = _COMMIT_AT_START.match(text)
    line, pos = 1, 0
    if first is not None:
        yield line, first
    for m in _COMMIT_AFTER_BREAK.finditer(text, first.end() if first is not None else 0):
        start = m.start() + 1
        line += text.count("\n", pos, start)
        pos = start
        yield line, m


class TextScan:
    """The facts of one text block that describe.py and index/ both read, each computed on first use."""

    __slots__ = ("text", "_newlines", "_heads", "_commits", "_definitions", "kind")

    def __init__(self, text: str) -> None:
        self.text = text
        self._newlines = -1
        self._heads: dict[int, list[str]] = {}
        self._commits = -1
        self._definitions: list[re.Match[str]] | None = None
        self.kind: str | None = None
        """What describe.py judged the text to be ("source code", "log lines"...), once it has."""

    @property
    def newlines(self) -> int:
        """`text.count("\n")`; a text without one (minified JSON, one huge line) is told by a memchr
        pass, far cheaper than the counting loop. Counted a piece at a time (text_pieces): one count
        over a text of tens of MB would hold the GIL while the event loop waits."""
        if self._newlines < 0:
            text = self.text
            self._newlines = text_pieces.count(text, "\n") if "\n" in text else 0
        return self._newlines

    def line_count(self) -> int:
        """Lines as an editor numbers them: a last line without its line break counts, an empty text has none."""
        text = self.text
        return self.newlines + (0 if text.endswith("\n") or not text else 1)

    def head(self, count: int) -> list[str]:
        """`text[: count * 4096].split("\n", count)[:count]` (head_lines), once per `count`."""
        lines = self._heads.get(count)
        if lines is None:
            lines = self._heads[count] = head_lines(self.text, count, count * _HEAD_LINE_CHARS)
        return lines

    def commits(self) -> int:
        """How many git commit headers the text has (`commit_matches`), counted once."""
        if self._commits < 0:
            first = _COMMIT_AT_START.match(self.text)
            after = _COMMIT_AFTER_BREAK.findall(self.text, first.end() if first is not None else 0)
            self._commits = len(after) + (first is not None)
        return self._commits

    def definitions(self) -> list[re.Match[str]]:
        """The lines that start a definition (DEFINITION), found once; none over DEFINITIONS_MAX_CHARS."""
        if self._definitions is None:
            text = self.text
            self._definitions = list(DEFINITION.finditer(text)) if len(text) <= DEFINITIONS_MAX_CHARS else []
        return self._definitions
