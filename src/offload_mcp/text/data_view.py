"""The data document a text holds, and where it sits in it.

Servers hand the same rows over in many wrappings: a whole JSON document; a JSON string literal whose
value is the document (once, twice: `"[{\\"id\\": 1}]"`); an object whose fields hold JSON-encoded text
(`{"type": "text", "text": "<a JSON document>"}`, server-filesystem's `{content: "<the file>"}`); a
Python literal from `str()` (`[{'part_num': '3001', ...}]`); a line or a few of prose and envelope tags
around the body (`Below is the result of the SQL query ... <untrusted-data-ID> [...] </untrusted-data-ID>`,
a listing's one-line header over pretty-printed JSON). Describing, indexing, capping and `json_path` all
read the document through `find_data`, so they agree on what the data is and where it sits.

Bounded: a Python literal is read only up to PYTHON_MAX_CHARS (reading one costs time in proportion to
its size, docs/design.md "Data views", and Python 3.11's parser refuses nesting over 200 levels with a SyntaxError, caught here), a JSON string is
unwrapped at most MAX_STRING_DEPTH times, an envelope's prose may take at most ENVELOPE_MAX_LINES lines
and ENVELOPE_MAX_CHARS chars on each side, and only the shell of a document (objects, and arrays of at
most SHELL_MAX_ITEMS items, down to SHELL_MAX_DEPTH levels, 2,000 values) has its string fields decoded: the
rows of a 50,000-row array are not each tried. Pure: the same text gives the same view.
"""

from __future__ import annotations

import ast
import datetime
import decimal
import functools
import ipaddress
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from .jsonpath_keys import key_segment
from .key_value_blocks import key_value_records
from .rows import holds_rows

Syntax = Literal["JSON", "Python literal", "key: value blocks"]
KEY_VALUE_BLOCKS: Syntax = "key: value blocks"

MAX_STRING_DEPTH = 3
"""How many JSON string literals may wrap the document (a result double-encoded by two layers is seen)."""
PYTHON_MAX_CHARS = 1_000_000
ENVELOPE_MAX_LINES = 12
ENVELOPE_MAX_CHARS = 2_000
SHELL_MAX_DEPTH = 4
SHELL_MAX_ITEMS = 8
SHELL_MAX_VALUES = 2_000
"""Values of a shell looked at, in document order: a map of 100,000 records is no shell to search."""
FIELD_MIN_CHARS = 2
_ENVELOPE_MAX_BODY_CHARS = 64_000_000
"""A body inside prose is found by a scan from its first char (json's raw_decode): bounded as a whole text is."""

_ENVELOPE_MIN_BODY_CHARS = 64
"""A body shorter than the prose around it is data only from this size (a `[1]` in prose is not)."""
_SMALL_ENVELOPE_CHARS = 640
"""Prose around a small body (a 3-row SQL result under its envelope's two notes) is an envelope up to this."""
_PY_START = ("[{'", "{'", "[('", "[(", "[['", "[[", "({'", "('")
_JSON_START = ("{", "[")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class DataView:
    """A text's data document: its decoded `value`, the `syntax` it was written in, the chars
    `text[start:end]` it was read from, how many JSON string literals wrapped it (`string_depth`), and
    the JSONPaths of string fields whose JSON text was decoded in place (`decoded_fields`). `inner` is the
    innermost text the body sits in (the text itself, or the value of the JSON string that wrapped it),
    the body being `inner[inner_start:inner_end]`: a reducer rewrites the body and keeps the prose around it."""

    value: Any
    syntax: Syntax
    start: int
    end: int
    string_depth: int = 0
    decoded_fields: tuple[str, ...] = ()
    prose_around: bool = False
    inner: str = ""
    inner_start: int = 0
    inner_end: int = 0
    prose_fields: tuple[str, ...] = ()
    """Decoded fields whose document sat between lines of prose: the decoded value leaves that prose out."""

    def unwrapped(self, start: int, end: int, *, prose_around: bool) -> DataView:
        """This view of an inner text, seen from the text whose `[start:end]` is the JSON string holding it."""
        return DataView(
            self.value,
            self.syntax,
            start,
            end,
            self.string_depth,
            self.decoded_fields,
            self.prose_around or prose_around,
            self.inner,
            self.inner_start,
            self.inner_end,
            self.prose_fields,
        )

    @property
    def decoded(self) -> bool:
        """Whether the value is more than `orjson.loads(text)` (something was unwrapped, decoded or skipped)."""
        return bool(self.string_depth or self.decoded_fields or self.prose_around or self.syntax != "JSON")

    def where(self) -> str:
        """How the document sits in the text, in words ('' for a plain JSON or Python-literal text)."""
        parts: list[str] = []
        if self.string_depth:
            layers = "a JSON string literal" if self.string_depth == 1 else f"{self.string_depth} nested JSON strings"
            parts.append(f"inside {layers}")
        if self.prose_around:
            parts.append("between lines of prose")
        if self.decoded_fields:
            shown = ", ".join(self.decoded_fields[:3]) + (", ..." if len(self.decoded_fields) > 3 else "")
            parts.append(f"with the JSON text of {shown} decoded")
        return " ".join(parts)


