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
on an output is worth carry(1, H), H being the calls that followed it in its
trajectory (`last step - step`; records without `traj`/`step` count the
policy's `horizon`). Offloaded outputs are charged the expected recall
(`recall_probability` x a recall hop).
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

from .reducers.base import MARKER_RE

if TYPE_CHECKING:
    from .record import DecisionEvent
    from .store.ledger import Ledger

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
        records.append(
            Record(number, tool, call, output, str(traj) if traj is not None else f"line{number}", step, bool(obj.get("is_error")))
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
    return [last[r.traj] - r.step if r.step is not None and r.traj in last else horizon for r in records]


def replay(
    records: list[Record],
    settings: Any,
    *,
    ledger_path: str | os.PathLike[str] | None = None,
    source: str = "",
    progress: Callable[[int], None] | None = None,
    models: tuple[str, ...] = (),
) -> ReplayReport:
    """Shape every record with the server's shaper; verify restoration; tally."""
    from .shaping import CallInfo, ResultShaper
    from .store import Ledger

    cpt = settings.policy.chars_per_token
    report = ReplayReport(file=source, chars_per_token=cpt, model=settings.policy.model)
    with _ledger_at(ledger_path) as path:
        ledger = Ledger.open(settings.ledger, path)
        report.ledger = str(ledger_path) if ledger_path else None
        try:
            shaper = ResultShaper(settings, ledger)
            saved_tokens: list[float] = []
            offloaded: list[bool] = []
            started = time.perf_counter()
            for index, record in enumerate(records):
                call = CallInfo(
                    server="replay", tool=record.tool, downstream_tool=record.tool,
                    arguments=call_arguments(record.call), session_id=record.traj,
                )
                result = types.CallToolResult(content=[types.TextContent(text=record.output)], is_error=record.is_error)
                out, shaped = shaper.shape_with_report(call, result)
                _tally(report, record, shaped)
                problem = _verify(record, out, shaped, ledger)
                if problem:
                    report.unrecoverable.append({"line": record.line, "tool": record.tool, "verdict": shaped.verdict, "problem": problem})
                saved_tokens.append((shaped.chars_in - shaped.chars_out) / cpt)
                offloaded.append(shaped.verdict == "offload")
                if progress is not None:
                    progress(index + 1)
            report.seconds = time.perf_counter() - started
        finally:
            ledger.close()
    report.dollars = _dollars(records, saved_tokens, offloaded, settings, models or (settings.policy.model,))
    return report


def _tally(report: ReplayReport, record: Record, shaped: DecisionEvent) -> None:
    report.records += 1
    report.chars_in += shaped.chars_in
    report.chars_out += shaped.chars_out
    if len(record.output) >= BIG_OUTPUT_CHARS:
        report.big_records += 1
        report.big_chars_in += shaped.chars_in
        report.big_chars_out += shaped.chars_out
    report.verdicts[shaped.verdict] += 1
    report.decisions[f"{shaped.verdict}:{shaped.reason}"] += 1
    for event in shaped.reducer_events:
        tally = report.reducers.setdefault(event.reducer, ReducerTally())
        if event.acted:
            tally.acted += 1
            tally.chars_removed += event.chars_before - event.chars_after
        else:
            tally.declined[event.reason] += 1


def _dollars(records: list[Record], saved: list[float], offloaded: list[bool], settings: Any, models: tuple[str, ...]) -> dict[str, dict[str, float]]:
    from .policy.economics import Rates
    from .policy.pricing import resolve_price

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
        gross = sum(s * c for s, c in zip(saved, carry))
        recall = sum(p.recall_probability * recall_hop for o in offloaded if o)
        baseline = sum(len(r.output) / p.chars_per_token * c for r, c in zip(records, carry))
        out[model] = {
            "baseline_usd": round(baseline, 4),
            "saved_usd": round(gross - recall, 4),
            "saved_pct": round(100 * (gross - recall) / baseline, 2) if baseline else 0.0,
            "expected_recall_usd": round(recall, 4),
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


