"""A result body as the downstream sent it, and its sizes: what the client receives, what its model reads,
what recall pages through.

`ResultBody` is the dump of one result (`dump_result`); it measures its structuredContent's compact JSON
and whether its one text spells that JSON at most once each, and only its own methods keep those facts.
The size functions take any body (a plain dict is measured afresh every time).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import orjson

from ..analysis.clients import ChannelSizes, chars_of_json
from ..policy.describe import parse_json_text
from ..policy.stub import text_blocks
from ..policy.textscan import lstripped_head

_JSON_BLANKS = b" \t\n\r"
_JSON_BLANKS_STR = _JSON_BLANKS.decode()


class ResultBody(dict[str, Any]):
    """A result as `dump_result` dumped it: JSON-native values only (mode="json": no tuple, NaN or
    infinity; a structuredContent parsed from JSON may hold a NaN, see dump_result), read and never
    changed in place by the shaper. It keeps the length of its structuredContent's compact JSON once
    measured, so pricing one result serialises a large structuredContent once (sent_chars,
    visible_chars and recall_chars share it; none at all when dump_result's orjson round trip measured
    it), and whether its text spells that structuredContent (`spells_structured`, asked by the policy
    and the stub). The JSON-native guarantee lets structured_repeats_text trust an orjson round trip.
    Each fact is keyed by the identity of what it was measured on, so a channel put in place of another
    is measured anew."""

    __slots__ = ("_structured_chars", "_text_spells_structured")

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body)
        self._structured_chars: tuple[Any, int, int] | None = None
        """(structuredContent, bytes, characters) of its compact JSON."""
        self._text_spells_structured: tuple[Any, str | None, bool] | None = None
        """(structuredContent, the one text or None, whether the text spells it)."""

    def keep_structured_json(self, raw: bytes) -> None:
        """`raw` is its structuredContent's compact JSON (dump_result serialised it already)."""
        self._structured_chars = (self["structuredContent"], len(raw), chars_of_json(raw))

    def structured_size(self) -> tuple[int, int]:
        """(bytes, characters) of the structuredContent's compact JSON, (0, 0) without one; measured once.
        The length, not the bytes, is kept: a large bytes object kept alive through the shaping costs
        more in page faults of the allocations after it than serialising twice."""
        value = self.get("structuredContent")
        if value is None:
            return 0, 0
        kept = self._structured_chars
        if kept is None or kept[0] is not value:
            raw = orjson.dumps(value)
            kept = self._structured_chars = (value, len(raw), chars_of_json(raw))
        return kept[1], kept[2]

    def spells_structured(self) -> bool:
        """Its one text block is, but for blanks around it, orjson's compact or 2-space indented
        serialisation of its structuredContent (an object or array): then `parse_json_text(text)` equals
        the structuredContent, and the stub reads that instead of parsing the text. False also when it
        cannot be serialised or the text is spelled another way (a parse decides). Decided once (and
        again if either channel is put in place of the one it was decided on)."""
        structured = self.get("structuredContent")
        texts = text_blocks(self)
        kept = self._text_spells_structured
        if kept is not None and kept[0] is structured and len(texts) == 1 and kept[1] is texts[0]:
            return kept[2]
        spelled = False
        if isinstance(structured, (dict, list)) and len(texts) == 1:
            head = lstripped_head(texts[0], 2)
            if head[:1] == ("{" if isinstance(structured, dict) else "["):
                spelled = self._spelled_by_orjson(texts[0], indented=head[1:] == "\n")
        self._text_spells_structured = (structured, texts[0] if len(texts) == 1 else None, spelled)
        return spelled

    def _spelled_by_orjson(self, text: str, *, indented: bool) -> bool:
        try:
            if not indented and text.isascii() and len(text.strip(_JSON_BLANKS_STR)) != self.structured_size()[0]:
                return False  # told by the compact length the sizes measured already (e.g. json.dumps's ", ")
            raw = orjson.dumps(self.get("structuredContent"), option=orjson.OPT_INDENT_2 if indented else None)
        except orjson.JSONEncodeError:
            return False
        if text.isascii() and len(text) < len(raw):
            return False
        # surrogatepass: a lone surrogate encodes to bytes valid UTF-8 never holds, so it cannot match
        return text.encode("utf-8", "surrogatepass").strip(_JSON_BLANKS) == raw