def view_of(value: Any, text: str) -> DataView:
    """The view of a JSON `text` whose value the caller parsed already (its string fields decoded)."""
    return _view(value, "JSON", text, 0)


def find_data(text: str) -> DataView | None:
    """The data document `text` holds (an object or an array), wherever it sits; None when it holds none.

    The answers for the last two texts of up to CACHED_MAX_CHARS are kept: linecap, tabulate and the stub
    ask of the same result in turn, and a Python literal is slow to read (two, and only up to 1M chars: a
    parsed document holds several times its text's memory). Callers must not change the
    value they get."""
    if len(text) <= CACHED_MAX_CHARS:
        return _find_cached(text)
    return _find(text, 0)


CACHED_MAX_CHARS = 1_000_000


@functools.lru_cache(maxsize=2)
def _find_cached(text: str) -> DataView | None:
    return _find(text, 0)


def decode_fields(value: Any, *, keep_prose: bool = False) -> tuple[Any, tuple[str, ...]]:
    """`value` with the JSON text (or Python literal) of its shell's string fields decoded in place, and
    the JSONPaths of those fields; `value` itself when none holds a document (it is never mutated).
    `keep_prose`: for a reducer that shows the decoded value instead of the text, nothing is decoded when
    a field's document sat between lines of prose (the decoded value would leave the prose out)."""
    decoded, paths, prose = _decode(value)
    if keep_prose and prose:
        return value, ()
    return decoded, paths


def _decode(value: Any) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    paths: list[str] = []
    prose: list[str] = []
    decoded = _decode_shell(value, "$", 0, paths, prose, [SHELL_MAX_VALUES])
    return (decoded, tuple(paths), tuple(prose)) if paths else (value, (), ())


def _find(text: str, string_depth: int) -> DataView | None:
    head = text[:4096].lstrip()[:3]
    if not head and len(text) > 4096:
        head = text.lstrip()[:3]  # a body after 4K of blanks: copied only then
    if not head:
        return None
    if head[0] in _JSON_START:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, (dict, list)):
            return _view(value, "JSON", text, string_depth)
    elif head[0] == '"' and string_depth < MAX_STRING_DEPTH:
        try:
            inner = orjson.loads(text)
        except orjson.JSONDecodeError:
            inner = None
        if isinstance(inner, str):
            found = _find(inner, string_depth + 1)
            if found is not None:
                start, end = _span(text)
                return found.unwrapped(start, end, prose_around=False)
            return None
    if head.startswith(_PY_START):
        value = python_literal(text)
        if isinstance(value, (dict, list, tuple)):
            return _view(value, "Python literal", text, string_depth)
    found = _in_envelope(text, string_depth)
    if found is None and (records := key_value_records(text)) is not None:
        return _view(records, KEY_VALUE_BLOCKS, text, string_depth)
    return found


def _span(text: str) -> tuple[int, int]:
    start = len(text) - len(text.lstrip())
    return start, len(text.rstrip())


