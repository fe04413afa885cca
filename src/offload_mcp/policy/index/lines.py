"""Lines of a large text read by str.find and str.count, each with its 1-based line number, lazily:
a finder that stops early never splits the rest of a 4 MB body."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator


def iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) lazily: a caller that stops early never splits the rest."""
    start, n = 0, 1
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield n, text[start:]
            return
        yield n, text[start:end]
        start, n = end + 1, n + 1


def matches(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each match with its 1-based line number, counting newlines incrementally."""
    return numbered(pattern.finditer(text), text)


def numbered(matches: Iterable[re.Match[str]], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Matches of `text`, in order, each with its 1-based line number."""
    line, pos = 1, 0
    for m in matches:
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield line, m


def lines_holding(text: str, words: tuple[str, ...]) -> list[int]:
    """The start of every line holding one of `words`, in order, by str.find (far cheaper than a regex
    alternation). After a hit the search goes on from the next line: a line is found once per word, so
    many hits on one long line cost one pass, where a backward scan per hit was quadratic.

    A word with a letter the text lacks is not looked for: a one-char `in` is a memchr pass, many times
    cheaper than a word's find, so a log of lower-case words skips the finds of capitalised ones. Each
    letter is looked for once, in the word's order (capitals first): the E of ERROR answers for
    Exception. The figures are in docs/design.md ("The identifier index").
    """
    present: dict[str, bool] = {}
    starts: set[int] = set()
    for word in words:
        if not all(_has(text, letter, present) for letter in word):
            continue
        pos = text.find(word)
        while pos >= 0:
            starts.add(text.rfind("\n", 0, pos) + 1)
            end = text.find("\n", pos)
            if end < 0:
                break
            pos = text.find(word, end + 1)
    return sorted(starts)


def _has(text: str, letter: str, present: dict[str, bool]) -> bool:
    found = present.get(letter)
    if found is None:
        found = present[letter] = letter in text
    return found


def lines_at(text: str, starts: list[int], limit: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of each line that begins at one of `starts` (sorted), counting line breaks
    only between one start and the next; with `limit`, only a line's first `limit` chars are read."""
    line, pos = 1, 0
    for start in starts:
        line += text.count("\n", pos, start)
        pos = start
        stop = len(text) if limit is None else min(len(text), start + limit)
        end = text.find("\n", start, stop)
        yield line, text[start : stop if end < 0 else end]
