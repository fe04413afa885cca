"""recall_tool_result: read back any part of an offloaded result, exactly, by its `trm_` id.

What it reads: the stored body's text view — the text blocks' text (one
block: exactly its text; several: joined by a newline), or, when the result
had no text, its structuredContent as compact JSON. `json_path` reads the
JSON itself: structuredContent when present, else the JSON a text block holds.

Styles (one per call): `query` (substring, smart case: case-insensitive
unless it has a capital) returns ±window_chars around each match with the
match count and positions (overlapping windows merge under the first
match's label; a window over max_chars shrinks evenly around its match, and
the header says so and names the call for the whole window; none in the
text but some in structuredContent: it names the json_path call that reads
them); `offset`/`max_chars` a character range; `lines`
("120-180", "120", "120-") a line range; `json_path` (JSONPath via
jsonpath-ng) the matching values: one as indented JSON, several one per
line as `$.items[3].id = 7`, each at a path that reads back to it
(jsonpath_worker.match_path). No style: the start of the body. Every
answer begins with one header line stating the id, what is shown, the total
size, and the exact call for the next part; the rest of the answer is the
slice itself, byte for byte, so paging with the `next` offsets reassembles
the body exactly. Answers are capped at `recall.max_chars`. `recall.mode`
(window / structural / both) restricts the styles offered.

Search: a `query` without `mem_id` searches every stored result the caller may
read and lists the ids holding it, with their matching lines (tools/search_answer.py).

Markers too: `mem_id` may be a `<<cg:HASH>>` marker (or its hash); the
styles then read the stashed original it stands for, so one vocabulary
serves both handles (context_guru_expand passes its styles here).

Inline in Claude Code: answers stay under `INLINE_RESULT_CHARS`, which the
tool declares as `_meta["anthropic/maxResultSizeChars"]`, so Claude Code
puts them in the model's context instead of persisting them to a file.

Deterministic: the same ledger content and arguments give the same bytes.
Slow inputs are bounded: substring search is linear; JSONPath parsing is
limited in length and evaluation runs in a worker process that is bounded
in time, memory, matches and answer size, and killed when over (jsonpath_worker).
Off the event loop: the body is loaded, and a large body's answer read, in a worker thread, its passes
over the text a piece at a time (text_pieces), so other calls keep their pace while a 60 MB body is paged.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
import orjson

from ..store import Evicted, Ledger, LedgerCorrupt, LedgerError, UnknownId
from ..store.text_view import text_blocks, text_view
from ..text import pieces as text_pieces
from ..text.data_view import decode_fields, find_data, plain_json
from ..text.jsonpath_keys import is_plain_key
from .echo import ECHO_CHARS
from .jsonpath_worker import JsonPathFailed, evaluate
from .registry import RECALL, ToolEnv, error_result, no_ledger, owner_detail
from .retrieval import BadInput, parse_hash, quoted, quoted_names

log = logging.getLogger(__name__)

_MEM_ID = re.compile(r"trm_[0-9a-f]{16}")
"""Used with fullmatch: `$` would also match before a final newline."""
_LINES = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?$")
_JSON_PATH_MAX_LEN = 512
_JSON_PATH_TIME_LIMIT_S = 5.0
_JSON_MAX_DEPTH = 1024
"""orjson's nesting limit: deeper JSON does not parse ("depth limit exceeded")."""
_MAX_OFFSET = 10**15
_QUERY_MAX_LEN = 4096
"""Longer queries are refused: a substring search for a page of text is a mistake, and answers repeat the query."""
_LINES_MAX_LEN = 48
_ARGS = ("mem_id", "query", "offset", "max_chars", "json_path", "lines")

INLINE_RESULT_CHARS = 50_000
"""What Claude Code shows inline (its default persist-to-file threshold); declared on recall and expand."""
INLINE_META = {"anthropic/maxResultSizeChars": INLINE_RESULT_CHARS}

TOOL = types.Tool(
    name=RECALL,
    _meta=dict(INLINE_META),
    description=(
        "Read back part of an offloaded tool result by its mem_id (trm_...), exactly as the tool returned it; "
        "a <<cg:HASH>> marker works as mem_id too (the original it stands for). "
        "Pick one style: query (substring; case-insensitive unless it has a capital letter) shows the text around each "
        'match with match positions; offset + max_chars a character range; lines a line range like "120-180"; '
        'json_path a JSONPath such as "$.items[3].price" into the result\'s JSON. With no style it returns the start. '
        "Each answer's first line gives the total size and the exact call for the next part. "
        "Don't know the id? Give query alone (no mem_id) to search every stored result: it lists the ids "
        "holding the terms, with the matching lines."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "mem_id": {
                "type": "string",
                "description": "The trm_ id from the stub, or a <<cg:HASH>> marker. Leave out to search all results.",
            },
            "query": {
                "type": "string",
                "description": "Substring to find; shows a window around each match. Without mem_id: search terms.",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Start character (range), or where a query/json_path answer continues.",
            },
            "max_chars": {
                "type": "integer",
                "minimum": 1,
                "description": "Most characters to return (capped by the server).",
            },
            "json_path": {"type": "string", "description": "JSONPath into the result's JSON, e.g. $.items[0:5].name"},
            "lines": {"type": "string", "description": 'Line range, 1-based inclusive: "10-20", "10", or "10-".'},
        },
        "additionalProperties": False,
    },
)