def _view(value: Any, syntax: Syntax, text: str, string_depth: int, span: tuple[int, int] | None = None) -> DataView:
    value, fields, prose = _decode(value)
    start, end = span if span is not None else _span(text)
    return DataView(value, syntax, start, end, string_depth, fields, span is not None, text, start, end, prose)


def python_literal(text: str) -> Any | None:
    """The value of a Python literal (`[{'id': 4, ...}]`, what `str()` of rows prints), or None.

    Read by literal_value (literals, and the value constructors database drivers print); bounded in
    size, and its failures on deep nesting (the parser's SyntaxError) or on odd input are a None."""
    s = text.strip()
    if len(s) > PYTHON_MAX_CHARS or not s.startswith(_PY_START):
        return None
    return literal_value(s)


LITERAL_MAX_DEPTH = 200
"""Nesting a Python literal may have (the parser refuses over 200 levels; the walk is recursive)."""


class _NotALiteral(Exception):
    pass


_CONSTRUCTORS: dict[str, Any] = {
    "Decimal": decimal.Decimal,
    "datetime": datetime.datetime,
    "date": datetime.date,
    "time": datetime.time,
    "timedelta": datetime.timedelta,
    "timezone": datetime.timezone,
    "UUID": uuid.UUID,
    "IPv4Address": ipaddress.IPv4Address,
    "IPv6Address": ipaddress.IPv6Address,
    "IPv4Network": ipaddress.IPv4Network,
    "IPv6Network": ipaddress.IPv6Network,
    "IPv4Interface": ipaddress.IPv4Interface,
    "IPv6Interface": ipaddress.IPv6Interface,
}
_CONSTRUCTORS.update({f"{made.__module__}.{name}": made for name, made in list(_CONSTRUCTORS.items())})
"""Value constructors that `str()` of driver rows prints (psycopg, SQLAlchemy, asyncpg): `Decimal('2737.42')`,
`datetime.datetime(2026, 1, 1, 23, 53)`, `UUID('...')`, `IPv4Address('10.0.0.1')`, bare or under their
module's name. Each is called with literal arguments only and read as its `str()`, the text a person (or
an agent's next SQL) writes for it."""


_ATTRIBUTES = {"datetime.timezone.utc", "timezone.utc", "datetime.UTC"}
"""Names a constructor's argument may be (`tzinfo=datetime.timezone.utc`)."""


def literal_value(source: str) -> Any | None:
    """The value of Python literal `source`, or None when it is none.

    What ast.literal_eval reads (strings, numbers, tuples, lists, dicts, sets, booleans, None), plus calls
    of the value constructors above with literal arguments, each read as its `str()`: rows that
    psycopg or SQLAlchemy print hold `Decimal(...)` and `datetime.datetime(...)`, on which literal_eval
    gives up, and the whole result was read as prose. Nothing is evaluated but those constructors: the
    syntax tree is walked here, never compiled; nesting is bounded by LITERAL_MAX_DEPTH."""
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    try:
        return _literal(tree.body, 0)
    except (_NotALiteral, ValueError, TypeError, OverflowError, ArithmeticError, RecursionError, MemoryError):
        return None


def _literal(node: ast.AST, depth: int) -> Any:
    if depth > LITERAL_MAX_DEPTH:
        raise _NotALiteral
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotALiteral  # a `**mapping`
        pairs = zip(node.keys, node.values, strict=True)
        return {_literal(k, depth + 1): _literal(v, depth + 1) for k, v in pairs if k is not None}
    if isinstance(node, ast.List):
        return [_literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, depth + 1) for e in node.elts)
    if isinstance(node, ast.Set):
        return {_literal(e, depth + 1) for e in node.elts}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand, depth + 1)
        if isinstance(operand, bool) or not isinstance(operand, (int, float, complex)):
            raise _NotALiteral
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # a complex number (`1+2j`), as literal_eval reads it
        left, right = _literal(node.left, depth + 1), _literal(node.right, depth + 1)
        if not (isinstance(left, (int, float)) and isinstance(right, complex)) or isinstance(left, bool):
            raise _NotALiteral
        return left + right if isinstance(node.op, ast.Add) else left - right
    if isinstance(node, ast.Call):
        return str(_constructed(node, depth))
    raise _NotALiteral


