"""The seam between forwarding and economics: shape one downstream result.

The server calls `ResultShaper.shape` once per downstream tool result, on
arrival, in a worker thread (SQLite is synchronous). Order:

1. reducers (reducers/pipeline.py) on each text block; image, audio and
   resource blocks pass untouched;
2. the result policy (policy/) on the reduced size: one decision, one reason.
   collapse (and smartcrush: Reducer.yields_to_offload) is the last resort for an
   oversized output *nothing more specific handled* (seed 002); at this seam offload is the more specific handler, so
   when collapse acted, the policy first judges the output as reduced without
   collapse, and an offload decision there wins: the model gets a stub with a
   structural index and sliced recall instead of a head/tail window whose
   expand would return the whole body at once; so does a keep under the
   large pre-filter (that reduction is small enough to show every row);
3. one ledger transaction: the ORIGINAL body when offloaded (never the
   reduced text), the reducer stash when markers are shown, and the decision
   event;
4. only after that commit: the stub or the reduced text goes to the client,
   and the pipeline's session memory (dedup history) is updated.

When the ledger cannot be written (or does not answer within its deadline) the
original result goes back unmodified and a warning names the cause: never a stub
or marker without its body. A result larger than the client accepts
(`client_max_result_chars`) is cut to it instead (`cut_unstored`), with a note in
the text and in `_meta` that the rest was not stored and the call can be repeated:
sent whole, the client would reject it and it would be lost.
`mode: observe` computes everything, records what would have happened, and
returns the result unchanged. Results of the proxy's own tools are never
reduced or offloaded.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
import orjson

from .catalog.deferral import max_result_size_chars
from .clients import ChannelSizes, chars_of_json
from .config import OffloadSettings
from .policy.describe import parse_json_text
from .policy.policy import Decision, PolicyInput, ResultPolicy
from .policy.stub import build_stub, stub_object, text_blocks
from .policy.textscan import lstripped_head
from .record import DecisionEvent, Mode, ShapeVerdict
from .reducers.base import ReduceContext, SessionMemory, is_anonymous
from .reducers.pipeline import Pipeline, PipelineResult, ReducerEvent, build_pipeline
from .reducers.settings import ReducerSettings
from .server.stored_resources import link_for
from .store import BodyRecord, Ledger, LedgerError, LedgerUnavailable, LedgerWriteError
from .tool_names import ALWAYS_LISTED

log = logging.getLogger(__name__)

_MAX_SESSIONS = 1024

INLINE_MAX_CHARS = 1024
"""Results up to this size may be shaped on the caller's thread (`shape_without_blocking`): shaping a
few hundred chars takes ~20-30 us, a worker-thread hop ~45 us plus two event-loop wake-ups."""


@dataclass(frozen=True)
class CallInfo:
    """What the shaper knows about the call that produced a result."""

    server: str
    tool: str
    """The name the client called (prefixed if the catalog prefixed it)."""
    downstream_tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    session_id: str = "default"
    output_schema: dict[str, Any] | None = None
    owner: str | None = None
    """The ledger ownership key of the caller (server/identity.py); None: the session id."""
    structured_from_json: bool = False
    """The result's structuredContent was parsed from JSON (a downstream server's answer), so its values
    are JSON's own and the shaper reads it without a copy (dump_result)."""
    client: str | None = None
    """The `clientInfo.name` the calling client declared at initialize (recorded for client-aware accounting)."""
    declared_by_tool: int | None = None
    """The `anthropic/maxResultSizeChars` the downstream tool declares itself."""


@dataclass
class ShapeReport:
    """The shaper's working draft of one decision; `record()` freezes it into the DecisionEvent everyone reads."""

    verdict: ShapeVerdict
    """What the client got: `offload` (a stub), `reduce` (markers), `keep` (unchanged)."""
    reason: str
    """The policy's reason code, or the shaper's override (`output_schema`, `ledger_error`, `no_ledger`)."""
    decision: Decision
    mode: Mode
    chars_in: int
    chars_out: int
    tokens_in: float
    tokens_out: float
    reducer_events: list[ReducerEvent] = field(default_factory=list)
    trm_id: str | None = None
    stash_hashes: list[str] = field(default_factory=list)
    structured: str | None = None
    """What happened to structuredContent: `stub` (the stub object), `dropped_duplicate` (it repeated
    the text, which now carries the reduced data), `kept`, or None (the result had none)."""
    warning: str | None = None
    would_be: ShapeVerdict | None = None
    """In observe mode: the verdict enforce mode would have produced."""
    would_chars_out: int | None = None
    """In observe mode: what enforce mode would have sent."""
    raw_channels: ChannelSizes | None = None
    """The channels a client reads of the result as the server sent it."""
    shaped_channels: ChannelSizes | None = None
    """The same of what enforce mode sent or would have sent."""
    declared_by_proxy: int | None = None
    """The `anthropic/maxResultSizeChars` the proxy declares on downstream tools (catalog/deferral.py)."""
    recorded: DecisionEvent | None = None
    """The record committed to the ledger, while the draft has not changed since (a fall-back clears it)."""

    def record(self, call: CallInfo) -> DecisionEvent:
        if self.recorded is not None:
            return self.recorded
        return DecisionEvent(
            session_id=call.session_id,
            owner=call.owner if call.owner and call.owner != call.session_id else None,
            server=call.server,
            tool=call.downstream_tool,
            listed_tool=call.tool,
            mode=self.mode,
            verdict=self.verdict,
            reason=self.reason,
            decision=self.decision,
            chars_in=self.chars_in,
            chars_out=self.chars_out,
            tokens_in=round(self.tokens_in, 1),
            tokens_out=round(self.tokens_out, 1),
            reducer_events=self.reducer_events,
            trm_id=self.trm_id,
            stash_hashes=self.stash_hashes,
            structured=self.structured,
            warning=self.warning,
            would_be=self.would_be,
            would_chars_out=self.would_chars_out,
            client=call.client,
            raw_channels=self.raw_channels,
            shaped_channels=self.shaped_channels,
            declared_by_tool=call.declared_by_tool,
            declared_by_proxy=self.declared_by_proxy,
        )


