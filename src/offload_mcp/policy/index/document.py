"""A document's outline (its markdown or HTML headings, each at its line number) and its distinct URLs (an
HTML page's: its links' targets): where an agent reads next and what it fetches next. Also the index of
any other text that holds three URLs or more."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat

from ..describe import text_kind
from ..textscan import TextScan
from .lines import matches, numbered
from .render import ALL_SHOWN, TEXT_ENTRY_CHARS, Found, clip, text_render

_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")
_URL_TRAIL = ".,;:!?*_\\"  # and the backslash of a JSON-escaped quote after a URL in JSON-lines text


def _links(scan: TextScan) -> Callable[[], Found] | None:
    """Distinct URLs of a page or document, in order: the links an agent fetches next (WebFetch, fetch, document readers).

    A text without a "/" has no URL: one memchr pass tells it, where the URL pattern's scan costs a share of
    a large offload's shaping (docs/design.md, "Document outlines"; `"://" in text` costs more than the regex).
    The distinct URLs are found once; each call of the returned function makes the index's entries afresh
    (a generator, read lazily), as a document's index may render them twice, on two budgets.
    """
    text = scan.text
    if "/" not in text:
        return None
    distinct = {u.rstrip(_URL_TRAIL) for u in _URL.findall(text)}
    distinct = {u for u in distinct if len(u) <= TEXT_ENTRY_CHARS}
    if len(distinct) < 3:
        return None

    return _each_once(
        "distinct URLs in the text",
        distinct,
        lambda: ((n, m.group(0).rstrip(_URL_TRAIL)) for n, m in matches(_URL, text)),
    )


def _each_once(what: str, distinct: set[str], located: Callable[[], Iterable[tuple[int, str]]]) -> Callable[[], Found]:
    """The index of the `distinct` values, each at the line where `located()` (read afresh on each call) first has it."""

    def entries() -> Iterator[tuple[int, tuple[str, ...]]]:
        seen: set[str] = set()
        for line, value in located():
            if value in distinct and value not in seen:
                seen.add(value)
                yield line, (value,)

    def found() -> Found:
        return (f"index of the {len(distinct):,} {what}, one line ", ("each",), entries(), len(distinct))

    return found


_ATX = re.compile(r"(#{1,6})(?:[ \t]+([^\n]*))?(?=\n|$)")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_UNDERLINE = re.compile(r"(?:={3,}|-{3,})[ \t]*(?=\n|$)")
_MIN_HEADINGS = 3
_MAX_MARKS = 20_000
"""More candidate lines than this and a text gets no outline: a real API reference has far fewer, and a
hostile text of `# a` lines would take seconds to list its "headings"."""
_HEADINGS_APART_SHARE = 0.6
"""A markdown document's headings stand apart (a blank line below, no `#` line above): 0.6 or more of them."""
_MARKDOWN_BLOCKS = ("- ", "* ", "+ ", "> ", "|", "<", "```", "~~~", "![", "1. ")
"""What may follow a heading line directly, besides a blank line."""
_NOT_SETEXT_TITLE = ("-", "*", "+", ">", "|", "#", "    ", "\t")
_ORDERED_ITEM = re.compile(r" {0,3}\d{1,9}[.)](?:[ \t]|$)")
_DOCUMENT_KINDS = ("markdown text", "prose / plain text")
_HEADING_SHORT = 48
_HEADING_TINY = 40
_ARGUMENTS = re.compile(r"(?<=[\w$])\((?:[^()]|\([^()]*\))*\)")
"""An API heading's argument list, `(fn[, options])`, right after its name."""
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
"""A markdown link: its text is the name."""
_LINKS_SHARE = 0.4
"""Of the index budget, what a document's URLs may take when it has headings too (they take less when
they need less, and the outline's leftover when it needs less)."""
_OUTLINE_HEAD_CHARS = 160
"""Room for the outline's head line when its depth is chosen."""
_OUTLINE_MIN_SHOWN = 10
_PROSE_HEAD_LINES = 200
"""Text describe calls prose is searched for heading marks only when one of these first lines is a
heading or an underline: the marks' searches read the whole text wherever `=` or `-` occur, a large share
of shaping a log of `key=value` lines."""

