"""extract: strip what is unambiguously terminal noise, stash the original.

How it works: on one pass over the lines it removes ANSI escape sequences,
carriage-return progress churn (a line rewritten in place keeps its final
state), progress-bar and spinner lines (a run of them keeps its last line),
runs of blank lines (to one), and a line or block of up to `max_block_lines`
lines repeated consecutively (to one copy). The original is stashed behind one
`<<cg:HASH>>` marker with `[full output: call context_guru_expand]`; the result
is committed only if it is smaller, marker included. A note line before the
trailer says what went (`[extract dropped 14 repeated lines, 2 blank lines]`):
a count of repeated warnings is a fact, and the model must know it lacks it.
A JSON document keeps its consecutive equal lines: in a pretty-printed array
they are values (`0,` five times), not noise; nor is any of its lines a
progress line (a bar in a string is part of that member's line).
Deliberately conservative: it never touches a line that is not one of those
shapes, so it cannot hide content the agent needs.
When it shines: build/install logs, package managers, repeated warnings.
When it is inert: short outputs (`below_min_size`), nothing noisy
(`no_obvious_noise`), a saving smaller than the marker (`marker_no_win`).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
import sys
from collections import Counter
from dataclasses import replace

from .base import Declined, FloorTerms, Outcome, ReduceContext, cg_hash, common_decline, never_worse, trailer
from .settings import ExtractSettings

ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
)
_BAR_GLYPHS = "█▉▊▋▌▍▎▏▓▒░■□━─╸╺=#>"
BAR_RE = re.compile(r"\[[#=>\-. ]{5,}\]|[█▉▊▋▌▍▎▏▓▒░■━╸╺]{5,}|\d%\|[█▉▊▋▌▍▎▏#0-9 ]*\|")  # bracket, glyph run, tqdm
PERCENT_RE = re.compile(r"\b\d{1,3}(?:\.\d+)?\s?%")
SPINNER_RE = re.compile(r"^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⣾⣽⣻⢿⡿⣟⣯⣷]\s")
# Whole-text pre-checks, a superset of SPINNER_RE and BAR_RE split so that each pattern starts with
# a literal or a class the engine can scan for (BAR_RE's alternation is tried at every position).
_SPINNER_GLYPH_RE = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⣾⣽⣻⢿⡿⣟⣯⣷]")
_BRACKET_BAR_RE = re.compile(r"\[[#=>\-. ]{5,}\]")
_GLYPH_BAR_RE = re.compile(r"[█▉▊▋▌▍▎▏▓▒░■━╸╺]{5,}")
# Only braille spinner frames: circle glyphs (◐) double as status icons in task lists on the corpus.
# tqdm / pip / curl style lines: a bar plus a percentage or a rate; nothing else on the line
# that could be content (a pytest line "tests/x.py ..F.  [ 45%]" has no bar and is kept).


_PROGRESS_LINE_MAX_CHARS = 1024
"""A terminal's progress line is short (tqdm's ~100-300 chars): a longer line is content, never dropped."""


def is_progress_line(line: str) -> bool:
    if len(line) > _PROGRESS_LINE_MAX_CHARS:
        return False
    if SPINNER_RE.match(line):
        return True
    if BAR_RE.search(line):
        return bool(PERCENT_RE.search(line)) or sum(line.count(g) for g in _BAR_GLYPHS) * 2 >= len(line.strip())
    return False


_NOISE_GLYPHS = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⣾⣽⣻⢿⡿⣟⣯⣷█▉▊▋▌▍▎▏▓▒░■━╸╺"
_NOISE_GLYPH_RE = re.compile(f"[{_NOISE_GLYPHS}]")
_WIDTH_PROBE_CHARS = 1024
"""Below this a str's object header outweighs its chars in sys.getsizeof: the `in` tests are cheap anyway."""


def may_have_noise_lines(text: str) -> bool:
    """False when no line can be a progress or spinner line: one scan of the whole text.

    `glyph in text` first: on a text with no such glyph (any ASCII text) CPython
    answers without scanning, where the character-class regex walks the whole text;
    the regexes then only confirm.
    A JSON document has none: its lines are members and values, and a bar inside a
    string is part of that one line (a listing that embeds a README with a progress
    bar would otherwise have every line read to remove nothing; docs/design.md,
    "Reducers").
    """
    if is_json_document_shaped(text):
        return False
    return any(pattern.search(text) is not None for pattern in _mark_patterns(text))


_TQDM_MARK_RE = re.compile(r"%\|")


def _mark_patterns(text: str) -> list[re.Pattern[str]]:
    """The patterns of a progress or spinner line's mark (a bracket bar, tqdm's `%|`, a spinner glyph, a
    glyph run) that can match in `text`: each is ruled out first by a char it needs, told by a memchr
    pass (`"%" in text`, far cheaper than the substring search `"%|" in text`) or _has_noise_glyph."""
    patterns = []
    if "[" in text:
        patterns.append(_BRACKET_BAR_RE)
    if "%" in text:
        patterns.append(_TQDM_MARK_RE)
    if _has_noise_glyph(text):
        patterns += [_SPINNER_GLYPH_RE, _GLYPH_BAR_RE]
    return patterns