def _load_pipeline(reducer_settings: ReducerSettings) -> Pipeline | None:
    try:
        return build_pipeline(reducer_settings)
    except Exception:
        log.exception("building the reducer pipeline failed: results are not reduced")
        return None


class DumpedBody(dict[str, Any]):
    """A result as `dump_result` dumped it: JSON-native values only (mode="json": no tuple, NaN or
    infinity; a structuredContent parsed from JSON may hold a NaN, see dump_result), read and never
    changed in place by the shaper. It keeps the length of its structuredContent's compact JSON once
    measured, so pricing one result serialises a large structuredContent once (sent_chars,
    visible_chars and recall_chars share it: ~1.3 ms per MB of records per serialisation saved; none
    at all when dump_result's orjson round trip measured it), and whether its text spells that
    structuredContent (text_spells_structured, asked by the policy and the stub). The JSON-native
    guarantee lets structured_repeats_text trust an orjson round trip. Inert for a result without
    structuredContent (nothing to keep)."""

    __slots__ = ("_structured_chars", "_text_spells_structured")

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body)
        self._structured_chars: tuple[Any, int, int] | None = None
        """(structuredContent, bytes, characters) of its compact JSON."""
        self._text_spells_structured: tuple[Any, str | None, bool] | None = None


_NATIVE_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
"""orjson raises on what pydantic's mode="json" would convert its own way (dates, dataclasses, subclasses
of str/int/dict/list; and, with no option, sets, bytes, Decimal, models, non-str keys, ints over 64 bits)."""


_STRING_HEAVY_BYTES = 256
"""Mean bytes of JSON per object or array over which pydantic dumps a structuredContent: it hands strings
over by reference (a 4 MB `{"content": text}` in ~0.05 ms), where an orjson round trip copies them."""


def dump_result(result: types.CallToolResult, *, structured_from_json: bool = False) -> DumpedBody:
    """The result as the downstream sent it: wire names, only the fields it set (plus each block's `type`).

    pydantic's mode="json" dump visits every value of structuredContent in Python (~15 ms per MB of
    records). A structuredContent of JSON values only (always so from the wire), with objects or arrays
    nested in it, is copied by an orjson round trip instead: the same values pydantic gives (a tuple a
    list, NaN and infinities None), ~5 ms per MB of records, and its JSON's length is kept (DumpedBody).
    Inert, and pydantic dumps it as before, when orjson would spell it differently (it raises), when
    its top level holds no object or array (`{"content": text}`), or when strings outweigh structure
    (over _STRING_HEAVY_BYTES per object/array): pydantic hands those strings over without a copy.

    `structured_from_json` (CallInfo.structured_from_json: a downstream answer's structuredContent, parsed
    from JSON) skips the copy: those values are JSON's own already, and the shaper never changes a body
    in place, so the body holds the result's own object (1 MB of records: ~5 ms of orjson.loads saved,
    ~20 ms at 4 MB). The one value JSON's parse can give that the dump would not is a NaN or infinity
    (non-standard, accepted by the SDK's parser): it stays a float, where the dump gives None; each
    serialisation of the body (the ledger's canonical bytes, the sizes) still spells it null.
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
        return _with_types(result, DumpedBody(result.model_dump(by_alias=True, mode="json", exclude_unset=True)))
    out = _with_structured(result, orjson.loads(raw))
    out._structured_chars = (out["structuredContent"], len(raw), chars_of_json(raw))
    return out


def _with_structured(result: types.CallToolResult, structured: Any) -> DumpedBody:
    """pydantic's dump of the other fields, with `structured` as structuredContent in its place."""
    rest = result.model_dump(by_alias=True, mode="json", exclude_unset=True, exclude={"structured_content"})
    body = DumpedBody({})
    for key, value in rest.items():  # the fields' order: _meta, content, structuredContent, isError, ...
        body[key] = value
        if key == "content":
            body["structuredContent"] = structured
    body.setdefault("structuredContent", structured)
    return _with_types(result, body)


