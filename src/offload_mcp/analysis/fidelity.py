"""Needed facts: did the model still see the values the agent went on to use?

A *needed fact* is a token an agent passed in a later call's arguments, in the
same trajectory, that also occurs in an earlier raw output: an id, a number, a
path, a name with digits or punctuation, at least `MIN_FACT_CHARS` long and not
a plain word (a token made only of letters is a word the model could have
written itself). Each (trajectory, token) counts once, at its first use that
has an earlier source.

For each needed fact the question is whether the model could read it before
that call: it is `visible` when it occurs in what the model was shown for some
earlier result of the trajectory (`seen`: the proxy's text, or a client's
view of it). Otherwise the latest earlier result whose raw output holds it is
the one that lost it, and the loss is named by what happened to that result:

- `unrecoverable`: that result failed replay's byte-for-byte restore check;
- `behind_client_file` / `rejected_by_client` / `hidden_by_client_view`: the
  proxy sent the fact but the client filed the result to disk (the model sees
  a preview), rejected it, or showed another channel (Claude Code shows
  `structuredContent` instead of the text blocks);
- `behind_stub`: the proxy offloaded the result; the fact is one recall away;
- `hidden_by_reducer`: a reducer cut it; the fact is one expand away. Which
  reducer is asked of `blame` (replay re-runs the pipeline's prefixes).

How it works: per trajectory, raw outputs and seen texts are concatenated
once (NUL-separated, with offsets), so "in an earlier output" is one
`str.find`/`str.rfind` bounded by the call's offset: linear in the corpus per
token, no copying, and deterministic (input order, sorted breakdowns).
Inert when no call names a value from an earlier output (e.g. records without
`call`): every count is then 0.

`echoed` counts the needed facts the agent had itself passed in a call at or
before the first output that held them (a repository name, a path it asked
for, an entity it created): they qualify by the definition, but the agent did
not learn them from an output, so `learned` / `learned_visible_pct` give the
figure over the rest (on the shared dev corpus 1,058 of 3,976 needed facts
are echoes).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

MIN_FACT_CHARS = 6
MAX_FACT_CHARS = 512
"""Longer tokens are blobs (base64, minified code), not values an agent re-types; they are skipped."""

LOSSES = (
    "hidden_by_reducer",
    "behind_stub",
    "behind_client_file",
    "rejected_by_client",
    "hidden_by_client_view",
    "unrecoverable",
    "other",
)
"""Every way a needed fact can be missing from the model's context, in report order."""
FETCHABLE = LOSSES[:5]
"""Losses one more call brings back (expand, recall, Read, or the call again with a narrower argument)."""

_TOKEN = re.compile(r"[A-Za-z0-9_./:@#%+~\-]+")
_LEAD_JUNK = "-.:"  # option dashes and sentence punctuation; a leading `/` is part of a path
_TRAIL_JUNK = ".:/-#@+~%"
_SEP = "\x00"
_MAX_EXAMPLES = 25


def fact_tokens(call: str) -> list[str]:
    """Candidate facts in a call's arguments, in order of first appearance, without duplicates.

    A JSON-object call contributes its values (strings tokenized, numbers as written), never its
    keys; any other call (a shell command) is tokenized whole.
    """
    pieces: list[str] = []
    if call.startswith("{"):
        try:
            value = orjson.loads(call)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            pieces.extend(_values(value))
        else:
            pieces.append(call)
    else:
        pieces.append(call)
    found: dict[str, None] = {}
    for piece in pieces:
        for raw in _TOKEN.findall(piece):
            token = raw.lstrip(_LEAD_JUNK).rstrip(_TRAIL_JUNK)
            if _is_fact(token):
                found.setdefault(token, None)
    return list(found)


def _values(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _values(item)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield str(value)
    elif isinstance(value, str):
        yield value


def _is_fact(token: str) -> bool:
    if not MIN_FACT_CHARS <= len(token) <= MAX_FACT_CHARS:
        return False
    if token.isalpha():
        return False  # a plain word
    return any(c.isalnum() for c in token)


@dataclass(frozen=True)
class Observed:
    """One replayed result, as fidelity needs it."""

    line: int
    traj: str
    tool: str
    call: str
    raw: str
    """What the downstream returned, every channel (text blocks, then structuredContent as JSON)."""
    sent: str
    """The channel the client reads (`ClientModel.channel`) of what the proxy sent, before the client's size rules."""
    seen: str
    """What the model's context holds (the client's view of `sent`)."""
    verdict: str
    fate: str = "inline"
    restorable: bool = True
    raw_shown: str | None = None
    """The channel the client reads of the raw result (None: the same as `raw`)."""


@dataclass
class ToolTally:
    needed: int = 0
    visible: int = 0
    losses: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"needed": self.needed, "visible": self.visible, **{k: self.losses.get(k, 0) for k in LOSSES}}