def _constructed(node: ast.Call, depth: int) -> Any:
    made = _CONSTRUCTORS.get(_dotted(node.func))
    if made is None:
        if _dotted(node.func) == "set" and not node.args and not node.keywords:
            return set()
        raise _NotALiteral
    args = [_argument(a, depth + 1) for a in node.args]
    kwargs = {k.arg: _argument(k.value, depth + 1) for k in node.keywords if k.arg is not None}
    if len(kwargs) != len(node.keywords):
        raise _NotALiteral  # a `**mapping`
    return made(*args, **kwargs)


def _argument(node: ast.AST, depth: int) -> Any:
    """A constructor's argument: a literal, a nested constructor's value (`timezone(timedelta(hours=1))`),
    or `datetime.timezone.utc`."""
    if isinstance(node, ast.Call):
        return _constructed(node, depth)
    if isinstance(node, ast.Attribute) and _dotted(node) in _ATTRIBUTES:
        return datetime.UTC
    return _literal(node, depth)


def _dotted(node: ast.AST) -> str:
    """`datetime.datetime` for a name or an attribute of names, '' for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _in_envelope(text: str, string_depth: int) -> DataView | None:
    """A JSON or Python-literal body after at most a few lines of prose (and envelope tags) and before at
    most a few more: the body must begin a line (or follow a tag or a colon on it) and be most of the text."""
    for start in _body_starts(text):
        found = _body_at(text, start, string_depth)
        if found is not None:
            return found
    return None


def _body_at(text: str, start: int, string_depth: int) -> DataView | None:
    opener = text[start]
    if opener in _JSON_START:
        # Its end is one of the last closers of its kind (orjson reads a candidate ~3x faster than json's
        # raw_decode scans for the end): the last first, as an envelope's tail rarely holds one.
        for end in _closer_ends(text, start, "]" if opener == "[" else "}"):
            if not _envelope_tail(text, start, end):
                continue
            try:
                value = orjson.loads(text[start:end])
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, (dict, list)):
                return _view(value, "JSON", text, string_depth, (start, end))
    elif opener == '"' and string_depth < MAX_STRING_DEPTH:
        try:
            inner, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            return None
        if isinstance(inner, str) and _envelope_tail(text, start, end):
            found = _find(inner, string_depth + 1)
            if found is not None:
                return found.unwrapped(start, end, prose_around=True)
        return None
    if text.startswith(_PY_START, start):
        for end in _python_ends(text, start):
            if _envelope_tail(text, start, end):
                value = python_literal(text[start:end])
                if isinstance(value, (dict, list, tuple)):
                    return _view(value, "Python literal", text, string_depth, (start, end))
    return None


_MAX_BODY_STARTS = 8
_OPENER_AFTER_TAG = re.compile(r"""(?:^|>|:)[ \t]*(?=[\[{"(])""", re.M)


def may_hold_body(text: str) -> bool:
    """Whether a body may start after prose in `text` (a cheap look at its first lines, no parse)."""
    return next(_body_starts(text), None) is not None


def _body_starts(text: str) -> Iterator[int]:
    """Where a body may start: an opener at a line's start, or after an envelope tag or a colon on it,
    within the first ENVELOPE_MAX_LINES lines and ENVELOPE_MAX_CHARS chars (one regex pass over them)."""
    limit = min(len(text), ENVELOPE_MAX_CHARS)
    pos = -1
    for _ in range(ENVELOPE_MAX_LINES + 1):
        pos = text.find("\n", pos + 1, limit)
        if pos < 0:
            break
    else:
        limit = pos  # the line after the last one prose may take
    for n, m in enumerate(_OPENER_AFTER_TAG.finditer(text, 0, limit)):
        if n >= _MAX_BODY_STARTS:
            return
        yield m.end()


def _envelope_tail(text: str, start: int, end: int) -> bool:
    """What surrounds a body is an envelope, not the text: short on both sides and fewer chars than the body."""
    if end - start < 2 or end - start > _ENVELOPE_MAX_BODY_CHARS or len(text) - end > ENVELOPE_MAX_CHARS:
        return False  # before the tail is sliced: JSON lines' first record leaves the whole rest behind it
    tail = text[end:]
    around = start + len(tail)
    rest = tail.lstrip()
    return (
        len(tail) <= ENVELOPE_MAX_CHARS
        and tail.count("\n") <= ENVELOPE_MAX_LINES
        and (around < end - start or (end - start >= _ENVELOPE_MIN_BODY_CHARS and around <= _SMALL_ENVELOPE_CHARS))
        and (start > 0 or rest != "")
        and rest[:1] not in ("{", "[", '"')  # more data after it (JSON lines): not one body in an envelope
    )


_END_TRIES = 3


def _python_ends(text: str, start: int) -> Iterator[int]:
    """Where a Python literal that starts at `start` may end: after one of the last closers of its kind
    (a literal's end is not found by a scan as JSON's is; literal_eval judges each, the last first)."""
    yield from _closer_ends(text, start, {"[": "]", "{": "}", "(": ")"}[text[start]])


def _closer_ends(text: str, start: int, closer: str) -> Iterator[int]:
    """Ends just after the last _END_TRIES `closer`s of `text` within its last ENVELOPE_MAX_CHARS chars."""
    end = len(text)
    floor = max(start, len(text) - ENVELOPE_MAX_CHARS - 1)
    for _ in range(_END_TRIES):
        end = text.rfind(closer, floor, end)
        if end <= start:
            return
        yield end + 1


def _decode_shell(value: Any, path: str, depth: int, paths: list[str], prose: list[str], left: list[int]) -> Any:
    """`value` with its shell's string fields decoded; `left[0]`: how many more values may be looked at."""
    if depth > SHELL_MAX_DEPTH:
        return value
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            left[0] -= 1
            if left[0] < 0:
                break
            child = key_segment(key) if isinstance(key, str) else f"[{key!r}]"
            new = _decode_string(item, path + child, paths, prose) if isinstance(item, str) else None
            if new is None and isinstance(item, (dict, list)):
                new = _decode_shell(item, path + child, depth + 1, paths, prose, left)
                new = None if new is item else new
            if new is not None:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list) and len(value) <= SHELL_MAX_ITEMS:
        items: list[Any] | None = None
        for i, item in enumerate(value):
            left[0] -= 1
            if left[0] < 0:
                break
            new = _decode_string(item, f"{path}[{i}]", paths, prose) if isinstance(item, str) else None
            if new is None and isinstance(item, (dict, list)):
                new = _decode_shell(item, f"{path}[{i}]", depth + 1, paths, prose, left)
                new = None if new is item else new
            if new is not None:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return value


def _decode_string(text: str, path: str, paths: list[str], prose: list[str]) -> Any | None:
    """The document a string field holds (JSON, a JSON string of it, a Python literal, a body between a
    few lines of prose), or None."""
    if len(text) < FIELD_MIN_CHARS:
        return None
    found = _find(text, 1)
    if found is None:
        return None
    paths.append(path)
    paths.extend(p.replace("$", path, 1) for p in found.decoded_fields)
    if found.prose_around or found.syntax == KEY_VALUE_BLOCKS:  # its headers are no part of the records
        prose.append(path)
    prose.extend(p.replace("$", path, 1) for p in found.prose_fields)
    return found.value


_UNESCAPE = re.compile(r"\\(.)")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\]|\\.)*)'\]|\[(-?\d+|'[^']*')\]")