Heading = tuple[int, int, str]
"""(line number, level 1-6, title)."""


def _headings(scan: TextScan) -> list[Heading] | None:
    """A markdown document's headings, each at its line number: `#`-style and underlined (`===`, `---`),
    outside fenced code blocks (a shell example's `# install` is no heading) and front matter.

    Why: a long fetched page or read document is stubbed, and its headings are its table of contents: the
    section an agent wants is one `lines=` call away, and the API names in them are in view; its URLs alone
    are mostly links elsewhere.
    How: the lines that can matter are found by str.find of their first chars (a line break then `#`,
    `===` or `---`; a fence's backticks or tildes anywhere), far cheaper than a regex over every line
    start; then only those lines are read, in order. Headings indented by 1-3 blanks are not looked for.
    Which `#` lines: a document's headings stand apart (_stands_apart), a comment sits over the code it
    explains, so blocks of `# comments` and `#  define`s in source, config and data files are no outline
    (docs/design.md, "Document outlines").
    Inert (None) when describe judges the text other than markdown or prose, when it is prose none of
    whose first 200 lines is a heading or an underline (_PROSE_HEAD_LINES), when it has none of those
    marks (a log without `#`, `=` and `-`: three memchr passes) or over 20,000 of them, fewer than 3
    headings, fewer than 0.6 of them apart, or only `#` lines of one level in a text describe calls prose
    (a script's comments).
    """
    text = scan.text
    kind = text_kind(scan)
    if kind not in _DOCUMENT_KINDS:
        return None
    if kind != "markdown text" and not any(map(_heads_a_section, scan.head(_PROSE_HEAD_LINES))):
        return None  # prose whose first lines hold no heading: the whole text is not searched for marks
    events = _mark_events(text)
    if events is None:
        return None
    found, apart, underlined = _read_marks(text, events)
    if len(found) < _MIN_HEADINGS or apart < len(found) * _HEADINGS_APART_SHARE:
        return None
    if kind != "markdown text" and not underlined and all(level == 1 for _, level, _ in found):
        return None
    return found


_FENCE_MARK, _HASH_MARK, _UNDERLINE_MARK = 0, 1, 2
"""What sits at a mark's position: a fence's run, a `#` line's start, an underline's start."""


def _mark_events(text: str) -> list[tuple[int, int]] | None:
    """(position, what) of every fence, `#` line and underline after the front matter, in text order; None
    when there is no heading mark at all or more than _MAX_MARKS marks in all."""
    start = _front_matter_end(text)
    heading_marks = _positions(text, ("\n#", "\n===", "\n---"), start, _MAX_MARKS)
    if heading_marks is None:
        return None
    hashes, equals, dashes = heading_marks
    if not (hashes or equals or dashes or text.startswith("#", start)):
        return None  # no heading mark at all: the fences are not looked for
    fence_marks = _positions(text, ("```", "~~~"), start, _MAX_MARKS - len(hashes) - len(equals) - len(dashes))
    if fence_marks is None:
        return None
    backticks, tildes = fence_marks
    marks = [at + 1 for at in hashes]
    if text.startswith("#", start):
        marks.insert(0, start)
    underlines = [at + 1 for at in equals + dashes]
    return sorted(
        [
            *((at, _FENCE_MARK) for at in backticks + tildes),
            *((at, _HASH_MARK) for at in marks),
            *((at, _UNDERLINE_MARK) for at in underlines),
        ]
    )


