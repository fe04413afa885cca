"""linecap: a per-line cap plus non-adjacent duplicate-line collapse, command-agnostic.

How it works: lines repeated anywhere in the output (not adjacent: extract
handles those) keep their first copy, annotated `(xN)`; then every line longer
than `max_line_chars` is cut to its head with `...[+K chars]` — unless it
carries something the agent acts on (the never-truncate allow-list: a file
path, a `path:line[:col]` location, a stack frame, an error/exception/
traceback, a test verdict, an exit status, a diff marker, a hunk header or a
URL). Duplicates collapse before the cap so a dropped copy is not also charged
as a capped line, and `(xN)` is rendered after the cap so the cap cannot eat
it. Guards (seed 002): diff-shaped blobs are skipped entirely (two identical
`+ return nil` lines are two edits); lines under 8 trimmed chars and the first
and last 3 lines are never collapsed; only exact duplicates collapse, so lines
differing only in a source location stay two findings; indented lines (code,
nested structure) are never collapsed. The whole original is
stashed behind one marker per output, so every cut restores byte for byte.
A whole JSON document is declined (`json_document`): on the corpus the cap's
biggest target was one-line API records (reservation details, flight lists),
whose cut fields are exactly what the agent acts on; JSON is smartcrush's job.
Runs last in the pipeline: its marker would make drastic reducers decline.
When it is inert: `below_min_size`, `already_marked`, `diff_shaped`,
`json_document`, `no_long_or_repeated_lines`, `marker_no_win`, `kept_verbatim_after_expand`.
"""

from __future__ import annotations

import re

import orjson

from .base import Declined, Outcome, ReduceContext, cg_hash, common_decline, never_worse, trailer
from .settings import LinecapSettings

MIN_DUP_CHARS = 8
PROTECTED_EDGE_LINES = 3

NEVER_TRUNCATE_RE = re.compile(
    r"(?:^|[\s\"'(=:\[])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+\.\w{1,10}\b"  # a file path
    r"|^\S+:\d+"  # path:line[:col] at line start (also catches `{"items":[{"id":1` — seed #151)
    r"|(?<![\w./-])[\w./-]+\.\w{1,10}:\d+(?::\d+)?"  # path:line[:col] anywhere (from a token start: linear, not quadratic)
    r"|^\s*File \".*\", line \d+"  # Python stack frame
    r"|^\s+at \S.*(?:\(.*:\d+(?::\d+)?\)|\.\w+:\d+)"  # JS / JVM stack frame
    r"|(?i:\b(?:error|exception|traceback|fatal|panic)\b)|\w(?:Error|Exception)\b"  # ValueError, IOException
    r"|\b(?:PASSED|FAILED|XFAIL|XPASS|SKIPPED|ERROR|FAIL|PASS|\d+ (?:passed|failed|errors?))\b"  # test verdicts
    r"|(?i:\bexit(?:ed)? (?:code|status|with)\b|\breturn ?code\b)"
    r"|^(?:diff --git |\+\+\+ |--- |index [0-9a-f]+\.\.[0-9a-f]+)"  # diff markers
    r"|^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@"  # hunk header
    r"|\b(?:https?|ftp|file)://"
)
HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)
DIFF_HEADER_RE = re.compile(r"^(?:diff --git |--- \S|\+\+\+ \S)", re.M)


def is_diff_shaped(text: str) -> bool:
    return HUNK_RE.search(text) is not None or len(DIFF_HEADER_RE.findall(text, 0, 200_000)) >= 2


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
    return NEVER_TRUNCATE_RE.search(line) is not None


def cap_line(line: str, limit: int) -> str:
    head = line[: max(limit - 3, 1)]
    return f"{head}...[+{len(line) - len(head)} chars]"


class Linecap:
    name = "linecap"

    def __init__(self, settings: LinecapSettings) -> None:
        self.settings = settings

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        s = self.settings
        if len(text) < s.min_size:
            return Declined("below_min_size")
        if (gate := common_decline(text, ctx)) is not None:
            return gate
        if is_diff_shaped(text):
            return Declined("diff_shaped")
        if not s.cap_json_documents and is_json_document(text):
            return Declined("json_document")
        lines = text.split("\n")
        counts = self._duplicate_counts(lines, s.collapse_indented_duplicates) if s.collapse_duplicate_lines else {}
        limit = s.max_line_chars
        out: list[str] = []
        changed = False
        emitted: set[str] = set()
        middle = range(PROTECTED_EDGE_LINES, len(lines) - PROTECTED_EDGE_LINES)
        for idx, line in enumerate(lines):
            times = counts.get(line, 0) if idx in middle else 0
            if times:
                if line in emitted:
                    changed = True
                    continue
                emitted.add(line)
            shown = line
            if limit and len(line) > limit and not never_truncate(line):
                shown = cap_line(line, limit)
                changed = True
            if times:
                shown = f"{shown} (x{times})"
            out.append(shown)
        if not changed:
            return Declined("no_long_or_repeated_lines")
        hash_ = cg_hash(text)
        reduced = "\n".join(out)
        sep = "" if reduced.endswith("\n") else "\n"
        return never_worse(text, f"{reduced}{sep}{trailer(hash_)}", hash_)

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
        return {line: n for line, n in counts.items() if n > 1}