# A few recently recalled bodies stay decoded: paging a 10 MB result should not decompress it per page.
_CACHE: OrderedDict[tuple[str, str], _Body] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_ENTRIES = 4
_CACHE_CHARS = 64 << 20
"""Chars of text the kept bodies may hold together; the most recent one stays whatever its size. A body
kept with what its queries and line ranges derive (its lowercase, its line index) costs ~2.7 times its
text: a query and a line range on each of four 60 MB bodies took the process from 72 to 737 MB, and with
this bound to 242 MB."""


class _Body:
    def __init__(self, raw: bytes) -> None:
        self.result: dict[str, Any] = orjson.loads(raw)
        texts = text_blocks(self.result)
        self.text = text_view(self.result)
        self.blocks = len(texts)
        self._lower: str | None = None
        self._line_starts: list[int] | None = None
        self._json: tuple[Any, str] | None = None
        self._json_bytes: bytes | None = None

    @property
    def lower(self) -> str:
        if self._lower is None:
            self._lower = text_pieces.lower(self.text)
        return self._lower

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts

    def line_of(self, pos: int) -> int:
        from bisect import bisect_right

        return bisect_right(self.line_starts, pos)

    def json_doc(self) -> tuple[Any, str]:
        """(document, where it came from) for json_path; raises BadInput when the result has no data it can read.

        The document is read wherever it sits (data_view): a text that is a JSON string of JSON, a Python
        literal, a body between lines of prose, JSON text in a field (server-filesystem's `{content: "<the
        file>"}`) are read decoded, and the source says so: a match there is a value of the decoded
        document, not a slice of the stored bytes (offset, lines and query read those)."""
        if self._json is None:
            structured = self.result.get("structuredContent")
            if structured is not None:
                doc, decoded = decode_fields(structured)
                fields = ", ".join(decoded[:3]) + (", ..." if len(decoded) > 3 else "")
                self._json = (
                    doc,
                    f"structuredContent (read decoded: the JSON text of {fields})" if decoded else "structuredContent",
                )
            else:
                too_deep = None
                for i, block in enumerate(self.result.get("content") or []):
                    text = block.get("text") if block.get("type") == "text" else None
                    if not text:
                        continue
                    view = find_data(text)
                    if view is not None:
                        where = view.where()
                        decoded_from = f"{view.syntax} {where}".strip() if view.decoded else ""
                        self._json = (
                            view.value,
                            f"text block {i + 1} (read decoded: {decoded_from})"
                            if decoded_from
                            else f"text block {i + 1}",
                        )
                        break
                    if too_deep is None and text.lstrip()[:1] in ("{", "["):
                        try:
                            orjson.loads(text)
                        except orjson.JSONDecodeError as err:
                            if str(err).startswith("depth limit exceeded"):
                                too_deep = i + 1
                if self._json is None and too_deep is not None:
                    # It is JSON, just not parseable here: "holds no JSON" would send the model elsewhere.
                    raise BadInput(
                        f"text block {too_deep} is JSON nested too deeply to query by path "
                        f"(over {_JSON_MAX_DEPTH:,} levels); use query or lines"
                    )
            if self._json is None:
                raise BadInput(
                    "this result holds no JSON (no structuredContent, no text block that parses as JSON); use query, offset or lines"
                )
        return self._json

    def json_bytes(self) -> bytes:
        """The json_path document as JSON bytes (what the evaluating worker reads)."""
        if self._json_bytes is None:
            self._json_bytes = plain_json(self.json_doc()[0])
        return self._json_bytes


def _load(env: ToolEnv, mem_id: str) -> _Body:
    if not mem_id.startswith("trm_"):
        return _load_marker(env, mem_id)
    ledger = env.ledger
    if ledger is None:
        raise BadInput(f"{no_ledger(env)}, so nothing can be recalled")
    key = (ledger.location, mem_id)
    scoped = ledger.scope != "global"
    with _CACHE_LOCK:
        cached = None if scoped else _CACHE.get(key)
    if cached is not None:
        ledger.body_info(mem_id)  # still there? raises UnknownId / Evicted like a full read
        with _CACHE_LOCK:
            if key in _CACHE:
                _CACHE.move_to_end(key)
        return cached
    body = _Body(ledger.get_body_json(mem_id, session_id=env.ledger_owner))
    with _CACHE_LOCK:
        _CACHE[key] = body
        while len(_CACHE) > 1 and (
            len(_CACHE) > _CACHE_ENTRIES or sum(len(kept.text) for kept in _CACHE.values()) > _CACHE_CHARS
        ):
            _CACHE.popitem(last=False)
    return body