def _with_types(result: types.CallToolResult, body: DumpedBody) -> DumpedBody:
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


def _json_chars(value: Any) -> int:
    return 0 if value is None else len(orjson.dumps(value))


def _structured_chars(body: dict[str, Any]) -> int:
    """len(orjson.dumps(structuredContent)) (0 without one), serialised once per DumpedBody: the key's value
    is checked by identity, so a structuredContent put in its place is measured anew. The length, not
    the bytes, is kept: a 4 MB bytes object kept alive through the shaping cost ~5 ms more in page faults
    of the allocations after it (canonical JSON, compression) than serialising twice."""
    return _structured_measure(body)[0]


def _structured_measure(body: dict[str, Any]) -> tuple[int, int]:
    """(bytes, characters) of the structuredContent's compact JSON, (0, 0) without one; kept on a DumpedBody."""
    value = body.get("structuredContent")
    if value is None:
        return 0, 0
    if not isinstance(body, DumpedBody):
        raw = orjson.dumps(value)
        return len(raw), chars_of_json(raw)
    kept = body._structured_chars
    if kept is None or kept[0] is not value:
        raw = orjson.dumps(value)
        kept = body._structured_chars = (value, len(raw), chars_of_json(raw))
    return kept[1], kept[2]


def channel_sizes(body: dict[str, Any]) -> ChannelSizes:
    """The channels a client reads of `body` (clients.ChannelSizes), its structuredContent measured once."""
    return ChannelSizes.of(body, structured_chars=_structured_measure(body)[1])


def visible_chars(body: dict[str, Any]) -> int:
    """Characters the model reads of one result: the larger of its two channels.

    Clients differ: Claude Code shows structuredContent when a result has it, others show the text
    blocks. Pricing the larger channel never undercounts what any client puts in front of its model.
    """
    return max(sum(len(t) for t in text_blocks(body)), _structured_chars(body))


def _clearly_over_inline(result: types.CallToolResult) -> bool:
    """True for a result certainly over `INLINE_MAX_CHARS` of `sent_chars`, told without `dump_result`:
    its text blocks alone, or with structuredContent's compact JSON as orjson spells it. A large result
    then goes to the worker thread before anything is dumped on the event loop (a 1 MB JSON API result,
    records as text + structuredContent: ~15 ms of dump thrown away there, measured with py-spy).
    False is no promise: `_shape` then measures exactly."""
    chars = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))
    if chars > INLINE_MAX_CHARS:
        return True
    if result.structured_content is None:
        return False
    try:
        return chars + len(orjson.dumps(result.structured_content)) > INLINE_MAX_CHARS
    except (TypeError, orjson.JSONEncodeError):
        return True  # not JSON-native: the worker thread dumps it as pydantic does


def sent_chars(body: dict[str, Any]) -> int:
    """Characters the client receives for one result: text blocks + structuredContent + _meta (JSON).

    This is the size `policy.client_max_result_chars` bounds, and what stats and metrics count.
    """
    return sum(len(t) for t in text_blocks(body)) + _structured_chars(body) + _json_chars(body.get("_meta"))


def recall_chars(body: dict[str, Any]) -> int:
    """Length of the text recall_tool_result pages through (tools/recall.py): the text blocks joined
    by newlines, or the structuredContent JSON when there is no text. The stub states this size."""
    texts = text_blocks(body)
    if texts:
        return sum(len(t) for t in texts) + len(texts) - 1
    return _structured_chars(body)


_JSON_BLANKS = b" \t\n\r"
_JSON_BLANKS_STR = _JSON_BLANKS.decode()