def _read_marks(text: str, events: list[tuple[int, int]]) -> tuple[list[Heading], int, int]:
    """The headings at the marks outside fenced code, with how many of them stand apart and how many are
    underlined."""
    found: list[Heading] = []
    fence = ""
    apart = underlined = 0
    line, pos = 1, 0
    for at, what in events:
        line += text.count("\n", pos, at)
        pos = at
        if what == _FENCE_MARK:
            fence = _fence_after(text, at, fence)
        elif fence:
            continue
        elif what == _HASH_MARK:
            m = _ATX.match(text, at)
            if m is None:
                continue
            title = (m.group(2) or "").strip().rstrip("#").rstrip()
            if title:
                found.append((line, len(m.group(1)), title))
                apart += _stands_apart(text, at, m.end())
        elif _UNDERLINE.match(text, at) is not None:
            title = _setext_title(text, at)
            if title is not None and not (found and found[-1][0] >= line - 1):
                found.append((line - 1, 1 if text[at] == "=" else 2, title))
                apart += 1
                underlined += 1
    return found, apart, underlined


def _fence_after(text: str, at: int, fence: str) -> str:
    """The open fence's run (```` ``` ```` or `~~~`, "" outside code) once the fence mark at `at` is read:
    a mark that opens its line opens a fence, or closes the open one of its kind; backticks inside a line,
    or a fence's closing run read again, change nothing."""
    begin = text.rfind("\n", 0, at) + 1
    m = _FENCE.match(text, begin)
    if m is None or m.end() != at + 3:
        return fence
    if not fence:
        return m.group(1)
    return "" if m.group(1) == fence else fence


def _heads_a_section(line: str) -> bool:
    """A `#` heading line or an underline (`===`, `---`), as the marks search finds them."""
    return _ATX.match(line) is not None or _UNDERLINE.match(line) is not None


def _stands_apart(text: str, start: int, end: int) -> bool:
    """Whether the `#` line from `start` to `end` has a blank line (or the text's end, or a list, quote,
    table, image or fence) below it and no `#` line above it, as a heading has and the lines of a block of
    `# comments` or `#  define`s have not (a comment is followed by the code it explains)."""
    above = text.rfind("\n", 0, start - 1) + 1 if start else 0
    if start and text.startswith("#", above):
        return False
    below = text.find("\n", end + 1)
    line = text[end + 1 : below if below >= 0 else None]
    return not line.strip() or line.startswith(_MARKDOWN_BLOCKS)


def _positions(text: str, marks: tuple[str, ...], start: int, room: int) -> list[list[int]] | None:
    """The positions of each of `marks` from `start`, or None past `room` of them in all: tens of thousands
    of `#` lines or fences make no table of contents, and are not read one by one."""
    found: list[list[int]] = []
    for mark in marks:
        found.append(list(islice(_finds(text, mark, start), room + 1)))
        room -= len(found[-1])
        if room < 0:
            return None
    return found


def _finds(text: str, mark: str, start: int) -> Iterator[int]:
    """Every position of `mark` in `text` from `start`, by str.find. A text without the mark's last char
    is told by one memchr pass, many times cheaper than the find of a 2-4 char mark."""
    if mark[-1] not in text:
        return
    at = text.find(mark, start)
    while at >= 0:
        yield at
        at = text.find(mark, at + len(mark))


def _front_matter_end(text: str) -> int:
    """Where the text starts after YAML front matter (`---` lines around its first lines), else 0."""
    if not text.startswith("---\n"):
        return 0
    end = text.find("\n---", 3)
    if end < 0:
        return 0
    after = text.find("\n", end + 4)
    return len(text) if after < 0 else after


def _setext_title(text: str, underline: int) -> str | None:
    """The line above an `===`/`---` line at `underline` when it can be a setext heading's title."""
    if underline == 0:
        return None
    start = text.rfind("\n", 0, underline - 1) + 1
    title = text[start : underline - 1]
    if not title.strip() or title.startswith(_NOT_SETEXT_TITLE) or _ORDERED_ITEM.match(title):
        return None
    return title.strip()