@dataclass
class FidelityReport:
    needed: int = 0
    visible: int = 0
    losses: Counter[str] = field(default_factory=Counter)
    by_reducer: Counter[str] = field(default_factory=Counter)
    by_tool: dict[str, ToolTally] = field(default_factory=dict)
    echoed: int = 0
    echoed_visible: int = 0
    hidden_at: dict[int, list[str]] = field(default_factory=dict)
    """Record index -> the needed facts it lost (for `--dump`)."""
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hops(self) -> int:
        """Needed facts the model must fetch back (recall, expand, Read or re-call): one hop each."""
        return sum(self.losses.get(k, 0) for k in FETCHABLE)

    def as_dict(self) -> dict[str, Any]:
        return {
            "needed": self.needed,
            "visible": self.visible,
            "visible_pct": _pct(self.visible, self.needed, empty=100.0),
            "echoed": self.echoed,
            "learned": self.needed - self.echoed,
            "learned_visible_pct": _pct(self.visible - self.echoed_visible, self.needed - self.echoed, empty=100.0),
            **{k: self.losses.get(k, 0) for k in LOSSES},
            **{f"{k}_pct": _pct(self.losses.get(k, 0), self.needed) for k in LOSSES},
            "recall_hops": self.hops,
            "by_reducer": dict(sorted(self.by_reducer.items(), key=lambda kv: (-kv[1], kv[0]))),
            "by_tool": {
                tool: t.as_dict()
                for tool, t in sorted(
                    self.by_tool.items(), key=lambda kv: (-(kv[1].needed - kv[1].visible), -kv[1].needed, kv[0])
                )
            },
            "examples": self.examples,
        }


def _pct(part: int, whole: int, empty: float = 0.0) -> float:
    """A percentage; `empty` when there is nothing to count (no needed fact: all visible, none lost)."""
    return round(100.0 * part / whole, 2) if whole else empty


class _Concat:
    """Texts joined once with offsets, so "in any of the first k" is one bounded find."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.starts: list[int] = []
        pos = 0
        for text in texts:
            self.starts.append(pos)
            pos += len(text) + 1
        self.text = _SEP.join(texts)

    def end_of_prefix(self, k: int) -> int:
        """Offset just past the first k texts."""
        return self.starts[k] - 1 if k < len(self.starts) else len(self.text)

    def in_first(self, token: str, k: int) -> bool:
        return k > 0 and self.text.find(token, 0, max(self.end_of_prefix(k), 0)) != -1

    def latest_in_first(self, token: str, k: int) -> int | None:
        """Index of the latest of the first k texts holding the token."""
        if k <= 0:
            return None
        at = self.text.rfind(token, 0, max(self.end_of_prefix(k), 0))
        return None if at == -1 else bisect.bisect_right(self.starts, at) - 1


def measure(observed: Sequence[Observed], blame: Callable[[int, str], str] | None = None) -> FidelityReport:
    """Count needed facts and where each missing one went; `blame(index, token)` names the reducer."""
    report = FidelityReport()
    trajectories: dict[str, list[int]] = {}
    for index, item in enumerate(observed):
        trajectories.setdefault(item.traj, []).append(index)
    for indices in trajectories.values():
        if len(indices) < 2:
            continue
        raws = _Concat([observed[i].raw for i in indices])
        seens = _Concat([observed[i].seen for i in indices])
        calls = _Concat([observed[i].call for i in indices])
        counted: set[str] = set()
        for position, index in enumerate(indices[1:], 1):
            for token in fact_tokens(observed[index].call):
                if token in counted:
                    continue
                source_pos = raws.latest_in_first(token, position)
                if source_pos is None:
                    continue
                counted.add(token)
                source_index = indices[source_pos]
                visible = seens.in_first(token, position)
                _count(
                    report, observed, source_index, token, visible=visible, blame=blame, user_line=observed[index].line
                )
                first_source = raws.text.find(token)
                first_pos = bisect.bisect_right(raws.starts, first_source) - 1
                if calls.in_first(token, first_pos + 1):  # the agent named it before any output showed it
                    report.echoed += 1
                    report.echoed_visible += visible
    return report


def _count(
    report: FidelityReport,
    observed: Sequence[Observed],
    source_index: int,
    token: str,
    *,
    visible: bool,
    blame: Callable[[int, str], str] | None,
    user_line: int,
) -> None:
    source = observed[source_index]
    tally = report.by_tool.setdefault(source.tool, ToolTally())
    report.needed += 1
    tally.needed += 1
    if visible:
        report.visible += 1
        tally.visible += 1
        return
    loss = _loss(source, token)
    report.losses[loss] += 1
    tally.losses[loss] += 1
    reducer = ""
    if loss == "hidden_by_reducer":
        reducer = blame(source_index, token) if blame is not None else "reducer"
        report.by_reducer[reducer] += 1
    report.hidden_at.setdefault(source_index, []).append(token)
    if len(report.examples) < _MAX_EXAMPLES:
        example = {
            "fact": token,
            "loss": loss,
            "source_line": source.line,
            "tool": source.tool,
            "used_at_line": user_line,
        }
        if reducer:
            example["reducer"] = reducer
        report.examples.append(example)


def _loss(source: Observed, token: str) -> str:
    if not source.restorable:
        return "unrecoverable"
    if token in source.sent:
        return {"rejected": "rejected_by_client", "file": "behind_client_file"}.get(source.fate, "other")
    if source.raw_shown is not None and token not in source.raw_shown:
        return "hidden_by_client_view"  # only in a channel this client never shows, proxy or not
    if source.verdict == "offload":
        return "behind_stub"
    if source.verdict == "reduce":
        return "hidden_by_reducer"
    return "other"  # kept and restorable, yet not seen: a bug in the caller's bookkeeping


def measure_shown(items: Sequence[tuple[int, str, str, str, str, str]]) -> FidelityReport:
    """Score any system's per-result output the same way (a peer proxy, a client alone).

    `items` are (line, traj, tool, call, raw output, what the model was shown), in trajectory order.
    Losses cannot be told apart from outside such a system: every missing fact counts as `other`.
    """
    return measure(
        [
            Observed(line=line, traj=traj, tool=tool, call=call, raw=raw, sent=shown, seen=shown, verdict="peer")
            for line, traj, tool, call, raw, shown in items
        ]
    )