_NATIVE_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
"""orjson raises on what pydantic's mode="json" would convert its own way (dates, dataclasses, subclasses
of str/int/dict/list; and, with no option, sets, bytes, Decimal, models, non-str keys, ints over 64 bits)."""


_STRING_HEAVY_BYTES = 256
"""Mean bytes of JSON per object or array over which pydantic dumps a structuredContent: it hands strings
over by reference, where an orjson round trip copies them."""


def dump_result(result: types.CallToolResult, *, structured_from_json: bool = False) -> ResultBody:
    """The result as the downstream sent it: wire names, only the fields it set (plus each block's `type`).

    pydantic's mode="json" dump visits every value of structuredContent in Python. A structuredContent
    of JSON values only (always so from the wire), with objects or arrays nested in it, is copied by an
    orjson round trip instead: the same values pydantic gives (a tuple a list, NaN and infinities None),
    in about a third of the time, and its JSON's length is kept (ResultBody). Inert, and pydantic dumps
    it as before, when orjson would spell it differently (it raises), when its top level holds no object
    or array (`{"content": text}`), or when strings outweigh structure (over _STRING_HEAVY_BYTES per
    object/array): pydantic hands those strings over without a copy.

    `structured_from_json` (CallInfo.structured_from_json: a downstream answer's structuredContent, parsed
    from JSON) skips the copy: those values are JSON's own already, and the shaper never changes a body
    in place, so the body holds the result's own object. The one value JSON's parse can give that the
    dump would not is a NaN or infinity (non-standard, accepted by the SDK's parser): it stays a float,
    where the dump gives None; each serialisation of the body (the ledger's canonical bytes, the sizes)
    still spells it null.
    """
    structured = result.structured_content
    container = isinstance(structured, (dict, list)) and "structured_content" in result.model_fields_set
    if container and structured_from_json:
        return _with_structured(result, structured)
    raw = None
    if container and any(isinstance(value, (dict, list, tuple)) for value in _top_values(structured)):
        try:
            raw = orjson.dumps(structured, option=_NATIVE_ONLY)
        except orjson.JSONEncodeError:
            raw = None
        if raw is not None and len(raw) > _STRING_HEAVY_BYTES * (raw.count(b"{") + raw.count(b"[")):
            raw = None
    if raw is None:
        return _with_types(result, ResultBody(result.model_dump(by_alias=True, mode="json", exclude_unset=True)))
    out = _with_structured(result, orjson.loads(raw))
    out.keep_structured_json(raw)
    return out


def _with_structured(result: types.CallToolResult, structured: Any) -> ResultBody:
    """pydantic's dump of the other fields, with `structured` as structuredContent in its place."""
    rest = result.model_dump(by_alias=True, mode="json", exclude_unset=True, exclude={"structured_content"})
    body = ResultBody({})
    for key, value in rest.items():  # the fields' order: _meta, content, structuredContent, isError, ...
        body[key] = value
        if key == "content":
            body["structuredContent"] = structured
    body.setdefault("structuredContent", structured)
    return _with_types(result, body)


def _with_types(result: types.CallToolResult, body: ResultBody) -> ResultBody:
    # `content` is a required field, so the dump always carries one entry per block
    for block, dumped in zip(result.content, body.get("content") or [], strict=True):
        dumped.setdefault("type", block.type)  # a default when built in code, always on the wire
    return body


def _top_values(value: dict[str, Any] | list[Any]) -> Any:
    return value.values() if isinstance(value, dict) else value


