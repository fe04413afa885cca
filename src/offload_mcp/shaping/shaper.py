"""ResultShaper: one downstream result through reducers -> policy -> ledger -> bytes for the client.

`_shape` reads as decide -> apply -> commit: `_decide` reduces and judges (a `_Plan`), `_apply` builds
what the client would get and drafts the report, `_commit` writes the ledger before anything that
needs it leaves (see the package docstring for the order and what happens when the ledger fails).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
import orjson

from ..catalog.deferral import max_result_size_chars
from ..config import OffloadSettings
from ..policy.policy import Decision, PolicyInput, ResultPolicy
from ..policy.stub import stub_object
from ..record import DecisionEvent
from ..reducers.base import ReduceContext
from ..reducers.pipeline import Pipeline, PipelineResult, ReducerEvent, build_pipeline
from ..reducers.settings import ReducerSettings
from ..session import SessionMemory, is_anonymous
from ..store import BodyRecord, Ledger, LedgerError, LedgerUnavailable, LedgerWriteError
from ..tools.names import ALWAYS_LISTED
from ..upstream.stored_resources import link_for
from .body import (
    ResultBody,
    channel_sizes,
    dump_result,
    is_multimodal,
    json_chars,
    sent_chars,
    structured_repeats_text,
    visible_chars,
)
from .pricer import StubPricer
from .report import CallInfo, ShapeReport
from .unstored import META_KEEP_CHARS, cut_unstored, ledger_problem_for_client

log = logging.getLogger(__name__)

_MAX_SESSIONS = 1024

INLINE_MAX_CHARS = 1024
"""Results up to this size may be shaped on the caller's thread (`shape_without_blocking`): shaping a
few hundred chars costs less than a worker-thread hop and its two event-loop wake-ups."""


def _load_pipeline(reducer_settings: ReducerSettings) -> Pipeline | None:
    try:
        return build_pipeline(reducer_settings)
    except Exception:
        log.exception("building the reducer pipeline failed: results are not reduced")
        return None


def _clearly_over_inline(result: types.CallToolResult) -> bool:
    """True for a result certainly over `INLINE_MAX_CHARS` of `sent_chars`, told without `dump_result`:
    its text blocks alone, or with structuredContent's compact JSON as orjson spells it. A large result
    then goes to the worker thread before anything is dumped on the event loop (where a large dump
    would be thrown away). False is no promise: `_shape` then measures exactly."""
    chars = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))
    if chars > INLINE_MAX_CHARS:
        return True
    if result.structured_content is None:
        return False
    try:
        return chars + len(orjson.dumps(result.structured_content)) > INLINE_MAX_CHARS
    except (TypeError, orjson.JSONEncodeError):
        return True  # not JSON-native: the worker thread dumps it as pydantic does


KEPT_ON_PURPOSE = frozenset({"disabled", "multimodal", "own_tool"})
"""Policy reasons that keep a result whole whatever its size (no client bound applies)."""

_INLINE_WHOLE = frozenset({"small", "below_large"})
"""Policy reasons that keep a result inline for its size alone: a reduction without the windowing
reducers that ends there is shown whole rather than windowed."""


@dataclass
class _Arrival:
    """One result as it arrived, and what the shaper knows of it before deciding."""

    call: CallInfo
    result: types.CallToolResult
    body: ResultBody
    chars_in: int
    own: bool
    """A result of the proxy's own tools: never reduced or offloaded."""
    multimodal: bool

    def dump(self, result: types.CallToolResult) -> ResultBody:
        """`result` (this one, or one made from it) dumped as this one was."""
        return dump_result(result, structured_from_json=self.call.structured_from_json)

    @functools.cached_property
    def structured_repeats(self) -> bool:
        """Its structuredContent only repeats its text, so it may go with the text: when the text is cut
        (the text then carries the data, with markers) or when the pair would not fit the client. With
        an outputSchema it must stay (validating clients require it). Asked only when it matters: an
        offloaded 1 MB JSON text is then not parsed here at all (build_stub parses it once for the index)."""
        return (
            not self.own
            and not self.multimodal
            and self.call.output_schema is None
            and structured_repeats_text(self.body)
        )