def _has_noise_glyph(text: str) -> bool:
    """Some glyph of _NOISE_GLYPHS is in `text`. As 34 `in` tests: each O(1) on a str of one-byte chars
    (every glyph is wider than its widest), a memchr on two-byte chars; on four-byte chars (an emoji or a
    math letter anywhere) each is a plain loop, slower in all than one pass of a character class, which
    is used there instead. CPython stores a str at the width of its widest char, and sys.getsizeof tells
    which (docs/design.md, "Reducers")."""
    if sys.getsizeof(text) > 3 * len(text) > 3 * _WIDTH_PROBE_CHARS:
        return _NOISE_GLYPH_RE.search(text) is not None
    return any(glyph in text for glyph in _NOISE_GLYPHS)


def has_terminal_noise(text: str) -> bool:
    """True when extract could remove something other than repeated or blank lines."""
    return "\x1b" in text or "\r" in text or (not is_json_document_shaped(text) and _progress_run(text))


_MARKS_READ = 200
"""Marks of a bar or spinner that _progress_run reads line by line; past them the text is taken as noisy."""


def _progress_run(text: str) -> bool:
    """Whether some line is a progress line and so is the next: what clean() drops (a run keeps its last line).

    may_have_noise_lines answers for the whole text from a mark anywhere, and its marks occur in content
    too: `z.tuple([ ... ])` in zod's types.ts, `x: t [= ...]` in mypy's nodes.py, `%|` in a 2.5 MB JS
    bundle. Its yes kept a large result from being offloaded before its reducers ran, all to remove
    nothing (docs/design.md, "Reducers"). Here only the lines holding a mark are
    read, each once, with the line after it. The marks are may_have_noise_lines' own (_mark_patterns), so a
    text it rules out has none to read.
    """
    marks = 0
    for pattern in _mark_patterns(text):
        read_to = -1
        for m in pattern.finditer(text):
            if m.start() < read_to:
                continue  # on a line already read
            marks += 1
            if marks > _MARKS_READ:
                return True
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.start())
            if end < 0:
                break  # the last line: no line after it
            after = text.find("\n", end + 1)
            after = len(text) if after < 0 else after
            read_to = end
            if max(end - start, after - end - 1) > _PROGRESS_LINE_MAX_CHARS:
                continue  # not a progress line (is_progress_line), and not copied to be told so
            if is_progress_line(text[start:end]) and is_progress_line(text[end + 1 : after]):
                return True
    return False


def cleaned_lines(chunk: str) -> list[str]:
    """`chunk`'s lines as clean() rewrites each one: ANSI escapes stripped, carriage-return churn resolved.

    For whole lines of a text without OSC sequences (`\x1b]`, which may hold a line break): CSI and
    two-byte escapes never do, so these are the whole text's lines after clean()'s first two steps.
    Pipeline.floor_chars bounds a noisy text by them, a piece at a time."""
    if "\x1b" in chunk:
        chunk = ANSI_RE.sub("", chunk)
    lines = chunk.split("\n")
    if "\r" in chunk:
        lines = [_resolve_carriage_returns(line) for line in lines]
    return lines


def without_progress_lines(lines: list[str]) -> list[str]:
    """`lines` less every progress line: what clean() keeps at least (it drops those followed by another).
    Only a line holding a bar or spinner mark is judged, found as _progress_run finds them (each mark's
    pattern over the joined lines; a mark never spans a line break): a diff's many `[` lines are not."""
    text = "\n".join(lines)
    marked = [match.start() for pattern in _mark_patterns(text) for match in pattern.finditer(text)]
    if not marked:
        return lines
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    candidates = {bisect.bisect_right(starts, at) - 1 for at in marked}
    progress = {i for i in candidates if is_progress_line(lines[i])}
    return [line for i, line in enumerate(lines) if i not in progress] if progress else lines


def _resolve_carriage_returns(line: str) -> str:
    """A line rewritten in place with \\r shows its last non-empty state; CRLF endings are kept."""
    end = ""
    if line.endswith("\r"):
        body = line.rstrip("\r")
        end = line[len(body) :]
        line = body
    if "\r" not in line:
        return line + end
    states = [s for s in line.split("\r") if s.strip()]
    return (states[-1] if states else "") + end


def _next_same(lines: list[str]) -> list[int]:
    """For each line, the index of its next identical line (len(lines) when none)."""
    n = len(lines)
    nxt = [n] * n
    last: dict[str, int] = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = last.get(lines[i], n)
        last[lines[i]] = i
    return nxt


def _may_repeat(lines: list[str], max_block: int) -> bool:
    """False when no block of <= max_block lines can repeat back to back.

    A block of `size` lines repeats at i only if lines[i] == lines[i + size]:
    one C-level comparison pass per size rules that out for most outputs,
    far cheaper than the scan below.
    """
    return any(any(map(operator.eq, lines, lines[size:])) for size in range(1, max_block + 1))