def value_at(doc: Any, path: str) -> Any:
    """The value at a path as decoded_fields spells it (`$.a['b c'][0]`), or None when none is there."""
    node = doc
    for m in _SEGMENT.finditer(path, 1):
        name, quoted, index = m.groups()
        try:
            if index is not None:
                node = node[int(index)] if not index.startswith("'") else node[index[1:-1]]
            else:
                node = node[name if name is not None else _UNESCAPE.sub(r"\1", quoted)]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return node


def plain_json(value: Any) -> bytes:
    """`value` as JSON bytes, a Python literal's too (tuples as arrays; sets, bytes, complex as text)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=_as_json)


def _as_json(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


INLINE_MIN_CHARS = 32
"""A data document inside a line counts from this size: `[1]` or `{}` in prose is no data to keep whole."""
_INLINE_TRIES = 64
_INLINE_OPENER = re.compile(r"""[\[{(](?=\s*["'\[{(\d-]|\s*[\]})])|"(?=\s*[\[{])""")
"""Where a document may start inside a line: a bracket before a quote, a bracket, a digit or a closer
(`[1, 2]`, `{"a"`, `[{'a'`), or a string literal that opens on one (`"[{\\"id\\"`)."""


def data_in_line(line: str, after: int) -> bool:
    """Whether `line` holds a data document (JSON, a JSON string literal of one, a Python literal) of at
    least INLINE_MIN_CHARS chars that reaches past char `after`, or a JSON string literal whose text is
    rows (a CSV, TSV or aligned table, JSON lines, `key: value` records): a cap there would cut data."""
    return _document_in_line(line, after) or _string_of_rows_in_line(line, after)


_STRING_TRIES = 8


def _string_of_rows_in_line(line: str, after: int) -> bool:
    """Whether a JSON string literal in `line` that reaches past char `after` holds rows of text (once
    decoded, or twice and more when encoded so): the literal is one line, its rows are many."""
    if "\\n" not in line:
        return False  # found by memchr: a multi-line text inside a string literal holds the escape
    pos = line.find('"')
    for _ in range(_STRING_TRIES):
        if pos < 0:
            return False
        before = line[pos - 1] if pos else " "
        # an opening quote: not one closing a word, nor an escaped one inside another literal
        if not (before.isalnum() or before == "\\"):
            try:
                value, end = _DECODER.raw_decode(line, pos)
            except (ValueError, RecursionError):
                value, end = None, pos
            if end > after and end - pos >= INLINE_MIN_CHARS and isinstance(value, str) and string_holds_rows(value):
                return True
            if end > pos:
                pos = end - 1  # past this literal (its closing quote is not an opening one)
        pos = line.find('"', pos + 1)
    return False


def string_holds_rows(value: str) -> bool:
    """Whether the text of a JSON string literal, unwrapped of up to MAX_STRING_DEPTH more literals
    (a double-encoded result), is rows of text (rows_text.holds_rows)."""
    for _ in range(MAX_STRING_DEPTH):
        stripped = value.strip()
        if not stripped.startswith('"'):
            break
        try:
            inner = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            break
        if not isinstance(inner, str):
            break
        value = inner
    return holds_rows(value)


def _document_in_line(line: str, after: int) -> bool:
    if not any(opener in line for opener in "[{("):
        return False  # found by memchr: a line of words or base64 is not searched by the regex
    pos = 0
    for _ in range(_INLINE_TRIES):
        m = _INLINE_OPENER.search(line, pos)
        if m is None:
            return False
        start = m.start()
        end = _inline_end(line, start)
        if end - start >= INLINE_MIN_CHARS and end > after:
            return True
        pos = max(end, start + 1)
    return False


def _inline_end(line: str, start: int) -> int:
    """The end of the document that starts at `start` in a line, or `start` when none does."""
    opener = line[start]
    if opener in _JSON_START or opener == '"':
        try:
            value, end = _DECODER.raw_decode(line, start)
        except json.JSONDecodeError as err:
            # JSON read this far before the line ended or broke off: a document cut short is data too,
            # and the openers inside it need not each be read to the same break again
            if opener != '"' and err.pos - start >= INLINE_MIN_CHARS:
                return err.pos
            value, end = None, start
        except (ValueError, RecursionError):
            value, end = None, start
        if isinstance(value, (dict, list)) or (isinstance(value, str) and _find(value, 1) is not None):
            return int(end)
    if line.startswith(_PY_START, start):
        for end in _python_ends(line, start):
            if isinstance(python_literal(line[start:end]), (dict, list, tuple)):
                return end
    return start