@dataclass
class _Plan:
    """What was decided for one result: the reduction, the candidate the policy judged, its decision."""

    ctx: ReduceContext
    runs: list[PipelineResult]
    stash: dict[str, str]
    events: list[ReducerEvent]
    shows_markers: bool
    """The reducers cut the text behind markers (their stash is committed when the candidate is sent)."""
    candidate: types.CallToolResult
    decision: Decision
    pricer: StubPricer
    """The stub the gate priced: the one sent when the result is offloaded."""


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
        """The pipeline less the reducers that yield to offload (Reducer.yields_to_offload), judged first on a
        large result; None when none of them is configured."""
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
        body = dump_result(result, structured_from_json=call.structured_from_json)
        arrival = _Arrival(call, result, body, sent_chars(body), call.tool in ALWAYS_LISTED, is_multimodal(result))
        if not may_block and arrival.chars_in > INLINE_MAX_CHARS:
            return None
        plan = self._decide(arrival)
        out, report, bodies, stash = self._apply(arrival, plan)
        return self._commit(arrival, plan, report, out, bodies=bodies, stash=stash, may_block=may_block)

    def _decide(self, arrival: _Arrival) -> _Plan:
        """Reduce (unless the proxy's own tool answered), then one policy decision on what the client
        would get: the reduced text, without a structuredContent that only repeats it."""
        call, result = arrival.call, arrival.result
        memory = self.session_memory(call.session_id)
        cpt = self.settings.policy.chars_per_token
        ctx = ReduceContext(tool=call.tool, arguments=dict(call.arguments), session=memory, chars_per_token=cpt)
        reduced, runs = ([], []) if arrival.own else self._reduce_before_policy(arrival, ctx)
        stash: dict[str, str] = {}
        events: list[ReducerEvent] = []
        for run in runs:
            stash.update(run.stash)
            events.extend(run.events)
        shows_markers = bool(reduced and stash)
        candidate = result.model_copy(update={"content": reduced}) if shows_markers else result
        if candidate is not result and arrival.structured_repeats:
            candidate = candidate.model_copy(update={"structured_content": None})
        gated = not arrival.own and not arrival.multimodal and self.settings.policy.enabled
        pricer = StubPricer(self.settings, self.policy, call, result, arrival.body, gated=gated)
        decision, candidate = self._judge(arrival, candidate, pricer)
        return _Plan(ctx, runs, stash, events, shows_markers, candidate, decision, pricer)

    def _judge(
        self, arrival: _Arrival, candidate: types.CallToolResult, pricer: StubPricer
    ) -> tuple[Decision, types.CallToolResult]:
        """The policy's decision on `candidate` (the gate prices `pricer`'s stub), and the candidate it
        judged. Kept over the client bound, a structuredContent that repeats the text goes first; when
        both channels together still exceed what the client accepts, the client bound decides."""
        body = arrival.body if candidate is arrival.result else arrival.dump(candidate)
        chars = visible_chars(body)
        decision = self.policy.decide(self._policy_input(arrival, chars, pricer))
        limit = self.settings.policy.client_max_result_chars
        if decision.offload or decision.reason in KEPT_ON_PURPOSE or not limit or sent_chars(body) <= limit:
            return decision, candidate
        if candidate.structured_content is not None and arrival.structured_repeats:
            candidate = candidate.model_copy(update={"structured_content": None})
            body = arrival.dump(candidate)
        if sent_chars(body) > limit:
            decision = self.policy.decide(self._policy_input(arrival, sent_chars(body), pricer))
        return decision, candidate

    @staticmethod
    def _policy_input(arrival: _Arrival, chars: int, pricer: StubPricer) -> PolicyInput:
        return PolicyInput(
            chars=chars, multimodal=arrival.multimodal, own_tool=arrival.own, stub_chars=pricer.visible_chars(chars)
        )

    def _apply(
        self, arrival: _Arrival, plan: _Plan
    ) -> tuple[types.CallToolResult, ShapeReport, list[BodyRecord], dict[str, str]]:
        """What enforce mode sends (the stub, the candidate, or the result), its draft report, and what
        the ledger must hold before it is sent (the body of an offloaded result, the reducers' stash)."""
        call, result, body, chars_in = arrival.call, arrival.result, arrival.body, arrival.chars_in
        cpt = self.settings.policy.chars_per_token
        report = ShapeReport(
            verdict="keep",
            reason=plan.decision.reason,
            decision=plan.decision,
            mode=self.settings.mode,
            chars_in=chars_in,
            chars_out=chars_in,
            tokens_in=chars_in / cpt,
            tokens_out=chars_in / cpt,
            reducer_events=plan.events,
            raw_channels=channel_sizes(body),
            declared_by_proxy=self.declared_by_proxy,
        )
        if body.get("structuredContent") is not None:
            report.structured = "kept"
        out: types.CallToolResult = result
        bodies: list[BodyRecord] = []
        stash: dict[str, str] = {}
        if plan.decision.offload:
            record, stub = plan.pricer.built()
            out, bodies = self._stub(call, result, body, record, report, stub), [record]
            report.verdict, report.trm_id = "offload", record.trm_id
        elif plan.candidate is not result:
            out = plan.candidate
            if plan.shows_markers:
                stash = plan.stash
                report.verdict = "reduce"
                report.stash_hashes = sorted(plan.stash)
            if out.structured_content is None and arrival.structured_repeats:
                report.structured = "dropped_duplicate"
        out_body = arrival.dump(out) if out is not result else body
        report.chars_out = sent_chars(out_body) if out is not result else chars_in
        report.tokens_out = report.chars_out / cpt
        report.shaped_channels = channel_sizes(out_body) if out is not result else report.raw_channels
        return out, report, bodies, stash

    def _commit(
        self,
        arrival: _Arrival,
        plan: _Plan,
        report: ShapeReport,
        out: types.CallToolResult,
        *,
        bodies: list[BodyRecord],
        stash: dict[str, str],
        may_block: bool,
    ) -> tuple[types.CallToolResult, ShapeReport] | None:
        """Record the decision (and in enforce mode what `out` needs stored) and say what the client gets:
        `out` once committed; the result, unmodified or cut to the client's limit, when the ledger could
        not take it; in observe mode the result as it came. None before any effect when the commit would
        have to block and `may_block` is False."""
        call, result = arrival.call, arrival.result
        if self.settings.mode == "observe":
            cpt = self.settings.policy.chars_per_token
            report.would_be, report.verdict = report.verdict, "keep"
            report.would_chars_out = report.chars_out
            report.chars_out, report.tokens_out = arrival.chars_in, arrival.chars_in / cpt
            self._record(call, report, bodies=[], stash={})
            self._remember(plan.runs, plan.ctx, offloaded=report.would_be == "offload")
            return result, report
        needs_ledger = bool(bodies or stash)
        if needs_ledger and not may_block:
            return None  # the commit (SQLite, PostgreSQL) must not run on the caller's event loop
        if needs_ledger and self.ledger is None:
            self._fall_back(report, "no_ledger", "no ledger is open, so nothing can be stored for recall")
            return self._unstored(call, result, arrival.body, report), report
        committed = self._record(call, report, bodies=bodies, stash=stash, required=needs_ledger)
        if needs_ledger and not committed:
            out = self._unstored(call, result, arrival.body, report)
            if self.ledger is not None and self.ledger.writable:
                self.ledger.record_later(report.record(call).ledger_event())  # stats hear why, once it answers
            return out, report
        self._remember(plan.runs, plan.ctx, offloaded=report.verdict == "offload")
        return out, report

    # ---- steps --------------------------------------------------------------

    def _reduce_before_policy(self, arrival: _Arrival, ctx: ReduceContext) -> tuple[list[Any], list[PipelineResult]]:
        """The reduction the policy judges: without the reducers that yield to offload (collapse,
        smartcrush) when that is offloaded or kept under the large pre-filter, else the full pipeline.

        Reducers only shrink, so below the large pre-filter offload is out of reach and the full
        pipeline runs once. At or above it the pipeline without collapse runs first; when the policy
        offloads that, its work is final and a 1 MB result pays for one pass, not two. When it keeps
        that below the pre-filter (tabulate re-encoded a 60K array to 25K) and the result is within the
        client's limit, the model sees every row inline at a size the policy keeps anyway: smartcrush's
        or collapse's window would only hide the rows an agent goes on to use.
        """
        result = arrival.result
        if self.pipeline_before_collapse is None or arrival.chars_in < self.settings.policy.large_threshold_chars:
            return self._reduce(result, ctx, self.pipeline)
        decided = self._offload_before_reducing(arrival, ctx)
        if decided is not None:
            return [], [decided]
        reduced, runs = self._reduce(result, ctx, self.pipeline_before_collapse)
        candidate = result.model_copy(update={"content": reduced}) if reduced else result
        chars = visible_chars(arrival.dump(candidate))
        decision = self.policy.decide(PolicyInput(chars=chars, multimodal=arrival.multimodal, own_tool=False))
        if decision.offload or (decision.reason in _INLINE_WHOLE and self._within_client_limit(arrival.chars_in)):
            return reduced, runs
        return self._reduce(result, ctx, self.pipeline)

    def _within_client_limit(self, chars: int) -> bool:
        """Whether a result this size reaches the client whole: above the limit a reduction's marker would
        expand to more than the client takes, and a stub's sliced recall serves it better."""
        limit = self.settings.policy.client_max_result_chars
        return not limit or chars <= limit

    def _offload_before_reducing(self, arrival: _Arrival, ctx: ReduceContext) -> PipelineResult | None:
        """A pipeline result that records "offload decided first", or None when the reducers must run.

        When even the floor the reducers could reach (Pipeline.floor_chars) is offloaded, their outcome
        cannot change the decision: they are skipped (their time on a large log is many times the
        floor's), and the original is stored.
        """
        result, chars_in, multimodal = arrival.result, arrival.chars_in, arrival.multimodal
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

    def _stub(
        self,
        call: CallInfo,
        result: types.CallToolResult,
        body: dict[str, Any],
        record: BodyRecord,
        report: ShapeReport,
        stub: str,
    ) -> types.CallToolResult:
        """Text: the stub. structuredContent (when the result had one, or the tool promises one): the stub
        object with the same text, so a client that shows only that channel still sees the id, what is
        missing and the call that gets it. `_meta` stays when small."""
        # The link lets a host read the whole body as a resource (offload://result/trm_...) without the model.
        content: list[Any] = [types.TextContent(text=stub)]
        if self.settings.policy.resource_link:
            content.append(link_for(record.trm_id, body))
        update: dict[str, Any] = {"content": content}
        if result.structured_content is not None or call.output_schema is not None:
            update["structured_content"] = stub_object(record.trm_id, stub)
            report.structured = "stub"
        if result.meta is not None and json_chars(body.get("_meta")) > META_KEEP_CHARS:
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
        shaper.ledger_problem = ledger_problem_for_client(err, settings, ledger_path)
        return shaper
    return ResultShaper(settings, ledger)