def _load_marker(env: ToolEnv, marker: str) -> _Body:
    """The stashed original a `<<cg:HASH>>` marker stands for, as a one-text-block body."""
    hash_ = parse_hash(marker)
    assert hash_ is not None
    if env.ledger is None:
        raise BadInput(f"{no_ledger(env)}, so nothing can be recalled")
    original = env.ledger.get_stash(hash_, session_id=env.ledger_owner)
    env.session.expanded.add(hash_)  # the model now holds it: the same content later stays verbatim
    return _Body(orjson.dumps({"content": [{"type": "text", "text": original}]}))


def _int_arg(arguments: dict[str, Any], name: str, *, minimum: int) -> int | None:
    given = value = arguments.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            raise BadInput(f"{name} must be a whole number, got {quoted(value)}")
    # Echo what the caller sent, clipped: 1e308 as an int is 309 digits.
    if value < minimum:
        raise BadInput(f"{name} must be >= {minimum}, got {quoted(given)}")
    if value > _MAX_OFFSET:
        raise BadInput(f"{name} {quoted(given)} is absurdly large (at most {_MAX_OFFSET})")
    return value


def _str_arg(arguments: dict[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"{name} must be a string, got {type(value).__name__}")
    return value


async def handle(arguments: dict[str, Any], env: ToolEnv) -> types.CallToolResult:
    arguments = dict(arguments or {})
    if isinstance(arguments.get("mem_id"), str):
        # Copied ids often carry a newline or spaces; context_guru_expand strips its marker the same way.
        arguments["mem_id"] = arguments["mem_id"].strip()
    mem_id = arguments.get("mem_id")
    try:
        result, style, chars_out = await recall_answer(arguments, env)
    except BadInput as err:
        _record(env, mem_id, ok=False, detail={"error": str(err)[:200]})
        return error_result(f"recall_tool_result: {err}")
    _record(env, mem_id, ok=True, chars_out=chars_out, detail={"style": style})
    return result


def _record(env: ToolEnv, mem_id: Any, *, ok: bool, chars_out: int = 0, detail: dict[str, Any]) -> None:
    if env.ledger is None or not isinstance(mem_id, str):
        return
    try:
        env.ledger.record_recall(
            env.session_id, mem_id, ok=ok, chars_out=chars_out, detail={**detail, **owner_detail(env)}
        )
    except Exception as err:  # stats are best effort; the answer is what matters
        log.debug("recall event not recorded: %s", err)


async def recall_answer(arguments: dict[str, Any], env: ToolEnv) -> tuple[types.CallToolResult, str, int]:
    unknown = sorted(set(arguments) - set(_ARGS))
    if unknown:
        raise BadInput(f"unknown argument(s) {quoted_names(unknown)}; valid: {', '.join(_ARGS)}")
    mem_id = arguments.get("mem_id")
    if (mem_id is None or mem_id == "") and arguments.get("query") is not None:
        return await _search(arguments, env)
    mem_id = _recall_id(mem_id)
    settings = env.settings.recall
    request = _Request.read(arguments, settings.mode)
    if env.ledger is None:
        raise BadInput(f"{no_ledger(env)}, so nothing can be recalled")
    body = await _load_body(env, env.ledger, mem_id)
    cap = settings.max_chars
    limit = min(request.max_chars or cap, cap)
    text, style = await _read_in_style(body, mem_id, request, limit, settings)
    if request.max_chars is not None and request.max_chars > cap:
        text = _with_cap_note(text, f" (max_chars capped at {cap:,})")
    return types.CallToolResult(content=[types.TextContent(text=text)]), style, len(text)


def _recall_id(mem_id: Any) -> str:
    """The id to read: a trm_ id as given, or a `<<cg:HASH>>` marker in its canonical form."""
    if mem_id is None or mem_id == "":
        raise BadInput(
            "mem_id is required: the trm_ id shown in the offloaded result's stub "
            "(or give query alone to search every stored result)"
        )
    if not isinstance(mem_id, str):
        raise BadInput(
            f"mem_id must be a string like trm_0123456789abcdef (from the stub); got {type(mem_id).__name__}"
        )
    if _MEM_ID.fullmatch(mem_id):
        return mem_id
    hash_ = parse_hash(mem_id)
    if hash_ is None:
        raise BadInput(
            f"mem_id {quoted(mem_id)} is not a recall id; ids look like trm_ followed by 16 hex digits "
            "(as in the stub), or a <<cg:HASH>> marker"
        )
    return f"<<cg:{hash_}>>"


@dataclass(frozen=True)
class _Request:
    """How a recall reads its body: one style (query, lines, json_path, or a range) and its paging."""

    query: str | None
    json_path: str | None
    lines: str | None
    offset: int | None
    max_chars: int | None

    @classmethod
    def read(cls, arguments: dict[str, Any], mode: str) -> _Request:
        """The arguments checked against each other and against the recall mode offered."""
        request = cls(
            query=_str_arg(arguments, "query"),
            json_path=_str_arg(arguments, "json_path"),
            lines=_str_arg(arguments, "lines"),
            offset=_int_arg(arguments, "offset", minimum=0),
            max_chars=_int_arg(arguments, "max_chars", minimum=1),
        )
        query, lines, json_path = request.query, request.lines, request.json_path
        chosen = [name for name, v in (("query", query), ("lines", lines), ("json_path", json_path)) if v is not None]
        if len(chosen) > 1:
            raise BadInput(f"choose one style per call, got {' and '.join(chosen)}")
        if lines is not None and request.offset is not None:
            raise BadInput("lines and offset cannot be combined; use lines alone, or offset with max_chars")
        if query is not None and query == "":
            raise BadInput("query must not be empty")
        if query is not None and len(query) > _QUERY_MAX_LEN:
            raise BadInput(
                f"query is {len(query):,} chars; at most {_QUERY_MAX_LEN:,}: search for a distinctive part of it, or page with offset"
            )
        if json_path is not None and mode == "window":
            raise BadInput("json_path is not offered (recall.mode is `window`); use query, offset/max_chars or lines")
        if mode == "structural" and (query is not None or lines is not None):
            raise BadInput("only json_path (and offset/max_chars paging) is offered (recall.mode is `structural`)")
        return request


async def _load_body(env: ToolEnv, ledger: Ledger, mem_id: str) -> _Body:
    """The stored body of `mem_id`, read in a worker thread; each way it cannot be read, said for the caller."""
    try:
        return await anyio.to_thread.run_sync(_load, env, mem_id)
    except Evicted as err:
        raise BadInput(f"{err}; call the original tool again for a fresh result") from None
    except UnknownId as err:
        raise BadInput(f"{err}; use an id from a stub this proxy returned") from None
    except (LedgerCorrupt, orjson.JSONDecodeError) as err:  # a retry reads the same bytes; the tool can make them anew
        raise BadInput(
            f"the stored body of {mem_id} cannot be read, the ledger is corrupt ({ledger.for_client(err)}); "
            "call the original tool again for a fresh result"
        ) from None
    except LedgerError as err:  # e.g. a PostgreSQL ledger that is down: the id may be fine
        raise BadInput(
            f"the ledger cannot be read right now ({ledger.for_client(err)}); try the recall again shortly"
        ) from None


async def _read_in_style(body: _Body, mem_id: str, request: _Request, limit: int, settings: Any) -> tuple[str, str]:
    """(the answer's text, its style's name) for the one style the request chose."""
    offset = request.offset or 0
    if request.json_path is not None:
        return await _json_path(body, mem_id, request.json_path, offset, limit), "json_path"
    if request.query is not None:
        return await _off_loop(body, _query, body, mem_id, request.query, offset, limit, settings), "query"
    if request.lines is not None:
        return await _off_loop(body, _lines, body, mem_id, request.lines, limit), "lines"
    return await _off_loop(body, _range, body, mem_id, offset, limit), "range"


def _with_cap_note(text: str, note: str) -> str:
    """`text` with `note` (max_chars was capped) in its header line, before its `next` pointer when it has one."""
    head, _, rest = text.partition("\n")
    head = head.replace("; next:", f"{note}; next:", 1) if "; next:" in head else f"{head[:-1]}{note}]"
    return f"{head}\n{rest}"


async def _search(arguments: dict[str, Any], env: ToolEnv) -> tuple[types.CallToolResult, str, int]:
    """A query without mem_id: search every stored result the caller may read (tools/search_answer.py)."""
    from ..store.search import SearchRefused
    from .search_answer import SearchInputError, answer

    extra = sorted(k for k in arguments if k not in ("mem_id", "query", "max_chars"))
    if extra:
        raise BadInput(
            f"a search (query without mem_id) takes only query and max_chars, got {quoted_names(extra)}; "
            "give mem_id to read one result by offset, lines or json_path"
        )
    query = _str_arg(arguments, "query")
    assert query is not None
    if not query.strip():
        raise BadInput("query must not be empty")
    if env.settings.recall.mode == "structural":
        raise BadInput("only json_path (and offset/max_chars paging) is offered (recall.mode is `structural`)")
    if env.ledger is None:
        raise BadInput(f"{no_ledger(env)}, so nothing can be searched")
    cap = env.settings.recall.max_chars
    max_chars = _int_arg(arguments, "max_chars", minimum=1)
    limit = min(max_chars or cap, cap)
    try:
        found = await answer(env, query, limit)
    except SearchInputError as err:
        _record_search(env, ok=False, detail={"error": str(err)[:200]})
        raise BadInput(str(err)) from None
    except SearchRefused as err:
        _record_search(env, ok=False, detail={"error": str(err)[:200]})
        raise BadInput(str(err)) from None
    except LedgerError as err:
        raise BadInput(f"the ledger cannot be searched right now ({err}); try again shortly") from None
    _record_search(env, ok=True, chars_out=len(found.text), detail={"hits": found.hits})
    return types.CallToolResult(content=[types.TextContent(text=found.text)]), "search", len(found.text)


def _record_search(env: ToolEnv, *, ok: bool, chars_out: int = 0, detail: dict[str, Any]) -> None:
    """A `search` event: stats counts searches, hits, and the later recalls of a hit (the hop it saved)."""
    from ..store import LedgerEvent

    if env.ledger is None:
        return
    event = LedgerEvent(
        "search", session_id=env.session_id, verdict="ok" if ok else "error", chars_out=chars_out, detail=detail
    )
    try:
        env.ledger.record_later(event)
    except Exception as err:  # stats are best effort; the answer is what matters
        log.debug("search event not recorded: %s", err)


_T = TypeVar("_T")
_ON_LOOP_CHARS = 65_536
"""Bodies up to this size are answered on the event loop, larger ones in a worker thread: a large body's
line index, lowercase and counts would hold every other call on the loop, and a body this small costs the
loop about what the hop to a thread costs (docs/design.md, "Checks and reads off the event loop";
bench/bench_recall.py)."""


async def _off_loop(body: _Body, read: Callable[..., _T], *args: Any) -> _T:
    """`read(*args)`, in a worker thread when `body` is large."""
    if len(body.text) <= _ON_LOOP_CHARS:
        return read(*args)
    return await anyio.to_thread.run_sync(read, *args)


def _call(mem_id: str, **kw: Any) -> str:
    args = ", ".join(f"{k}={orjson.dumps(v).decode()}" for k, v in kw.items())
    return f'recall_tool_result(mem_id="{mem_id}", {args})'


def _range(body: _Body, mem_id: str, offset: int, limit: int) -> str:
    total = len(body.text)
    if offset > total or (offset == total and total > 0):
        raise BadInput(
            f"offset {offset:,} is past the end: the body has {total:,} chars (valid offsets 0–{max(total - 1, 0):,})"
        )
    end = min(offset + limit, total)
    nxt = f"next: {_call(mem_id, offset=end)}" if end < total else "end of body"
    return f"[{mem_id}: chars {offset:,}–{end:,} of {total:,}; {nxt}]\n{body.text[offset:end]}"


def _lines(body: _Body, mem_id: str, spec: str, limit: int) -> str:
    m = _LINES.match(spec) if len(spec) <= _LINES_MAX_LEN else None
    if not m or any(g and len(g) > 15 for g in (m.group(1), m.group(3))):
        raise BadInput(
            f'lines {quoted(spec)} is not a line range; use "A-B", "A" or "A-" with 1-based line numbers (at most 15 digits)'
        )
    first = int(m.group(1))
    last_text = m.group(3)
    starts = body.line_starts
    count = len(starts) if not body.text.endswith("\n") else len(starts) - 1
    count = max(count, 1 if body.text else 0)
    last = count if m.group(2) and not last_text else int(last_text) if last_text else first
    if first < 1:
        raise BadInput("line numbers start at 1")
    if last < first:
        raise BadInput(f"lines {quoted(spec)}: the end ({last}) is before the start ({first})")
    if first > count:
        raise BadInput(f"line {first:,} is past the end: the body has {count:,} lines")
    last = min(last, count)
    start = starts[first - 1]
    end = starts[last] if last < len(starts) else len(body.text)
    total = len(body.text)
    if end - start <= limit:
        nxt = f"next: {_call(mem_id, lines=f'{last + 1}-')}" if last < count else "end of body"
        return f"[{mem_id}: lines {first:,}–{last:,} of {count:,} (chars {start:,}–{end:,} of {total:,}); {nxt}]\n{body.text[start:end]}"
    # Too long for one answer: stop at the last whole line that fits, or mid-line if none does.
    cut = start + limit
    shown_last = body.line_of(cut) - 1
    if shown_last >= first:
        cut = starts[shown_last]
        nxt = _call(mem_id, lines=f"{shown_last + 1}-{last}")
        what = f"lines {first:,}–{shown_last:,} of {count:,}"
    else:
        nxt = _call(mem_id, offset=cut)
        what = f"part of line {first:,} of {count:,}"
    return f"[{mem_id}: {what} (chars {start:,}–{cut:,} of {total:,}; capped at {limit:,}); next: {nxt}]\n{body.text[start:cut]}"


def _smart_case(query: str, text: str, lowered: Callable[[], str]) -> tuple[str, str]:
    """(haystack, needle) of a smart-case search: exact when the query has a capital, else both lowercased
    (`lowered()`: the text's lowercase, asked only then); exact too when lowercasing changed the text's
    length (rare scripts), so positions found are the text's own."""
    if any(c.isupper() for c in query):
        return text, query
    low = lowered()
    return (low, query.lower()) if len(low) == len(text) else (text, query)


def _query(body: _Body, mem_id: str, query: str, offset: int, limit: int, settings: Any) -> str:
    total = len(body.text)
    if offset > total:
        raise BadInput(f"offset {offset:,} is past the end: the body has {total:,} chars")
    haystack, needle = _smart_case(query, body.text, lambda: body.lower)
    count = text_pieces.count(haystack, needle)
    first = text_pieces.find(haystack, needle, offset) if count else -1
    positions, pos = _matches_while(haystack, needle, first, lambda p, found: len(found) < settings.max_matches)
    if not positions:
        return _no_matches(body, mem_id, query, offset, count, settings)
    spans, shown, cut = _windows(body, mem_id, positions, len(needle), settings.window_chars, limit)
    # A match that lies whole in a piece shown for another (a window shrunk to fit max_chars, or the last
    # window past max_matches) was shown too: the header lists it, and `next` resumes past it instead of
    # showing it a second time.
    inside, pos = _matches_while(haystack, needle, pos, lambda p, found: p + len(needle) <= spans[-1][2])
    positions += inside
    shown = [p for p in positions if p in shown or any(lo <= p and p + len(needle) <= hi for _, lo, hi in spans)]
    more = [p for p in positions if p not in shown]
    resume = more[0] if more else (pos if pos != -1 else None)
    before = text_pieces.count(haystack, needle, 0, offset) if offset else 0
    header = _query_header(
        mem_id, query, count, total, before, shown, settings, cut, _next_query(mem_id, query, resume)
    )
    return header + "\n" + "".join(f"{label}{body.text[lo:hi]}\n" for label, lo, hi in spans)


def _matches_while(
    haystack: str, needle: str, pos: int, go_on: Callable[[int, list[int]], bool]
) -> tuple[list[int], int]:
    """The matches from `pos` (-1: none) on while `go_on(match, found so far)` holds, and the match after
    them (-1: none)."""
    found: list[int] = []
    while pos != -1 and go_on(pos, found):
        found.append(pos)
        pos = text_pieces.find(haystack, needle, pos + max(len(needle), 1))
    return found, pos


def _no_matches(body: _Body, mem_id: str, query: str, offset: int, count: int, settings: Any) -> str:
    """The answer to a query with no match from `offset` on, with where else it occurs when nowhere in the text."""
    where = f" after offset {offset:,}" if offset else ""
    elsewhere = ""
    if count == 0:
        elsewhere = _behind_escapes(body, mem_id, query) or _in_structured(body, mem_id, query, settings)
    return (
        f"[{mem_id}: 0 matches for {quoted(query)}{where} ({count:,} in all) in {len(body.text):,} chars{elsewhere}]\n"
    )


def _windows(
    body: _Body, mem_id: str, positions: list[int], needle_len: int, window: int, limit: int
) -> tuple[list[tuple[str, int, int]], list[int], str]:
    """The pieces of text shown around the matches within `limit` chars: (label, lo, hi) of each piece,
    the matches they show, and the note on a first window cut to fit ("" when none is)."""
    total = len(body.text)
    spans: list[tuple[str, int, int]] = []
    used = 0
    shown: list[int] = []
    cut = ""
    for p in positions:
        lo, hi = max(0, p - window), min(total, p + needle_len + window)
        if spans and p < spans[-1][2]:
            # Inside the previous window: extend that piece, so no label heads text that starts past its match.
            label, lo, last_end = spans[-1]
            if used + hi - last_end > limit:
                break
            spans[-1] = (label, lo, hi)
            used += hi - last_end
            shown.append(p)
            continue
        lo = max(lo, spans[-1][2]) if spans else lo
        label = f"--- match at char {p:,} (line {body.line_of(p):,}) ---\n"
        size = len(label) + hi - lo + 1
        if spans and used + size > limit:
            break
        if not spans and size > limit:
            lo, hi, cut = _fit_first_window(mem_id, label, p, lo, hi, needle_len, limit)
            size = len(label) + hi - lo + 1
        spans.append((label, lo, hi))
        used += size
        shown.append(p)
    return spans, shown, cut


def _fit_first_window(
    mem_id: str, label: str, p: int, lo: int, hi: int, needle_len: int, limit: int
) -> tuple[int, int, str]:
    """The first match's window cut to `limit` chars with its label: (lo, hi, the note saying how).

    The context shrinks evenly around the match (cutting one end could drop the match itself), and the
    match only when it alone is over max_chars."""
    whole = _call(mem_id, offset=lo, max_chars=hi - lo)
    room = limit - len(label) - 1
    if room < 1:
        raise BadInput(
            f"max_chars {limit:,} is too small to show a match with its label ({len(label) + 1 + needle_len:,} "
            f"chars show the first one whole); raise it, or read its window: {whole}"
        )
    if room >= needle_len:
        room -= needle_len
        before = min(p - lo, room // 2)
        after = min(hi - p - needle_len, room - before)
        before = min(p - lo, room - after)
        lo, hi = p - before, p + needle_len + after
        cut = f", this one cut to {before:,} before and {after:,} after to fit {limit:,} chars"
    else:  # longer than max_chars: its start, as the caller has the query itself
        lo, hi = p, p + room
        cut = f", this one cut to the first {room:,} of its {needle_len:,} chars to fit {limit:,}"
    return lo, hi, cut + f" (whole window: {whole})"


def _next_query(mem_id: str, query: str, resume: int | None) -> str:
    """The header's pointer to the next matches: the call that shows them, or that there are none."""
    if resume is None:
        return "no more matches"
    if len(repr(query)) <= ECHO_CHARS:
        return f"next: {_call(mem_id, query=query, offset=resume)}"
    # A long query is not repeated: the caller has it.
    return f'next: recall_tool_result(mem_id="{mem_id}", query=<the same query>, offset={resume})'


def _query_header(
    mem_id: str,
    query: str,
    count: int,
    total: int,
    before: int,
    shown: list[int],
    settings: Any,
    cut: str,
    nxt: str,
) -> str:
    """The line heading a query's answer: how many matches, which are shown and at which chars, what is next."""
    listing = ", ".join(f"{p:,}" for p in shown[: settings.max_matches])
    if len(shown) > settings.max_matches:  # a short query's matches in the last window: counted, not listed
        listing += f" and {len(shown) - settings.max_matches:,} more inside the last window"
    return (
        f"[{mem_id}: {count:,} match{'' if count == 1 else 'es'} for {quoted(query)} in {total:,} chars; showing matches {before + 1}–{before + len(shown)} "
        f"at chars {listing}; ±{settings.window_chars} chars each{cut}; {nxt}]"
    )


_ESCAPE_LINES_SHOWN = 5


def _behind_escapes(body: _Body, mem_id: str, query: str) -> str:
    """A note for a query found only once terminal colour codes are set aside, with the lines that hold it.

    The stub's index and head read a colourised log without its escapes (policy/textscan.without_escapes),
    so a model that copies `FAILED tests/x.py::test_y` from the index into `query` finds nothing in the
    stored text, where a colour code sits between the two words. That view keeps every line break, so
    its line numbers are the stored body's: the note names `lines` calls that read them exactly.
    """
    if "\x1b" not in body.text:
        return ""
    from ..policy.textscan import without_escapes

    plain = without_escapes(body.text)
    haystack, needle = _smart_case(query, plain, plain.lower)
    pos = haystack.find(needle)
    if pos < 0:
        return ""
    count = haystack.count(needle)
    lines: list[int] = []
    line, seen = 1, 0
    while pos >= 0 and len(lines) < _ESCAPE_LINES_SHOWN:
        line += plain.count("\n", seen, pos)
        seen = pos
        if not lines or lines[-1] != line:
            lines.append(line)
        pos = haystack.find(needle, pos + max(len(needle), 1))
    calls = "; ".join(_call(mem_id, lines=f"{n}-{n}") for n in lines)
    return (
        f"; the stored text keeps its terminal colour codes, and without them it occurs {count:,} "
        f"time{'' if count == 1 else 's'}, on line{'' if len(lines) == 1 else 's'} "
        f"{', '.join(f'{n:,}' for n in lines)}{' and more' if count > len(lines) else ''}: {calls}"
    )


def _in_structured(body: _Body, mem_id: str, query: str, settings: Any) -> str:
    """A note for a query with no match in the text that does occur in the structuredContent query does not read.

    Pointing there (a json_path call) is preferred to searching it too: its JSON has no positions in
    the text view, so windows and `next` offsets could not address it.
    """
    structured = body.result.get("structuredContent")
    if structured is None or not body.blocks or settings.mode == "window":
        return ""  # no structuredContent, the text view is it already, or json_path is not offered
    exact = any(c.isupper() for c in query)
    needle = query if exact else query.lower()
    compact = body.json_bytes().decode()
    count = (compact if exact else compact.lower()).count(needle)
    if not count:
        return ""
    path = _holder_of(body.json_doc()[0], needle, exact) or "$"
    if len(path) > _JSON_PATH_MAX_LEN:
        path = "$"  # a path through keys this long is refused by json_path itself: the whole document instead
    return (
        f" of text; it occurs {count:,} time{'' if count == 1 else 's'} in the structuredContent, "
        f"which query does not search: {_call(mem_id, json_path=path)}"
    )


_HOLDER_NODES = 200_000
"""Most JSON nodes _holder_of visits; past it the note points at the whole document."""


def _holder_of(doc: Any, needle: str, exact: bool) -> str | None:
    """JSONPath of an object or array with a key or scalar holding `needle`: depth first, a node's own
    keys and scalars before its children, so the same document always gives the same path.

    The holder rather than the scalar: like a query window, the record around the match is the useful part.
    None when no single key or scalar holds it (outside keys that would need quoting, or that JSONPath reads as
    its own words: jsonpath_keys) or the walk grows too long.
    """
    stack: list[tuple[Any, str]] = [(doc, "$")]
    visited = 0
    while stack and visited < _HOLDER_NODES:
        node, path = stack.pop()
        visited += 1
        if isinstance(node, dict):
            pairs = [(k, v, f"{path}.{k}") for k, v in node.items() if is_plain_key(k)]
        elif isinstance(node, list):
            pairs = [(None, v, f"{path}[{i}]") for i, v in enumerate(node)]
        else:
            continue
        visited += len(pairs)
        children = []
        for key, value, child in pairs:
            if isinstance(value, dict | list):
                leaf = None
            else:
                leaf = value if isinstance(value, str) else orjson.dumps(value).decode()
            for held in (key, leaf):
                if held is not None and needle in (held if exact else held.lower()):
                    return path
            if leaf is None:
                children.append((value, child))
        stack.extend(reversed(children))
    return None


async def _json_path(body: _Body, mem_id: str, path: str, offset: int, limit: int) -> str:
    if len(path) > _JSON_PATH_MAX_LEN:
        raise BadInput(f"json_path is {len(path)} chars; at most {_JSON_PATH_MAX_LEN}")
    try:
        from jsonpath_ng.ext import parse

        parse(path)  # syntax errors answer at once, before a worker starts
    except Exception as err:
        raise BadInput(
            f"json_path {path!r} is not valid JSONPath ({err}); e.g. $.items[0].name, $.items[*].id, $..price"
        ) from None
    # The document and its bytes, in a worker thread (the evaluation's process costs far more than the hop):
    # a JSON text body is parsed, a structuredContent dumped.
    doc, source, document = await anyio.to_thread.run_sync(lambda: (*body.json_doc(), body.json_bytes()))
    try:
        # In a process of its own: bounded in time, memory, matches and size, and killed when over.
        count, rendered = await evaluate(path, document, time_limit_s=_JSON_PATH_TIME_LIMIT_S)
    except JsonPathFailed as err:
        raise BadInput(f"json_path {path!r} {err}") from None
    if count == 0:
        # Each key as an echo is clipped: 20 keys of 50K chars made this one-line answer 1 MB.
        keys = (
            "[" + ", ".join(map(quoted, list(doc)[:20])) + "]"
            if isinstance(doc, dict)
            else f"an array of {len(doc)}"
            if isinstance(doc, list)
            else type(doc).__name__
        )
        return f"[{mem_id}: json_path {path!r} matched nothing in {source}; top level: {keys}]\n"
    total = len(rendered)
    if offset > total or (offset == total and total > 0):
        raise BadInput(f"offset {offset:,} is past the end of this json_path answer ({total:,} chars)")
    end = min(offset + limit, total)
    if end < total:
        # A page ends after its last whole line (one match each when there are several), not inside a match.
        last_break = rendered.rfind("\n", offset, end)
        if last_break >= offset:
            end = last_break + 1
    nxt = f"next: {_call(mem_id, json_path=path, offset=end)}" if end < total else "end of answer"
    return f"[{mem_id}: json_path {path!r} in {source}: {count:,} match{'es' if count != 1 else ''}; chars {offset:,}–{end:,} of {total:,}; {nxt}]\n{rendered[offset:end]}"
