"""Work on a large result runs off the event loop: the other calls of a session keep their pace.

- Recalls: a recall's answer (a query's lowercase, counts and finds; a line range's line index) was
  computed on the event loop. On a 60 MB body each `str.lower`, `str.count` or `str.find` holds the GIL
  for 37-44 ms, so a query stood every other call still for ~100 ms. Now a large body's answer is read
  in a worker thread and those passes go a piece of ~1M chars at a time (text/pieces.py).
- outputSchema checks: jsonschema reads ~4 us per JSON value, so a structuredContent of 20,000 rows
  took 0.6 s on the loop. A large one is now checked in a worker thread.

Each test runs two tasks on one session, as a model's parallel tool calls do: one does the large work,
the other echoes; both get their answers, and each prints the echoes' time beside the work's. Whether the
echoes keep their pace (their median beside the queries', their worst beside a schema check's) is a speed
comparison, measured side by side by bench/bench_loop_pace.py.
"""

from __future__ import annotations

import itertools
import re
import statistics
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from offload_mcp.text import pieces as text_pieces
from support.load import echo_beside, report
from support.proxy import proxy_session, text_of
from support.servers import ROOT, fixture_entry, python_entry, write_config

TRM = re.compile(r"trm_[0-9a-f]{16}")
STRUCTURED_SERVER = str(ROOT / "tests" / "fixtures" / "structured_server.py")
BIG = 40_000_000
QUERIES = 3

# Line breaks, a final-sigma context, a letter whose lowercase is longer, and plain letters.
ALPHABET = st.sampled_from(["\n", "Σ", "σ", "ς", "A", "a", "İ", " ", "b", "'"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ALPHABET, max_size=60).map("".join),
    st.integers(1, 12),
    st.integers(0, 70),
    st.integers(0, 70),
    st.integers(1, 4),
)
def test_pieces_answer_what_one_call_answers(text: str, piece: int, start: int, length: int, needle_len: int) -> None:
    assert text_pieces.lower(text, piece) == text.lower()
    for needle in {text[start : start + needle_len], "a\n", "Σ", "ba"} - {""}:
        assert text_pieces.count(text, needle, piece=piece) == text.count(needle)
        assert text_pieces.count(text, needle, start, start + length, piece) == text.count(
            needle, start, start + length
        )
        assert text_pieces.find(text, needle, start, piece) == text.find(needle, start)


async def test_queries_on_a_40_mb_body_leave_other_calls_their_pace(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"reducers": {"pipeline": []}})
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as s:
        stub = await s.call_tool("make_text", {"size": BIG})
        (trm_id,) = set(TRM.findall(text_of(stub)))
        first = await s.call_tool("recall_tool_result", {"mem_id": trm_id, "query": "line 1:"})
        assert not first.is_error and "1 match for" in text_of(first), text_of(first)[:300]
        lines = itertools.cycle(range(100_000, 600_000, 50_000))

        async def query() -> None:
            line = next(lines)
            found = await s.call_tool("recall_tool_result", {"mem_id": trm_id, "query": f"line {line}:"})
            assert f"line {line}:" in text_of(found) and "1 match for" in text_of(found)

        query_s, echoes = await echo_beside(s, query, QUERIES)
    echo_s = statistics.median(echoes)
    report("recall_off_loop", query_ms=round(query_s * 1000, 1), echo_ms=round(echo_s * 1000, 1), echoes=len(echoes))


async def test_a_large_structured_result_is_checked_against_its_schema_off_the_loop(tmp_path: Path) -> None:
    servers = {"fx": fixture_entry(), "rows": python_entry(STRUCTURED_SERVER)}
    config = write_config(tmp_path, servers)
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as s:

        async def big_rows() -> None:
            result = await s.call_tool("big_rows", {"count": 20_000})
            assert not result.is_error and TRM.search(text_of(result)), text_of(result)[:300]

        await big_rows()  # the validator is built once
        call_s, echoes = await echo_beside(s, big_rows, 3)
    worst = max(echoes)
    report("schema_off_loop", call_ms=round(call_s * 1000, 1), worst_echo_ms=round(worst * 1000, 1))