def is_multimodal(result: types.CallToolResult) -> bool:
    for block in result.content:
        if isinstance(block, (types.ImageContent, types.AudioContent)):
            return True
        if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.BlobResourceContents):
            return True
    return False


def json_chars(value: Any) -> int:
    """Length of `value`'s compact JSON; 0 for None (a field not sent)."""
    return 0 if value is None else len(orjson.dumps(value))


def _structured_measure(body: dict[str, Any]) -> tuple[int, int]:
    """(bytes, characters) of the structuredContent's compact JSON, (0, 0) without one; kept by a ResultBody."""
    if isinstance(body, ResultBody):
        return body.structured_size()
    value = body.get("structuredContent")
    if value is None:
        return 0, 0
    raw = orjson.dumps(value)
    return len(raw), chars_of_json(raw)


def _structured_chars(body: dict[str, Any]) -> int:
    """len(orjson.dumps(structuredContent)) (0 without one), serialised once per ResultBody."""
    return _structured_measure(body)[0]


def channel_sizes(body: dict[str, Any]) -> ChannelSizes:
    """The channels a client reads of `body` (clients.ChannelSizes), its structuredContent measured once."""
    return ChannelSizes.of(body, structured_chars=_structured_measure(body)[1])


def visible_chars(body: dict[str, Any]) -> int:
    """Characters the model reads of one result: the larger of its two channels.

    Clients differ: Claude Code shows structuredContent when a result has it, others show the text
    blocks. Pricing the larger channel never undercounts what any client puts in front of its model.
    """
    return max(sum(len(t) for t in text_blocks(body)), _structured_chars(body))


def sent_chars(body: dict[str, Any]) -> int:
    """Characters the client receives for one result: text blocks + structuredContent + _meta (JSON).

    This is the size `policy.client_max_result_chars` bounds, and what stats and metrics count.
    """
    return sum(len(t) for t in text_blocks(body)) + _structured_chars(body) + json_chars(body.get("_meta"))


def recall_chars(body: dict[str, Any]) -> int:
    """Length of the text recall_tool_result pages through (tools/recall.py): the text blocks joined
    by newlines, or the structuredContent JSON when there is no text. The stub states this size."""
    texts = text_blocks(body)
    if texts:
        return sum(len(t) for t in texts) + len(texts) - 1
    return _structured_chars(body)


def structured_repeats_text(body: dict[str, Any]) -> bool:
    """structuredContent carries nothing the text does not: the JSON the one text block holds,
    or an object whose only value is that text (server-filesystem's `{"content": text}`).

    "Holds" is `parse_json_text(text) == structuredContent`, decided without parsing the text when
    cheaper tests settle it. Only an object or an array can equal what parse_json_text returns, and
    only the one its first char opens. A text that is byte for byte the orjson serialisation of a
    ResultBody's structuredContent (compact: JSON.stringify(x); or 2-space indented: JSON.stringify(x,
    null, 2), the Python SDK's text for structured output) holds it: orjson's round trip is exact on
    JSON-native values. Any other spelling (Python's `", "` separators, another indent, keys in
    another order, an escaped `é`, `1.0` for `1`) is parsed and compared.
    """
    structured = body.get("structuredContent")
    texts = text_blocks(body)
    if structured is None or len(texts) != 1:
        return False
    text = texts[0]
    if isinstance(structured, dict) and len(structured) == 1 and next(iter(structured.values())) == text:
        return True
    # parse_json_text returns an object for a text opening with "{", an array for "[", else None
    if not isinstance(structured, (dict, list)):
        return False
    if lstripped_head(text, 1) != ("{" if isinstance(structured, dict) else "["):
        return False
    if isinstance(body, ResultBody) and body.spells_structured():
        return True
    return bool(parse_json_text(text) == structured)


def text_spells_structured(body: ResultBody) -> bool:
    """`body.spells_structured()` (ResultBody)."""
    return body.spells_structured()
