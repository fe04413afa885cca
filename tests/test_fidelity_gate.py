"""The fidelity gate: no change may show the model fewer of the values agents use next than today.

Each corpus is replayed in-process with the default configuration as Claude Code
shows it (`replay(..., client="claude-code")`, what `offload-mcp replay --client
claude-code` runs), and the gate asserts:

- every record restores byte for byte (0 unrecoverable);
- the needed facts are the corpus's own (their count depends only on the corpus);
- needed facts visible >= the floor;
- no reducer hides more needed facts than today, and no reducer that hides none
  today starts hiding some.

The floors are what main achieved when the gate was written (issue 38), named
here so they can be tightened after the mechanism branches merge: raise a floor
to the new figure, never lower one. The shared corpora live in ../shared/corpus
beside the repository; absent there, those cases skip. Deterministic, not timed.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from offload_mcp.analysis.fidelity import FidelityReport
from offload_mcp.analysis.replay import Record, ReplayReport, read_records, replay
from offload_mcp.config import OffloadSettings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpus"
sys.path.insert(0, str(ROOT / "bench"))

import shape_zoo  # noqa: E402


@dataclass(frozen=True)
class Floor:
    needed: int
    """Needed facts in the corpus (a property of the corpus, not of the proxy)."""
    visible: int
    """Needed facts the model must see at least."""
    hidden_by_reducer: dict[str, int] = field(default_factory=dict)
    """At most this many hidden per reducer; a reducer not named here may hide none."""


DEV_FLOOR = Floor(needed=3976, visible=3976)
MCP_DEV_FLOOR = Floor(needed=345, visible=345)
MCP_MORE_FLOOR = Floor(needed=8634, visible=8632)
MCP_SERVERS_FLOOR = Floor(needed=194, visible=194)
"""With the warehouse sessions of issue 38 (real SQL servers, wrapped results): every needed fact visible, none cut by
a reducer. The last three came with driver values in Python-repr rows, `key: value` blocks read as records, and both
identifier columns of a parts table (text/data_view.py, text/key_value_blocks.py, index/render.py). The browser
sessions (@playwright/mcp over a local shop) add 16, all visible once a snapshot's table rows are listed by their
cells and refs (index/aria_rows.py); Claude Code alone: 164 of 194."""
ZOO_SEED = 38
ZOO_SESSIONS = 200
ZOO_MAX_CHARS = 60_000
"""A small zoo: every class drawn, results up to 60K chars (past Claude Code's inline limit), ~1 s to replay."""
ZOO_FLOOR = Floor(needed=282, visible=225)
"""No reducer hides a needed fact: rows of text inside a JSON string literal are kept whole (text/rows.py). The zoo
with driver values, `key: value` blocks and two identifier columns (issue 38): main showed 175, linecap hiding 14.
225 once a git log wrapped in JSON (a string literal, a text field, prose or a fence around it) is indexed as the log
it holds, its reverts listed whole and its ISO dates as written (policy/stub.py, index/text_records.py): 200 before."""


def _shared(name: str) -> list[Record]:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"the shared corpus {path} is not on this machine")
    return read_records(path)


def _zoo() -> list[Record]:
    records, _variants = shape_zoo.records_of(list(shape_zoo.generate(ZOO_SEED, ZOO_SESSIONS, max_chars=ZOO_MAX_CHARS)))
    return records


CASES: dict[str, tuple[Any, Floor]] = {
    "dev": (lambda: _shared("dev.jsonl.gz"), DEV_FLOOR),
    "mcp_dev": (lambda: _shared("mcp_dev.jsonl.gz"), MCP_DEV_FLOOR),
    "mcp_more": (lambda: _shared("mcp_more.jsonl.gz"), MCP_MORE_FLOOR),
    "mcp_servers": (
        lambda: read_records(ROOT / "bench" / "data" / "corpus" / "mcp_servers.jsonl.gz"),
        MCP_SERVERS_FLOOR,
    ),
    "shape_zoo": (_zoo, ZOO_FLOOR),
}


def gate_problems(report: ReplayReport, floor: Floor) -> list[str]:
    """Where a replay falls short of a floor; empty when it passes the gate."""
    assert report.fidelity is not None
    fidelity = report.fidelity
    problems = [f"unrecoverable: {u}" for u in report.unrecoverable[:5]]
    if fidelity.needed != floor.needed:
        problems.append(f"needed facts {fidelity.needed}, expected {floor.needed}: the corpus changed, set its floor")
    if fidelity.visible < floor.visible:
        examples = [e for e in fidelity.examples if e["loss"] != "behind_client_file"][:5]
        problems.append(f"visible {fidelity.visible} < floor {floor.visible}: {dict(fidelity.losses)} {examples}")
    for reducer, hidden in sorted(fidelity.by_reducer.items()):
        allowed = floor.hidden_by_reducer.get(reducer, 0)
        if hidden > allowed:
            problems.append(f"{reducer} hides {hidden} needed facts (allowed {allowed})")
    return problems


@pytest.mark.parametrize("corpus", list(CASES))
def test_the_model_sees_at_least_the_needed_facts_it_saw_when_the_gate_was_set(corpus: str) -> None:
    load, floor = CASES[corpus]
    assert gate_problems(replay(load(), OffloadSettings(), client="claude-code"), floor) == []


def test_the_gate_names_each_way_a_replay_falls_short() -> None:
    floor = Floor(needed=10, visible=9, hidden_by_reducer={"linecap": 2})
    worse = ReplayReport(file="c.jsonl", unrecoverable=[{"line": 4, "problem": "changed without a marker"}])
    worse.fidelity = FidelityReport(needed=10, visible=8, by_reducer=Counter({"linecap": 3, "tabulate": 1}))
    problems = gate_problems(worse, floor)
    assert [p.split(":")[0].split(" ")[0] for p in problems] == ["unrecoverable", "visible", "linecap", "tabulate"]
    assert "tabulate hides 1 needed facts (allowed 0)" in problems
    other_corpus = ReplayReport(file="c.jsonl")
    other_corpus.fidelity = FidelityReport(needed=11, visible=11)
    assert gate_problems(other_corpus, floor)[0].startswith("needed facts 11, expected 10")
    as_good = ReplayReport(file="c.jsonl")
    as_good.fidelity = FidelityReport(needed=10, visible=10, by_reducer=Counter({"linecap": 2}))
    assert gate_problems(as_good, floor) == []