def structured_repeats_text(body: dict[str, Any]) -> bool:
    """structuredContent carries nothing the text does not: the JSON the one text block holds,
    or an object whose only value is that text (server-filesystem's `{"content": text}`).

    "Holds" is `parse_json_text(text) == structuredContent`, decided without parsing the text when
    cheaper tests settle it. Only an object or an array can equal what parse_json_text returns, and
    only the one its first char opens. A text that is byte for byte the orjson serialisation of a
    DumpedBody's structuredContent (compact: JSON.stringify(x); or 2-space indented: JSON.stringify(x,
    null, 2), the Python SDK's text for structured output) holds it: orjson's round trip is exact on
    JSON-native values. Any other spelling (Python's `", "` separators, another indent, keys in
    another order, an escaped `é`, `1.0` for `1`) is parsed and compared as before. On 1 MB of
    records the round trip costs ~1.5-3 ms where the parse and deep compare cost ~11-14 ms.
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
    if isinstance(body, DumpedBody) and text_spells_structured(body):
        return True
    return bool(parse_json_text(text) == structured)


def text_spells_structured(body: DumpedBody) -> bool:
    """The body's one text block is, but for blanks around it, orjson's compact or 2-space indented
    serialisation of its structuredContent (an object or array): then `parse_json_text(text)` equals
    the structuredContent, and the stub reads that instead of parsing the text (policy/stub.py: 1 MB
    of records, ~8 ms of parse for ~2 ms of this). False also when it cannot be serialised or the text
    is spelled another way (a parse decides). Decided once per body (and again if either channel is
    put in the body in place of the one it was decided on)."""
    structured = body.get("structuredContent")
    texts = text_blocks(body)
    kept = body._text_spells_structured
    if kept is not None and kept[0] is structured and len(texts) == 1 and kept[1] is texts[0]:
        return kept[2]
    spelled = False
    if isinstance(structured, (dict, list)) and len(texts) == 1:
        head = lstripped_head(texts[0], 2)
        if head[:1] == ("{" if isinstance(structured, dict) else "["):
            spelled = _spelled_by_orjson(body, texts[0], indented=head[1:] == "\n")
    body._text_spells_structured = (structured, texts[0] if len(texts) == 1 else None, spelled)
    return spelled


def _spelled_by_orjson(body: DumpedBody, text: str, *, indented: bool) -> bool:
    try:
        if not indented and text.isascii() and len(text.strip(_JSON_BLANKS_STR)) != _structured_chars(body):
            return False  # told by the compact length the sizes measured already (e.g. json.dumps's ", ")
        raw = orjson.dumps(body.get("structuredContent"), option=orjson.OPT_INDENT_2 if indented else None)
    except orjson.JSONEncodeError:
        return False
    if text.isascii() and len(text) < len(raw):
        return False
    # surrogatepass: a lone surrogate encodes to bytes valid UTF-8 never holds, so it cannot match
    return text.encode("utf-8", "surrogatepass").strip(_JSON_BLANKS) == raw


KEPT_ON_PURPOSE = frozenset({"disabled", "multimodal", "own_tool"})
"""Policy reasons that keep a result whole whatever its size (no client bound applies)."""

_INLINE_WHOLE = frozenset({"small", "below_large"})
"""Policy reasons that keep a result inline for its size alone: a reduction without the windowing
reducers that ends there is shown whole rather than windowed."""
_META_KEEP_CHARS = 2_000
"""A stub keeps the result's `_meta` up to this size; a larger one stays in the ledger only."""


