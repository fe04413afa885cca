"""Corpus replay: every recorded tool output through the same shaper the server uses.

How it works: each record (`tool`, `call`, `output`, optional `traj`/`step`)
becomes a text CallToolResult shaped by `shaping.ResultShaper.shape_with_report`
as if it arrived in its trajectory's session (session id = `traj`), so dedup
history, the reducers, the policy and the ledger behave exactly as in
`serve`. Every record is then verified: a kept output must be byte-identical,
a reduced one must name a marker whose stash is the exact original, an
offloaded one must recall (by its `trm_` id) to the exact original body. A
record that fails is counted as unrecoverable (the run fails if any is).

Dollars (policy/economics.py, the terms the gate and stats use): a token saved
on an output is worth carry(1, H), H being the requests that carried it in its
trajectory (`last step - step + 1`: the later steps and the one that read it;
records without `traj`/`step` count the policy's `horizon`). Recalls are charged as measured: one recall hop
(`recall_input_tokens` in, `recall_output_tokens` out) per needed fact the
model could not see (behind a stub, cut by a reducer, or filed/rejected by the
client); the prior (`recall_probability` x a hop per offloaded output, what
`gate` and `stats` assume) is reported beside it as `recall_usd_prior`.

What the model sees: each result as sent goes through a client model
(analysis/clients.py; `plain` shows the text blocks, `claude-code` applies Claude Code's
structuredContent, file-to-disk and token-limit rules with the
`anthropic/maxResultSizeChars` the proxy declares). `chars_out`, tokens,
dollars and the needed facts (analysis/fidelity.py) are counted on that view; with a
client other than `plain`, `client_alone` gives the same figures for the
client receiving the raw outputs with no proxy.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
import orjson

from ..policy.economics import requests_carrying
from ..reducers.base import MARKER_RE
from .clients import ClientModel, ClientView, client_model
from .fidelity import FidelityReport, Observed, measure

if TYPE_CHECKING:
    from ..record import DecisionEvent
    from ..store.ledger import Ledger

BIG_OUTPUT_CHARS = 60_000
REFERENCE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5", "gpt-5")


class ReplayError(Exception):
    """A corpus file that cannot be replayed: names the file, line and problem."""


@dataclass(frozen=True)
class Record:
    line: int
    tool: str
    call: str
    output: str
    traj: str
    step: int | None
    is_error: bool = False
    structured: dict[str, Any] | None = None
    """The result's structuredContent, when the recorded server sent one."""