_HTML_KIND = "HTML/XML"
_HTML_HEADING = re.compile(r"<h([1-6])(?:\s[^<>]{0,2000})?>(.{0,1000}?)</h\1\s*>", re.I | re.S)
_MAX_LINKS = 100_000
"""More `<a` marks than this (a 1 MB page of links has ~10,000) and the page's links are not listed one by one."""
_HTML_A_TAG = re.compile(r"<a\s[^<>]{0,2000}>", re.I)
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_TAG = re.compile(r"<[^<>]*>")
_ANCHOR_GLYPHS = " \t\n¶§🔗"
"""What a heading's permalink shows beside its title (Sphinx's ¶, rustdoc's §); not `#`, which ends `C#`."""


def _html_headings(scan: TextScan) -> list[Heading] | None:
    """An HTML page's headings (`<h1>`-`<h6>`, their text without tags or entities), each at its line number.

    Why: a long fetched or read HTML page is stubbed, and the absolute URLs anywhere in it (an SVG
    namespace, a font's licence) and its first lines (the `<head>`) name none of its sections. Its headings
    are its table of contents, as a markdown document's are. How: each `<h`/`<H` is found by str.find and the heading read from there,
    its attributes and text bounded (a stray `<h1` costs a bounded read). Inert (None) when describe
    judges the text other than HTML/XML (a page that starts with `<!DOCTYPE`, `<html` or `<?xml`: only
    document_index's question, asked once), over 20,000 `<h` marks, or fewer than 3 headings with text.
    """
    text = scan.text
    starts = _tag_starts(text, "h", _MAX_MARKS)
    if starts is None:
        return None

    def headings() -> Iterator[re.Match[str]]:
        end = 0
        for at in starts:
            if at >= end and (m := _HTML_HEADING.match(text, at)) is not None:
                end = m.end()  # a `<h` inside this heading is not read again
                yield m

    found: list[Heading] = []
    for line, m in numbered(headings(), text):
        title = " ".join(html.unescape(_TAG.sub("", m.group(2))).split()).strip(_ANCHOR_GLYPHS)
        if title:
            found.append((line, int(m.group(1)), title))
    return found if len(found) >= _MIN_HEADINGS else None


def _tag_starts(text: str, name: str, room: int) -> list[int] | None:
    """Where `<name` starts in `text`, in either case of its first letter, in order; None past `room` of them."""
    found = _positions(text, ("<" + name, "<" + name.upper()), 0, room)
    return None if found is None else sorted(found[0] + found[1])


def _html_links(scan: TextScan) -> Callable[[], Found] | None:
    """An HTML page's distinct link targets (`<a href>`, relative ones as written), in order: where an agent
    goes next from the page. Not the page's assets (`<link>`, `<script src>`) nor its in-page anchors (`#x`).
    Asked of an HTML/XML text only (document_index); None past 100,000 `<a` marks or under 3 such targets."""
    text = scan.text
    anchors = _tag_starts(text, "a", _MAX_LINKS)
    if anchors is None:
        return None
    targets: list[tuple[int, str]] = []
    tags = (m for m in map(_HTML_A_TAG.match, repeat(text), anchors) if m is not None)
    for line, tag in numbered(tags, text):
        m = _HREF.search(tag.group(0))
        if m is None:
            continue
        target = m.group(1) if m.group(1) is not None else m.group(2)
        if "&" in target:
            target = html.unescape(target)
        target = target.strip()
        if target and not target.startswith(("#", "javascript:")) and len(target) <= TEXT_ENTRY_CHARS:
            targets.append((line, target))
    distinct = {target for _, target in targets}
    if len(distinct) < 3:
        return None
    return _each_once("distinct link targets in the page", distinct, lambda: targets)