class ResultShaper:
    """Reducers -> policy -> ledger -> bytes for the client. Sync; thread-safe."""

    def __init__(
        self,
        settings: OffloadSettings,
        ledger: Ledger | None = None,
        *,
        pipeline: Pipeline | None | Literal["auto"] = "auto",
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.policy = ResultPolicy(settings.policy)
        self.pipeline = _load_pipeline(settings.reducers) if pipeline == "auto" else pipeline
        self.pipeline_before_collapse = (
            self.pipeline.without_offload_yielders() if pipeline == "auto" and self.pipeline is not None else None
        )
        self._sessions: OrderedDict[str, SessionMemory] = OrderedDict()
        self._lock = threading.Lock()
        self._warned_no_ledger = False
        self.ledger_problem: str | None = None
        """Why `ledger` is None, when opening it failed (build_shaper): recall and expand say it."""
        # What enforce mode declares (observe mode declares nothing, but its records say what enforce would send).
        self.declared_by_proxy = max_result_size_chars(settings.model_copy(update={"mode": "enforce"}))

    # ---- session memory ---------------------------------------------------

    def session_memory(self, session_id: str) -> SessionMemory:
        """Dedup history of one client session (bounded: the least recent sessions are forgotten)."""
        if is_anonymous(session_id):
            # A stateless request has no history to share and none to keep (and must not evict real sessions').
            return SessionMemory()
        with self._lock:
            memory = self._sessions.get(session_id)
            if memory is None:
                memory = self._sessions[session_id] = SessionMemory()
                while len(self._sessions) > _MAX_SESSIONS:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(session_id)
            return memory

    # ---- shaping ------------------------------------------------------------

    def shape(self, call: CallInfo, result: types.CallToolResult) -> types.CallToolResult:
        return self.shape_with_report(call, result)[0]

    def shape_with_report(
        self, call: CallInfo, result: types.CallToolResult
    ) -> tuple[types.CallToolResult, DecisionEvent]:
        """The result for the client and its decision record (the one committed or queued to the ledger, if one is open)."""
        shaped = self._shape(call, result, may_block=True)
        assert shaped is not None  # may_block: every path ends in a result
        out, report = shaped
        return out, report.record(call)

    def shape_without_blocking(
        self, call: CallInfo, result: types.CallToolResult
    ) -> tuple[types.CallToolResult, DecisionEvent] | None:
        """`shape_with_report`, for a caller on an event loop: the same answer for a result of at most
        `INLINE_MAX_CHARS` whose decision needs no ledger write (kept, or observed: its event is queued
        for the background writer), else None before any effect, and the caller runs `shape_with_report`
        in a worker thread (a stub or markers wait for their commit there, never on the loop)."""
        if _clearly_over_inline(result):
            return None
        shaped = self._shape(call, result, may_block=False)
        if shaped is None:
            return None
        out, report = shaped
        return out, report.record(call)

    def _shape(
        self, call: CallInfo, result: types.CallToolResult, *, may_block: bool
    ) -> tuple[types.CallToolResult, ShapeReport] | None:
        """The result for the client and its draft record; None (nothing done yet) when `may_block` is
        False and the result is larger than `INLINE_MAX_CHARS` or its decision must be committed."""
        observe = self.settings.mode == "observe"
        own = call.tool in ALWAYS_LISTED
        multimodal = is_multimodal(result)
        dump = functools.partial(dump_result, structured_from_json=call.structured_from_json)
        body = dump(result)
        chars_in = sent_chars(body)
        if not may_block and chars_in > INLINE_MAX_CHARS:
            return None
        cpt = self.settings.policy.chars_per_token

        memory = self.session_memory(call.session_id)
        ctx = ReduceContext(tool=call.tool, arguments=dict(call.arguments), session=memory, chars_per_token=cpt)
        reduced, runs = ([], []) if own else self._reduce_before_policy(dump, result, ctx, multimodal, chars_in)
        stash: dict[str, str] = {}
        events: list[ReducerEvent] = []
        for run in runs:
            stash.update(run.stash)
            events.extend(run.events)
        # A structuredContent that only repeats the text goes when the text is cut (the text then carries
        # the data, with markers) or when the pair would not fit the client: one decision for both channels.
        # With an outputSchema it must stay (validating clients require it), so the policy judges it instead.
        # Asked only when it matters (a cut text, or a result kept over the client bound): an offloaded
        # 1 MB JSON text is then not parsed here at all (build_stub parses it once for the index).
        repeat = functools.cache(
            lambda: not own and not multimodal and call.output_schema is None and structured_repeats_text(body)
        )
        candidate = result.model_copy(update={"content": reduced}) if reduced and stash else result
        if candidate is not result and repeat():
            candidate = candidate.model_copy(update={"structured_content": None})
        candidate_body = body if candidate is result else dump(candidate)

        # The gate prices the stub this result would get (built once, here, and sent if it is offloaded).
        priced: list[tuple[BodyRecord, str]] = []

        def stub_chars(chars: int) -> int | None:
            if (
                own
                or multimodal
                or not self.settings.policy.enabled
                or chars < self.settings.policy.large_threshold_chars
            ):
                return None  # the gate is not reached
            if not priced:
                record = self._body_record(call, body)
                priced.append((record, self._stub_text(call, body, record)))
            return self._stub_visible_chars(call, result, *priced[0])

        chars = visible_chars(candidate_body)
        decision = self.policy.decide(
            PolicyInput(chars=chars, multimodal=multimodal, own_tool=own, stub_chars=stub_chars(chars))
        )
        limit = self.settings.policy.client_max_result_chars
        if (
            not decision.offload
            and decision.reason not in KEPT_ON_PURPOSE
            and limit
            and sent_chars(candidate_body) > limit
        ):
            if candidate.structured_content is not None and repeat():
                candidate = candidate.model_copy(update={"structured_content": None})
                candidate_body = dump(candidate)
            if sent_chars(candidate_body) > limit:
                # Both channels together exceed what the client accepts: the client bound decides.
                chars = sent_chars(candidate_body)
                decision = self.policy.decide(
                    PolicyInput(chars=chars, multimodal=multimodal, own_tool=own, stub_chars=stub_chars(chars))
                )
        report = ShapeReport(
            verdict="keep",
            reason=decision.reason,
            decision=decision,
            mode=self.settings.mode,
            chars_in=chars_in,
            chars_out=chars_in,
            tokens_in=chars_in / cpt,
            tokens_out=chars_in / cpt,
            reducer_events=events,
            raw_channels=channel_sizes(body),
            declared_by_proxy=self.declared_by_proxy,
        )
        if body.get("structuredContent") is not None:
            report.structured = "kept"

        out: types.CallToolResult = result
        bodies: list[BodyRecord] = []
        commit_stash: dict[str, str] = {}
        if decision.offload:
            record, stub = priced[0] if priced else (self._body_record(call, body), "")
            out, bodies = self._stub(call, result, body, record, report, stub), [record]
            report.verdict, report.trm_id = "offload", record.trm_id
        elif candidate is not result:
            out = candidate
            if reduced and stash:
                commit_stash = stash
                report.verdict = "reduce"
                report.stash_hashes = sorted(stash)
            if candidate.structured_content is None and repeat():
                report.structured = "dropped_duplicate"
        out_body = dump(out) if out is not result else body
        report.chars_out = sent_chars(out_body) if out is not result else chars_in
        report.tokens_out = report.chars_out / cpt
        report.shaped_channels = channel_sizes(out_body) if out is not result else report.raw_channels

        if observe:
            report.would_be, report.verdict = report.verdict, "keep"
            report.would_chars_out = report.chars_out
            report.chars_out, report.tokens_out = chars_in, chars_in / cpt
            self._record(call, report, bodies=[], stash={})
            self._remember(runs, ctx, offloaded=report.would_be == "offload")
            return result, report

        needs_ledger = bool(bodies or commit_stash)
        if needs_ledger and not may_block:
            return None  # the commit (SQLite, PostgreSQL) must not run on the caller's event loop
        if needs_ledger and self.ledger is None:
            self._fall_back(report, "no_ledger", "no ledger is open, so nothing can be stored for recall")
            return self._unstored(call, result, body, report), report
        committed = self._record(call, report, bodies=bodies, stash=commit_stash, required=needs_ledger)
        if needs_ledger and not committed:
            out = self._unstored(call, result, body, report)
            if self.ledger is not None and self.ledger.writable:
                self.ledger.record_later(report.record(call).ledger_event())  # stats hear why, once it answers
            return out, report
        self._remember(runs, ctx, offloaded=report.verdict == "offload")
        return out, report

    # ---- steps --------------------------------------------------------------

    def _reduce_before_policy(
        self,
        dump: Callable[[types.CallToolResult], DumpedBody],
        result: types.CallToolResult,
        ctx: ReduceContext,
        multimodal: bool,
        chars_in: int,
    ) -> tuple[list[Any], list[PipelineResult]]:
        """The reduction the policy judges: without collapse when that is offloaded or kept under the
        large pre-filter, else the full pipeline.

        Reducers only shrink, so below the large pre-filter offload is out of reach and the full
        pipeline runs once. At or above it the pipeline without collapse runs first; when the policy
        offloads that, its work is final and a 1 MB result pays for one pass, not two. When it keeps
        that below the pre-filter (tabulate re-encoded a 60K array to 25K) and the result is within the
        client's limit, the model sees every row inline at a size the policy keeps anyway: smartcrush's
        or collapse's window would only hide the rows an agent goes on to use (issue 38). `dump`: the call's dump_result (_shape's), so a
        candidate is dumped as the result was.
        """
        if self.pipeline_before_collapse is None or chars_in < self.settings.policy.large_threshold_chars:
            return self._reduce(result, ctx, self.pipeline)
        decided = self._offload_before_reducing(result, ctx, multimodal, chars_in)
        if decided is not None:
            return [], [decided]
        reduced, runs = self._reduce(result, ctx, self.pipeline_before_collapse)
        candidate = result.model_copy(update={"content": reduced}) if reduced else result
        decision = self.policy.decide(
            PolicyInput(chars=visible_chars(dump(candidate)), multimodal=multimodal, own_tool=False)
        )
        if decision.offload or (decision.reason in _INLINE_WHOLE and self._within_client_limit(chars_in)):
            return reduced, runs
        return self._reduce(result, ctx, self.pipeline)

    def _within_client_limit(self, chars: int) -> bool:
        """Whether a result this size reaches the client whole: above the limit a reduction's marker would
        expand to more than the client takes, and a stub's sliced recall serves it better."""
        limit = self.settings.policy.client_max_result_chars
        return not limit or chars <= limit

    def _offload_before_reducing(
        self, result: types.CallToolResult, ctx: ReduceContext, multimodal: bool, chars_in: int
    ) -> Any | None:
        """A pipeline result that records "offload decided first", or None when the reducers must run.

        When even the floor the reducers could reach (Pipeline.floor_chars) is
        offloaded, their outcome cannot change the decision: skip them, and the
        original is stored (a 1 MB log then costs ~1 ms here instead of ~70 ms).
        """
        pipeline = self.pipeline_before_collapse
        texts = [b.text for b in result.content if isinstance(b, types.TextContent) and b.text]
        if pipeline is None or not texts or len(texts) != len(result.content):
            return None
        policy = self.settings.policy
        enough = (
            policy.client_max_result_chars
            if policy.client_max_result_chars >= policy.large_threshold_chars
            else chars_in
        )
        floor = 0
        for text in texts:
            part = pipeline.floor_chars(text, ctx, enough - floor)
            if part is None:
                return None
            floor += part
        if not self.policy.decide(PolicyInput(chars=floor, multimodal=multimodal, own_tool=False)).offload:
            return None
        from .reducers.pipeline import PipelineResult, ReducerEvent

        events = [ReducerEvent(name, False, "offload_decided_first", chars_in, chars_in) for name in pipeline.names]
        return PipelineResult(texts[0] if len(texts) == 1 else "", {}, events, "", chars_in)

    def _reduce(
        self, result: types.CallToolResult, ctx: ReduceContext, pipeline: Pipeline | None
    ) -> tuple[list[Any], list[PipelineResult]]:
        """Reduced content blocks (empty when nothing changed) and the pipeline results."""
        if pipeline is None:
            return [], []
        blocks: list[Any] = []
        runs: list[PipelineResult] = []
        changed = False
        for block in result.content:
            if isinstance(block, types.TextContent) and block.text:
                try:
                    run = pipeline.run(block.text, ctx)
                except Exception:  # a reducer bug costs a missed saving, never the result
                    log.exception("reducer pipeline failed; block kept unchanged")
                    blocks.append(block)
                    continue
                runs.append(run)
                if run.text != block.text:
                    changed = True
                    blocks.append(block.model_copy(update={"text": run.text}))
                    continue
            blocks.append(block)
        return (blocks if changed else []), runs

    @staticmethod
    def _body_record(call: CallInfo, body: dict[str, Any]) -> BodyRecord:
        return BodyRecord.of(
            body,
            server=call.server,
            tool=call.downstream_tool,
            arguments=call.arguments,
            session_id=call.session_id,
            chars=recall_chars(body),
        )

    def _stub_text(self, call: CallInfo, body: dict[str, Any], record: BodyRecord) -> str:
        policy = self.settings.policy
        spelled = isinstance(body, DumpedBody) and text_spells_structured(body)
        return build_stub(
            text_json=(body["structuredContent"],) if spelled else None,
            trm_id=record.trm_id,
            tool=call.tool,
            body=body,
            chars=record.chars,
            chars_per_token=policy.chars_per_token,
            budget_tokens=policy.stub_tokens,
            recall_mode=self.settings.recall.mode,
            index_chars=self.policy.index_chars(record.chars),
        )

    @staticmethod
    def _stub_visible_chars(call: CallInfo, result: types.CallToolResult, record: BodyRecord, stub: str) -> int:
        """What the model reads of the stubbed result (visible_chars: the larger channel)."""
        if result.structured_content is not None or call.output_schema is not None:
            return max(len(stub), _json_chars(stub_object(record.trm_id, stub)))
        return len(stub)

    def _stub(
        self,
        call: CallInfo,
        result: types.CallToolResult,
        body: dict[str, Any],
        record: BodyRecord,
        report: ShapeReport,
        stub: str = "",
    ) -> types.CallToolResult:
        """Text: the stub. structuredContent (when the result had one, or the tool promises one): the stub
        object with the same text, so a client that shows only that channel still sees the id, what is
        missing and the call that gets it. `_meta` stays when small."""
        stub = stub or self._stub_text(call, body, record)
        # The link lets a host read the whole body as a resource (offload://result/trm_...) without the model.
        content: list[Any] = [types.TextContent(text=stub)]
        if self.settings.policy.resource_link:
            content.append(link_for(record.trm_id, body))
        update: dict[str, Any] = {"content": content}
        if result.structured_content is not None or call.output_schema is not None:
            update["structured_content"] = stub_object(record.trm_id, stub)
            report.structured = "stub"
        if result.meta is not None and _json_chars(body.get("_meta")) > _META_KEEP_CHARS:
            update["meta"] = None
        return result.model_copy(update=update)

    def _record(
        self,
        call: CallInfo,
        report: ShapeReport,
        *,
        bodies: list[BodyRecord],
        stash: dict[str, str],
        required: bool = False,
    ) -> bool:
        """Commit bodies + stash + the decision event in one transaction. False when a required commit failed."""
        if self.ledger is None:
            if not self._warned_no_ledger:
                log.warning("no ledger open: decisions are not recorded and nothing is offloaded")
                self._warned_no_ledger = True
            return not required
        report.recorded = report.record(call)
        event = report.recorded.ledger_event()
        if not (bodies or stash or required):
            self.ledger.record_later(event)  # guards no bytes: written off the call path
            return True
        try:
            self.ledger.commit(bodies=bodies, stash=stash, events=[event], owner=call.owner)
            return True
        except LedgerError as err:
            cause = err.cause if isinstance(err, LedgerWriteError) else str(err)
            if required:
                self._fall_back(report, "ledger_error", cause)
                log.warning("result of %s passed through unmodified: %s", call.tool, cause)
            else:
                log.warning("decision event for %s not recorded: %s", call.tool, cause)
            return not required

    def _fall_back(self, report: ShapeReport, reason: str, cause: str) -> ShapeReport:
        report.verdict, report.reason, report.warning, report.recorded = "keep", reason, cause, None
        report.trm_id, report.stash_hashes, report.structured = None, [], None
        report.chars_out, report.tokens_out = report.chars_in, report.tokens_in
        report.shaped_channels = report.raw_channels
        if reason == "no_ledger" and not self._warned_no_ledger:
            log.warning("no ledger open: results pass through unmodified (%s)", cause)
            self._warned_no_ledger = True
        return report

    def _unstored(
        self, call: CallInfo, result: types.CallToolResult, body: dict[str, Any], report: ShapeReport
    ) -> types.CallToolResult:
        """A result whose body the ledger could not take: unmodified when the client accepts its size, else
        cut to `client_max_result_chars` with a note (text and `_meta`) that the rest was not stored and
        the call can be repeated: sent whole, the client would reject it and the result would be lost."""
        limit = self.settings.policy.client_max_result_chars
        if not limit or report.chars_in <= limit:
            return result
        out = cut_unstored(result, body, limit, report.reason, output_schema=call.output_schema is not None)
        report.chars_out = sent_chars(dump_result(out))
        report.tokens_out = report.chars_out / self.settings.policy.chars_per_token
        report.warning = f"{report.warning}; cut to {report.chars_out} of {report.chars_in} characters"
        log.warning(
            "result of %s cut to %d of %d characters: %s", call.tool, report.chars_out, report.chars_in, report.reason
        )
        return out

    def _remember(self, runs: list[PipelineResult], ctx: ReduceContext, *, offloaded: bool) -> None:
        """Tell the pipeline what the model now has in its context (dedup history), after the commit."""
        if self.pipeline is None or offloaded:
            return
        for run in runs:
            try:
                self.pipeline.commit_session(run, ctx)
            except Exception:
                log.exception("pipeline.commit_session failed")


def _ledger_problem_for_client(
    err: LedgerUnavailable, settings: OffloadSettings, ledger_path: str | os.PathLike[str] | None
) -> str:
    """Why no ledger opened, as the model may read it (no_ledger): "the ledger", no URL, host or user."""
    from .redaction import ledger_for_client, redact_secrets
    from .store.location import resolve

    try:
        where = resolve(settings.ledger, ledger_path).display
    except LedgerUnavailable:
        return redact_secrets(str(err))
    return ledger_for_client(str(err), where)


UNSTORED_META_KEY = "offload-mcp/unstored"
"""`_meta` key of a result cut because the ledger could not store its body: why, and how much was shown."""

_UNSTORED_WHY = {
    "ledger_error": "the ledger could not store it",
    "no_ledger": "no ledger is open to store it",
}


def cut_unstored(
    result: types.CallToolResult, body: dict[str, Any], limit: int, reason: str, *, output_schema: bool = False
) -> types.CallToolResult:
    """`result` bounded to `limit` sent characters: its first text (at a line end when one is near), a note
    saying the rest is lost unless the call is repeated, and `_meta[UNSTORED_META_KEY]`. Other content
    blocks stay; structuredContent goes (it cannot be cut and stay valid), and when the tool declares an
    outputSchema the result becomes an error, which validating clients accept without it."""
    total = sent_chars(body)
    why = _UNSTORED_WHY.get(reason, "the ledger could not store it")
    meta = {UNSTORED_META_KEY: {"reason": reason, "chars": total, "shown": 0}}
    kept_meta = dict(result.meta or {}) if _json_chars(body.get("_meta")) <= _META_KEEP_CHARS else {}

    def note(shown: int) -> str:
        return (
            f"\n\n[offload-mcp: cut to the first {shown:,} of {total:,} characters: the full result is larger "
            f"than the client accepts ({limit:,}) and {why}, so it cannot be recalled. "
            "Repeat the call, with narrower arguments if it has them, to see the rest.]"
        )

    overhead = len(note(total)) + _json_chars({**kept_meta, **meta}) + 16
    budget = max(0, limit - overhead)
    blocks: list[Any] = []
    shown = 0
    for block in result.content:
        if not isinstance(block, types.TextContent):
            blocks.append(block)
            continue
        room = budget - shown
        if room <= 0:
            continue
        text = block.text
        if len(text) > room:
            line_end = text.rfind("\n", 0, room)
            text = text[: line_end + 1] if line_end >= room // 2 else text[:room]
        shown += len(text)
        blocks.append(block.model_copy(update={"text": text}))
    meta[UNSTORED_META_KEY]["shown"] = shown
    blocks.append(types.TextContent(text=note(shown).lstrip("\n")))
    update: dict[str, Any] = {"content": blocks, "structured_content": None, "meta": {**kept_meta, **meta}}
    if output_schema:
        update["is_error"] = True
    return result.model_copy(update=update)


def build_shaper(settings: OffloadSettings, ledger_path: str | os.PathLike[str] | None = None) -> ResultShaper:
    """The shaper the server uses: opens the ledger (path override from `--ledger`).

    If the ledger cannot be opened the shaper still forwards results
    unmodified (never a stub without a body) and logs why.
    """
    ledger: Ledger | None = None
    try:
        ledger = Ledger.open(settings.ledger, ledger_path, deadlines=True)
    except LedgerUnavailable as err:
        log.warning("%s; results will pass through unmodified", err)
        shaper = ResultShaper(settings, None)
        shaper.ledger_problem = _ledger_problem_for_client(err, settings, ledger_path)
        return shaper
    return ResultShaper(settings, ledger)