def read_records(path: str | os.PathLike[str], limit: int | None = None) -> list[Record]:
    """Parse a .jsonl or .jsonl.gz corpus; a bad line raises ReplayError naming it."""
    source = Path(path)
    try:
        raw = source.read_bytes()
    except OSError as err:
        raise ReplayError(f"{source}: cannot read: {err.strerror or err}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise ReplayError(f"{source}: not a readable gzip file: {err}") from None
    records: list[Record] = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        if limit is not None and len(records) >= limit:
            break
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            raise ReplayError(f"{source}:{number}: not valid JSON: {err}") from None
        if not isinstance(obj, dict):
            raise ReplayError(f"{source}:{number}: a record must be a JSON object")
        output, tool = obj.get("output"), obj.get("tool")
        if not isinstance(output, str):
            raise ReplayError(f"{source}:{number}: `output` must be a string")
        if not isinstance(tool, str) or not tool:
            raise ReplayError(f"{source}:{number}: `tool` must be a non-empty string")
        call = obj.get("call", "")
        if not isinstance(call, str):
            call = orjson.dumps(call).decode()
        step = obj.get("step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
            raise ReplayError(f"{source}:{number}: `step` must be an integer")
        traj = obj.get("traj")
        structured = obj.get("structured")
        if structured is not None and not isinstance(structured, dict):
            raise ReplayError(f"{source}:{number}: `structured` must be a JSON object (a structuredContent)")
        records.append(
            Record(
                number,
                tool,
                call,
                output,
                str(traj) if traj is not None else f"line{number}",
                step,
                bool(obj.get("is_error")),
                structured,
            )
        )
    return records


def call_arguments(call: str) -> dict[str, Any]:
    """The recorded call as MCP arguments: a JSON object as is, anything else as `command`."""
    if call.startswith("{"):
        try:
            value = orjson.loads(call)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    return {"command": call} if call else {}


@dataclass
class ReducerTally:
    acted: int = 0
    chars_removed: int = 0
    declined: Counter[str] = field(default_factory=Counter)


@dataclass
class ReplayReport:
    file: str
    records: int = 0
    chars_in: int = 0
    chars_out: int = 0
    big_records: int = 0
    big_chars_in: int = 0
    big_chars_out: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    decisions: Counter[str] = field(default_factory=Counter)
    reducers: dict[str, ReducerTally] = field(default_factory=dict)
    unrecoverable: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    chars_per_token: float = 4.0
    dollars: dict[str, dict[str, float]] = field(default_factory=dict)
    model: str = ""
    ledger: str | None = None
    client: str = "plain"
    fidelity: FidelityReport | None = None
    client_alone: dict[str, Any] | None = None
    client_limits: dict[str, Any] | None = None
    search_reach: dict[str, int] | None = None
    """Needed facts behind a stub, and how many one search with the fact's own text finds (`_search_reach`)."""

    def as_dict(self) -> dict[str, Any]:
        cpt = self.chars_per_token
        return {
            "file": self.file,
            "records": self.records,
            "chars_in": self.chars_in,
            "chars_out": self.chars_out,
            "tokens_in": round(self.chars_in / cpt),
            "tokens_out": round(self.chars_out / cpt),
            "reduction_pct": _pct(self.chars_in, self.chars_out),
            "big_outputs": {
                "min_chars": BIG_OUTPUT_CHARS,
                "records": self.big_records,
                "chars_in": self.big_chars_in,
                "chars_out": self.big_chars_out,
                "reduction_pct": _pct(self.big_chars_in, self.big_chars_out),
            },
            "verdicts": dict(sorted(self.verdicts.items())),
            "decisions": dict(sorted(self.decisions.items())),
            "reducers": {
                name: {"acted": t.acted, "chars_removed": t.chars_removed, "declined": dict(sorted(t.declined.items()))}
                for name, t in self.reducers.items()
            },
            "unrecoverable": len(self.unrecoverable),
            "unrecoverable_examples": self.unrecoverable[:10],
            "seconds": round(self.seconds, 3),
            "records_per_second": round(self.records / self.seconds, 1) if self.seconds else None,
            "mb_per_second": round(self.chars_in / 1e6 / self.seconds, 2) if self.seconds else None,
            "model": self.model,
            "dollars": self.dollars,
            "ledger": self.ledger,
            "client": self.client,
            "fidelity": self.fidelity.as_dict() if self.fidelity is not None else None,
            "client_alone": self.client_alone,
            "client_limits": self.client_limits,
            "search_reach": self.search_reach,
        }


def _pct(before: int, after: int) -> float:
    return round(100.0 * (before - after) / before, 2) if before else 0.0


def _text_of(result: types.CallToolResult) -> str | None:
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    return texts[0] if len(texts) == 1 and len(result.content) == 1 else None


def _verify(record: Record, out: types.CallToolResult, report: DecisionEvent, ledger: Ledger) -> str | None:
    """None when the record restores byte for byte, else what is missing."""
    verdict = report.verdict
    if verdict == "offload":
        if not report.trm_id:
            return "offloaded without a trm_ id"
        try:
            body = ledger.get_body(report.trm_id)
        except Exception as err:
            return f"recall of {report.trm_id} failed: {err}"
        blocks = body.get("content") or []
        if len(blocks) != 1 or blocks[0].get("text") != record.output:
            return f"recall of {report.trm_id} does not return the original"
        return None
    text = _text_of(out)
    if text is None:
        return "result is not a single text block"
    if text == record.output:
        return None
    hashes = MARKER_RE.findall(text)
    if not hashes:
        return "changed without a marker"
    for hash_ in hashes:
        try:
            if ledger.get_stash(hash_) == record.output:
                return None
        except Exception:
            continue
    return f"no marker of {hashes} expands to the original"


def _remaining_turns(records: list[Record], horizon: int) -> list[int]:
    last: dict[str, int] = {}
    for r in records:
        if r.step is not None:
            last[r.traj] = max(last.get(r.traj, r.step), r.step)
    # economics.requests_carrying: the later steps plus the request that read the output.
    return [
        requests_carrying(last[r.traj] - r.step) if r.step is not None and r.traj in last else horizon for r in records
    ]


def replay(
    records: list[Record],
    settings: Any,
    *,
    ledger_path: str | os.PathLike[str] | None = None,
    source: str = "",
    progress: Callable[[int], None] | None = None,
    models: tuple[str, ...] = (),
    client: str = "plain",
    dump: str | os.PathLike[str] | None = None,
) -> ReplayReport:
    """Shape every record with the server's shaper; verify restoration; count what `client` shows; tally.

    With `dump`, one JSON line per record (input order) says what the model was shown.
    """
    from ..catalog.deferral import max_result_size_chars
    from ..shaping import ResultShaper
    from ..store import Ledger

    viewer = client_model(client)
    if dump is not None:
        _check_writable(dump)  # fail before the replay, not after it
    declared = max_result_size_chars(settings)  # what the proxy declares on every downstream tool
    cpt = settings.policy.chars_per_token
    report = ReplayReport(file=source, chars_per_token=cpt, model=settings.policy.model, client=viewer.name)
    observed: list[Observed] = []
    shaped_all: list[Any] = []
    with _ledger_at(ledger_path) as path:
        ledger = Ledger.open(settings.ledger, path)
        report.ledger = str(ledger_path) if ledger_path else None
        try:
            shaper = ResultShaper(settings, ledger)
            started = time.perf_counter()
            for index, record in enumerate(records):
                seen, shaped = _replay_one(record, shaper, ledger, viewer, declared, report)
                observed.append(seen)
                shaped_all.append(shaped)
                if progress is not None:
                    progress(index + 1)
            report.fidelity = measure(observed, _reducer_blame(shaper, records, shaped_all))
            report.search_reach = _search_reach(ledger, observed, shaped_all, report.fidelity)
            if viewer.name != "plain":
                report.client_alone = _client_alone(records, viewer, cpt)
                report.client_limits = _client_limits(viewer, declared, observed, cpt)
            report.seconds = time.perf_counter() - started
        finally:
            ledger.close()
    saved_tokens = [(len(r.output) - len(o.seen)) / cpt for r, o in zip(records, observed, strict=True)]
    offloaded = [s.verdict == "offload" for s in shaped_all]
    report.dollars = _dollars(
        records, saved_tokens, offloaded, settings, models or (settings.policy.model,), hops=report.fidelity.hops
    )
    if dump is not None:
        _write_dump(dump, records, shaped_all, observed, report.fidelity)
    return report


def _replay_one(
    record: Record, shaper: Any, ledger: Any, viewer: ClientModel, declared: int | None, report: ReplayReport
) -> tuple[Observed, Any]:
    """Shape one record as the proxy would, check that it restores and tally it into `report`.

    Returns what the model saw of it and the shaper's report of it."""
    from ..shaping import CallInfo, dump_result

    call = CallInfo(
        server="replay",
        tool=record.tool,
        downstream_tool=record.tool,
        arguments=call_arguments(record.call),
        session_id=record.traj,
        structured_from_json=True,  # read from the file's JSON, as the proxy reads a server's answer
        # Recorded as the proxy records a client's clientInfo: a kept ledger (`--ledger`) then
        # counts against that client in `stats` and the dashboard. It changes no decision.
        client=None if viewer.name == "plain" else viewer.name,
    )
    result = types.CallToolResult(
        content=[types.TextContent(text=record.output)],
        is_error=record.is_error,
        structured_content=record.structured,
    )
    out, shaped = shaper.shape_with_report(call, result)
    raw_body = _raw_body(record)
    problem = _verify(record, out, shaped, ledger)
    if problem:
        report.unrecoverable.append(
            {"line": record.line, "tool": record.tool, "verdict": shaped.verdict, "problem": problem}
        )
    sent_body = dump_result(out)
    view = viewer.view(sent_body, tool=record.tool, declared_max_chars=declared)
    _tally(report, record, shaped, len(view.text))
    return (
        Observed(
            line=record.line,
            traj=record.traj,
            tool=record.tool,
            call=record.call,
            raw=_all_channels(raw_body),
            sent=viewer.channel(sent_body),
            seen=view.text,
            verdict=shaped.verdict,
            fate=view.fate,
            restorable=problem is None,
            raw_shown=viewer.channel(raw_body),
        ),
        shaped,
    )


def _search_reach(ledger: Any, observed: list[Observed], shaped: list[Any], fidelity: Any) -> dict[str, int]:
    """For each needed fact behind a stub: would one search with the fact's own text, among the stored
    results of its trajectory, have named the result that holds it (in the hits one answer shows, or
    first)? An upper bound of what search adds: the agent must think of searching for the value, and
    the ledger searched here holds the trajectory's later results too."""
    from ..store.search import MIN_TERM_CHARS
    from ..tools.search_answer import HITS
    from .fidelity import _loss

    reach = {"behind_stub": 0, "found": 0, "found_first": 0}
    behind = [
        (index, token)
        for index, tokens in sorted(fidelity.hidden_at.items())
        for token in tokens
        if _loss(observed[index], token) == "behind_stub"
    ]
    if not behind or not getattr(ledger.backend, "searchable", False):
        return reach
    ledger.index_queued(budget_s=float("inf"))
    for index, token in behind:
        reach["behind_stub"] += 1
        if len(token) < MIN_TERM_CHARS:
            continue
        # The trajectory is the session that stored its results (replay's owner key).
        hits = ledger.backend.search([token], every_term=True, owner=observed[index].traj, limit=HITS)
        ids = [hit.ref for hit in hits]
        reach["found"] += shaped[index].trm_id in ids
        reach["found_first"] += ids[:1] == [shaped[index].trm_id]
    return reach


def _all_channels(body: dict[str, Any]) -> str:
    """Every text channel of a result: its text blocks, then its structuredContent as JSON (if any)."""
    from .clients import text_of

    text = text_of(body)
    structured = body.get("structuredContent")
    return text if structured is None else text + "\n" + orjson.dumps(structured).decode()


def _raw_body(record: Record) -> dict[str, Any]:
    body: dict[str, Any] = {"content": [{"type": "text", "text": record.output}]}
    if record.structured is not None:
        body["structuredContent"] = record.structured
    return body


def _reducer_blame(shaper: Any, records: list[Record], shaped: list[Any]) -> Callable[[int, str], str]:
    """Which reducer removed a fact from a reduced record.

    One reducer acted: that one. dedup acted: dedup (it replaces the whole output, the rest see a
    pointer). Otherwise the pipeline's prefixes are re-run on the raw output (fresh session
    memory; only for records that lost a fact) and the first acting reducer after which the fact
    is gone is named; if none is found alone, the acting reducers together ("a+b").
    """
    from ..reducers.base import ReduceContext
    from ..reducers.pipeline import Pipeline
    from ..session import SessionMemory

    prefix_texts: dict[int, list[tuple[str, str]]] = {}

    def prefixes(index: int) -> list[tuple[str, str]]:
        if index not in prefix_texts:
            record = records[index]
            ctx = ReduceContext(
                tool=record.tool,
                arguments=call_arguments(record.call),
                session=SessionMemory(),
                chars_per_token=shaper.settings.policy.chars_per_token,
            )
            reducers = list(getattr(shaper.pipeline, "reducers", []))
            acted = _acted(shaped[index])
            texts = []
            for k, reducer in enumerate(reducers, 1):
                if reducer.name in acted:
                    texts.append((reducer.name, Pipeline(reducers[:k]).run(record.output, ctx).text))
            prefix_texts[index] = texts
        return prefix_texts[index]

    def blame(index: int, token: str) -> str:
        acted = _acted(shaped[index])
        if len(acted) == 1:
            return acted[0]
        if not acted:
            return "unknown"
        if "dedup" in acted:
            return "dedup"
        for name, text in prefixes(index):
            if token not in text:
                return name
        return "+".join(acted)

    return blame


def _acted(shaped: Any) -> list[str]:
    return [e.reducer for e in shaped.reducer_events if e.acted]


def _client_alone(records: list[Record], viewer: ClientModel, cpt: float) -> dict[str, Any]:
    """The same client receiving every raw output directly (no proxy): tokens and needed facts."""
    observed = []
    chars_out = 0
    fates: Counter[str] = Counter()
    for record in records:
        body = _raw_body(record)
        view: ClientView = viewer.view(body, tool=record.tool, declared_max_chars=None)
        chars_out += len(view.text)
        fates[view.fate] += 1
        shown = viewer.channel(body)
        observed.append(
            Observed(
                line=record.line,
                traj=record.traj,
                tool=record.tool,
                call=record.call,
                raw=_all_channels(body),
                sent=shown,
                seen=view.text,
                verdict="keep",
                fate=view.fate,
                raw_shown=shown,
            )
        )
    chars_in = sum(len(r.output) for r in records)
    fidelity = measure(observed).as_dict()
    fidelity.pop("examples", None)
    fidelity.pop("by_tool", None)
    return {
        "client": viewer.name,
        "chars_out": chars_out,
        "tokens_out": round(chars_out / cpt),
        "reduction_pct": _pct(chars_in, chars_out),
        "fates": dict(sorted(fates.items())),
        "fidelity": fidelity,
    }


def _client_limits(viewer: ClientModel, declared: int | None, observed: list[Observed], cpt: float) -> dict[str, Any]:
    """The proxy's declared `anthropic/maxResultSizeChars` beside the client's limits and the largest result it got."""
    inline_limit = getattr(viewer, "inline_limit", None)
    max_tokens = getattr(viewer, "max_output_tokens", None)
    largest = max((len(o.sent) for o in observed), default=0)
    return {
        "declared_max_result_chars": declared,
        "client_inline_chars": inline_limit(declared) if inline_limit else None,
        "client_max_output_tokens": max_tokens,
        "client_max_output_chars_at_estimate": int(max_tokens * cpt) if max_tokens else None,
        "largest_sent_chars": largest,
        "filed": sum(o.fate == "file" for o in observed),
        "rejected": sum(o.fate == "rejected" for o in observed),
    }


def _check_writable(path: str | os.PathLike[str]) -> None:
    try:
        with open(path, "wb"):
            pass
    except OSError as err:
        raise ReplayError(f"{path}: cannot write the dump: {err.strerror or err}") from None


def _write_dump(
    path: str | os.PathLike[str],
    records: list[Record],
    shaped: list[Any],
    observed: list[Observed],
    fidelity: FidelityReport | None,
) -> None:
    """One JSON object a line, input order: what the model was shown for each record."""
    hidden = fidelity.hidden_at if fidelity is not None else {}
    try:
        with open(path, "wb") as out:
            for index, (record, report, seen) in enumerate(zip(records, shaped, observed, strict=True)):
                row: dict[str, Any] = {
                    "line": record.line,
                    "traj": record.traj,
                    "step": record.step,
                    "tool": record.tool,
                    "verdict": report.verdict,
                    "reason": report.reason,
                    "seen": seen.seen,
                    "fate": seen.fate,
                }
                if index in hidden:
                    row["hidden_facts"] = hidden[index]
                out.write(orjson.dumps(row) + b"\n")
    except OSError as err:
        raise ReplayError(f"{path}: cannot write the dump: {err.strerror or err}") from None


def _tally(report: ReplayReport, record: Record, shaped: DecisionEvent, chars_seen: int) -> None:
    report.records += 1
    report.chars_in += shaped.chars_in
    report.chars_out += chars_seen
    if len(record.output) >= BIG_OUTPUT_CHARS:
        report.big_records += 1
        report.big_chars_in += shaped.chars_in
        report.big_chars_out += chars_seen
    report.verdicts[shaped.verdict] += 1
    report.decisions[f"{shaped.verdict}:{shaped.reason}"] += 1
    for event in shaped.reducer_events:
        tally = report.reducers.setdefault(event.reducer, ReducerTally())
        if event.acted:
            tally.acted += 1
            tally.chars_removed += event.chars_before - event.chars_after
        else:
            tally.declined[event.reason] += 1


def _dollars(
    records: list[Record],
    saved: list[float],
    offloaded: list[bool],
    settings: Any,
    models: tuple[str, ...],
    *,
    hops: int = 0,
) -> dict[str, dict[str, float]]:
    """Dollars saved net of recalls: `recall_usd` charges one hop per needed fact the model could not
    see (measured); `recall_usd_prior` is what the `recall_probability` prior alone would charge."""
    from ..policy.economics import Rates
    from ..policy.pricing import resolve_price

    p = settings.policy
    remaining = _remaining_turns(records, p.horizon)
    out: dict[str, dict[str, float]] = {}
    for model in dict.fromkeys(models):
        price = resolve_price(model, p.pricing)
        if price is None:
            out[model] = {"error": 1.0}
            continue
        rates = Rates.of(price, prompt_caching=p.prompt_caching, cache_ttl=p.cache_ttl)
        carry = [rates.carry_per_token(turns) for turns in remaining]
        recall_hop = rates.recall_hop(p.recall_input_tokens, p.recall_output_tokens)
        gross = sum(s * c for s, c in zip(saved, carry, strict=True))
        prior = sum(p.recall_probability * recall_hop for o in offloaded if o)
        recall = hops * recall_hop
        baseline = sum(len(r.output) / p.chars_per_token * c for r, c in zip(records, carry, strict=True))
        out[model] = {
            "baseline_usd": round(baseline, 4),
            "saved_usd": round(gross - recall, 4),
            "saved_pct": round(100 * (gross - recall) / baseline, 2) if baseline else 0.0,
            "recall_usd": round(recall, 4),
            "recall_hops": hops,
            "recall_usd_prior": round(prior, 4),
            "saved_usd_prior": round(gross - prior, 4),
        }
    return out


class _ledger_at:
    """The given ledger path, or a throwaway one removed afterwards."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = path
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Path:
        if self.path is not None:
            return Path(self.path)
        self._tmp = tempfile.TemporaryDirectory(prefix="offload-mcp-replay-")
        return Path(self._tmp.name) / "replay-ledger.db"

    def __exit__(self, *exc: Any) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