def document_index(scan: TextScan, budget: int, trm_id: str) -> str:
    """A document's outline (its headings) and its distinct URLs, sharing the budget; either alone when the
    other is missing. The URLs are what an agent fetches next, the outline where it reads next. An HTML
    page's outline is its `<h1>`-`<h6>` and its URLs its links' targets (the absolute URLs anywhere in it
    when it has no links)."""
    html_page = text_kind(scan) == _HTML_KIND
    headings = _html_headings(scan) if html_page else _headings(scan)
    links = (_html_links(scan) if html_page else None) or _links(scan)
    if headings is None:
        return "" if links is None else text_render(*links(), budget=budget, trm_id=trm_id)
    if links is None:
        return _outline(headings, scan, budget, trm_id)
    urls = text_render(*links(), budget=int(budget * _LINKS_SHARE), trm_id=trm_id)
    if ALL_SHOWN in urls.split("\n", 1)[0]:
        outline = _outline(headings, scan, budget - len(urls) - 1, trm_id)
    else:  # not every URL fit its share: they take the outline's leftover, its first headings not enriched
        outline = _outline(headings, scan, budget - len(urls) - 1, trm_id, enrich=False)
        urls = text_render(*links(), budget=budget - len(outline) - 1, trm_id=trm_id)
    return "\n".join(part for part in (outline, urls) if part)


def _outline(headings: list[Heading], scan: TextScan, budget: int, trm_id: str, *, enrich: bool = True) -> str:
    """The headings down to the deepest level at which all of them fit `budget` by line and name (the most
    compact of three forms: the heading, shortened, its name alone). When that leaves fewer than 10 (a
    title over 400 sections), or not even the top level fits, the first headings of the next level down
    and the call that pages the rest. Why the name: an API reference's deep headings fit by name where
    their full titles do not, and the API an agent came for often sits in a deeper level.
    `enrich`: False leaves the room the names spare to the URLs sharing the budget (document_index)."""
    total = len(headings)
    lines = scan.line_count()
    least_at = [0] * 7  # what each level's entries take at the least: a line number and a one-char name
    for line, level, _ in headings:
        least_at[level] += len(str(line)) + 5
    depth = max(level for _, level, _ in headings)
    while depth > 1 and sum(least_at[: depth + 1]) + _OUTLINE_HEAD_CHARS > budget:
        depth -= 1  # names are made only for the levels that may fit: making them all is costly
    size_at = [0] * 7
    for line, level, title in headings:
        if level <= depth:
            size_at[level] += len(_named(line, title)) + 3
    while depth > 1 and sum(size_at[: depth + 1]) + _OUTLINE_HEAD_CHARS > budget:
        depth -= 1
    if sum(1 for _, level, _ in headings if level <= depth) < _OUTLINE_MIN_SHOWN and depth < 6 and least_at[depth + 1]:
        depth += 1  # a title alone says nothing: the next level's first headings, then the call that pages on
    shown = [h for h in headings if h[1] <= depth]
    head = (
        f"index of the {len(shown):,} heading{'' if len(shown) == 1 else 's'} of level"
        f"{' 1' if depth == 1 else f's 1-{depth}'} of {total:,} in {lines:,} lines "
        f"(read a section with lines=), one line each, at its line number: "
        if len(shown) < total
        else f"index of the {total:,} headings in {lines:,} lines, one line each, at its line number: "
    )
    entries = (
        (line, (f"{line}: {'#' * level} {clip(title, 100)}", _shortened(line, level, title), _named(line, title)))
        for line, level, title in shown
    )
    whats = ("heading", "heading (shortened)", "name (the heading without its marks, arguments and markup)")
    return text_render(head, whats, entries, len(shown), budget=budget, trm_id=trm_id, enrich=enrich)


def _shortened(line: int, level: int, title: str) -> str:
    return f"{line} {'#' * level} {clip(title, _HEADING_SHORT)}"


def _named(line: int, title: str) -> str:
    return f"{line} {clip(_name_of(title), _HEADING_TINY)}"


def _name_of(title: str) -> str:
    """A heading as short as it names what its section is about: `` `stream.pipeline(source[, ...])` ``
    -> `stream.pipeline`, ``Class: `stream.Readable` `` -> `Class: stream.Readable`, `[Overview](url)`
    -> `Overview`; the title itself when nothing would be left."""
    name = _ARGUMENTS.sub("", _LINK.sub(r"\1", title).replace("`", ""))
    return " ".join(name.split()) or title