def _collapse_repeats(lines: list[str], max_block: int) -> list[str]:
    """One copy of a line or block (<= max_block lines) repeated back to back."""
    if not _may_repeat(lines, max_block):
        return lines
    out: list[str] = []
    i, n = 0, len(lines)
    # A block of `size` lines can only repeat at i if lines[i + size] == lines[i], so the
    # candidate sizes, ascending, are the distances along the chain of identical lines:
    # the same sizes the plain 1..max_block scan accepts, without testing the others.
    next_same = _next_same(lines)
    while i < n:
        collapsed = False
        limit = min(max_block, (n - i) // 2)
        candidate = next_same[i]
        while candidate - i <= limit:
            size = candidate - i
            candidate = next_same[candidate]
            block = lines[i : i + size]
            if lines[i + size : i + 2 * size] != block:
                continue
            if not any(line.strip() for line in block):
                continue  # blank runs are handled separately
            if size == 1 and (len(block[0].strip()) < 2 or block[0][:1].isspace()):
                # a repeated lone brace or indented statement is code, not noise (seen in corpus
                # source reads); repeated multi-line blocks (recursion tracebacks) still collapse
                continue
            j = i + 2 * size
            while lines[j : j + size] == block:
                j += size
            out.extend(block)
            i = j
            collapsed = True
            break
        if not collapsed:
            out.append(lines[i])
            i += 1
    return out


def clean(text: str, max_block_lines: int, removed: Counter[str] | None = None) -> str:
    """The noise-free text (no marker): a pure function of the text. `removed` counts what went, by kind."""
    tally: Counter[str] = removed if removed is not None else Counter()
    if "\x1b" in text:
        stripped = ANSI_RE.sub("", text)
        if stripped != text:
            tally["ANSI escapes"] += 1
        text = stripped
    lines = text.split("\n")
    if "\r" in text:
        resolved = [_resolve_carriage_returns(line) for line in lines]
        tally["lines rewritten in place (last state kept)"] += sum(a != b for a, b in zip(lines, resolved, strict=True))
        lines = resolved
    # One scan of the whole text rules out progress lines for most outputs; testing each
    # line with two regexes was the larger half of extract's time on a 1 MB log.
    may_have_progress = may_have_noise_lines(text)
    kept: list[str] = []
    blank_run = False
    for idx, line in enumerate(lines):
        if may_have_progress and is_progress_line(line):
            nxt = lines[idx + 1] if idx + 1 < len(lines) else None
            if nxt is not None and is_progress_line(nxt):
                tally["progress lines"] += 1
                continue  # a run of progress lines keeps its final state
        if not line.strip():
            if blank_run:
                tally["blank lines"] += 1
                continue
            blank_run = True
        else:
            blank_run = False
        kept.append(line)
    if not is_json_document_shaped(text):
        before = len(kept)
        kept = _collapse_repeats(kept, max_block_lines)
        tally["repeated lines"] += before - len(kept)
    return "\n".join(kept)


_ENDS_CHARS = 4096


def is_json_document_shaped(text: str) -> bool:
    """Starts with `{`/`[` and ends with `}`/`]`: consecutive equal lines there are values (`0,` x 5), not noise.
    Read at its ends, not stripped whole (a copy of the text when it ends in a line break)."""
    head, tail = text[:_ENDS_CHARS].lstrip(), text[-_ENDS_CHARS:].rstrip()
    if not head or not tail:  # blanks at least as long as a window: read the whole text
        head = tail = text.strip()
    return head[:1] in ("{", "[") and tail[-1:] in ("}", "]")


def removal_note(removed: Counter[str]) -> str:
    """`[extract dropped 14 repeated lines, 2 blank lines]`: what went, so the model knows what expand brings back."""
    parts = [f"{n} {kind}" if kind != "ANSI escapes" else kind for kind, n in removed.items() if n]
    return f"[extract dropped {', '.join(parts)}]"


class Extract:
    name = "extract"
    shows_every_value = True
    """It removes terminal noise only: every value stays in the model's context."""

    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings

    def reduce(self, text: str, ctx: ReduceContext) -> Outcome:
        if len(text) < self.settings.min_chars:
            return Declined("below_min_size")
        if (gate := common_decline(text, ctx)) is not None:
            return gate
        removed: Counter[str] = Counter()
        cleaned = clean(text, self.settings.max_block_lines, removed)
        if cleaned == text:
            return Declined("no_obvious_noise")
        hash_ = cg_hash(text)
        sep = "" if cleaned.endswith("\n") else "\n"
        return never_worse(text, f"{cleaned}{sep}{removal_note(removed)}\n{trailer(hash_)}", hash_)

    def floor(self, text: str, ctx: ReduceContext, terms: FloorTerms) -> FloorTerms | None:
        """It removes repeated lines and blank runs, so every distinct line survives once; on a noisy text
        (ANSI, `\r`, progress glyphs) as cleaned_lines rewrites it, less its progress lines. An OSC escape
        may hold a line break: no floor."""
        if not has_terminal_noise(text):
            return terms
        if "\x1b]" in text:
            return None
        return replace(terms, clean_lines=cleaned_lines, drop_lines=without_progress_lines)
