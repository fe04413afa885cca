"""A page snapshot's table rows, each read from the lines under it: its cells' text and the refs to act on.

Playwright MCP writes a table row as `- row [ref=e19]:` with no name of its own: what tells one row from
the next (a SKU, an order number) is in its cells, and what an agent clicks next (the row's link, its
`Add to cart` button) is a ref a few lines down. Listed by that row line alone, a row is a bare ref; listed
by its links alone, the row's buttons are lost. So each row is one record: its cells' text and the role
and ref of every link and control in it, at three levels (render.py picks the richest that fits), the
most compact being the row's identifying cell and the refs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .render import clip

_ROW = re.compile(r'^([ \t]*)- row(?: "((?:[^"\\\n]|\\.)*)")?(?: \[[^\]\n]*\])*? \[ref=([A-Za-z0-9]+)\]', re.M)
_CHILD = re.compile(r'^- ([a-z]+)(?: "((?:[^"\\]|\\.)*)")?((?: \[[^\]]*\])*)(?::(?: (.*))?)?$')
_REF = re.compile(r"\[ref=([A-Za-z0-9]+)\]")
_CELL_ROLES = frozenset({"cell", "gridcell", "rowheader", "columnheader"})
_CELLS_RICH = 100
_CELLS_SHORT = 40
_KEY_CHARS = 40


@dataclass(frozen=True)
class Row:
    line: int
    ref: str
    name: str
    """The row's own name when the browser gave it one, else ''."""
    texts: tuple[str, ...]
    controls: tuple[tuple[str, str], ...]
    """(role, ref) of each link and control in the row, in page order."""

    def key(self) -> str:
        """The cell that tells this row from the others, among its first three texts: one word holding a digit
        (a SKU, an order number, a date) before a display name that holds one (`Hex bolt M8`), else the
        first text holding a digit, else its first text."""
        first = self.texts[:3]
        digits = [t for t in first if any(c.isdigit() for c in t)]
        keyed = next((t for t in digits if " " not in t), digits[0] if digits else first[0] if first else "")
        return clip(keyed, _KEY_CHARS)

    def levels(self) -> tuple[str, str, str]:
        refs = " ".join(ref for _, ref in self.controls)
        if self.name:
            named = f"{self.ref} {clip(self.name, 80)}"
            return (named + (f" ({refs})" if refs else ""),) * 2 + (f"{self.ref} {clip(self.name, 24)}",)
        cells = " | ".join(self.texts)
        refs = refs or self.ref  # a row with nothing to click in it is acted on by its own ref
        acts = ", ".join(f"{role} {ref}" for role, ref in self.controls) or f"row {self.ref}"
        return (
            f"{clip(cells, _CELLS_RICH)} ({acts})",
            f"{clip(cells, _CELLS_SHORT)} {refs}",
            f"{self.key()} {refs}",
        )


def table_rows(text: str, control_roles: frozenset[str]) -> list[Row]:
    """Every row of the snapshot with something in it (a cell's text, a link or a control), in page order."""
    rows: list[Row] = []
    line, pos = 1, 0
    for m in _ROW.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        texts, controls = _read_children(text, m.end(), len(m.group(1)), control_roles)
        if m.group(2) or texts or controls:
            rows.append(Row(line, m.group(3), m.group(2) or "", texts, controls))
    return rows


def _read_children(
    text: str, start: int, indent: int, control_roles: frozenset[str]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    texts: list[str] = []
    controls: list[tuple[str, str]] = []
    for child in _lines_below(text, start, indent):
        m = _CHILD.match(_unquote(child))
        if m is None:
            continue
        role, name, attributes, value = m.groups()
        ref = _REF.search(attributes or "")
        if ref is not None and (role == "link" or role in control_roles):
            controls.append((role, ref.group(1)))
            if role != "link":
                continue  # a button's name repeats on every row ("Add to cart"); its ref is what differs
        for said in (name, _unquote(value or "")):
            if said and role != "row" and (not texts or texts[-1] != said):
                texts.append(said)
    return tuple(texts), tuple(controls)


def _lines_below(text: str, start: int, indent: int) -> Iterator[str]:
    """The lines after `start` indented deeper than `indent`, stripped, up to the first one that is not."""
    end = text.find("\n", start)
    while end >= 0:
        nxt = text.find("\n", end + 1)
        line = text[end + 1 : nxt if nxt >= 0 else len(text)]
        stripped = line.lstrip(" \t")
        if len(line) - len(stripped) <= indent or not stripped:
            return
        yield stripped
        end = nxt


def _unquote(s: str) -> str:
    """A YAML-quoted line or value (`- 'cell "12:30" [ref=e5]'`, `"2441"`) as written inside its quotes."""
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    if s.startswith("- '") and s.endswith("'"):
        return "- " + s[3:-1]
    return s
